// collect_environment() in the build without CUDA (Note [The build without CUDA], cmake/HostOnly.cmake):
// the host and its variables; no GPU, driver, CUDA, NCCL or MPI is read, and the record says why.

#include "harness/env/collect_parts.hpp"
#include "harness/env/environment.hpp"

namespace memstress {

Environment collect_environment() {
  Environment env;
  env_detail::collect_host(env);
  env.driver_version_source = "not read: this memstress was built without CUDA";
  env.nvml_status = "not loaded: this memstress was built without CUDA";
  return env;
}

}  // namespace memstress
