// Host facts: hostname, OS, kernel, CPU model and count, memory, and the recorded environment variables.

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <thread>

#include "harness/core/text_file.hpp"
#include "harness/env/collect_parts.hpp"
#include "harness/env/parse_detail.hpp"

namespace memstress::env_detail {
namespace {

std::string host_name() {
  std::array<char, HOST_NAME_MAX + 1> buffer{};
  if (gethostname(buffer.data(), buffer.size() - 1) != 0) {
    return {};
  }
  return std::string(buffer.data());
}

std::string kernel_release() {
  utsname names{};
  if (uname(&names) != 0) {
    return {};
  }
  return std::string(names.release);
}

int usable_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    if (const int count = CPU_COUNT(&set); count > 0) {
      return count;
    }
  }
  return static_cast<int>(std::thread::hardware_concurrency());  // 0 when unknown
}

std::uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) {
    return 0;
  }
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

}  // namespace

void collect_host(Environment& env) {
  env.hostname = host_name();
  env.kernel = kernel_release();
  // os-release(5): /etc/os-release, else /usr/lib/os-release.
  env.os = parse_os_release_pretty_name(
      read_text_file("/etc/os-release").value_or(read_text_file("/usr/lib/os-release").value_or("")));
  env.cpu_model = parse_cpuinfo_model(read_text_file("/proc/cpuinfo").value_or(""));
  env.cpu_count = usable_cpu_count();
  env.host_memory_bytes = physical_memory_bytes();
  env.variables = recorded_variables(environ);  // the C library's process environment
}

}  // namespace memstress::env_detail
