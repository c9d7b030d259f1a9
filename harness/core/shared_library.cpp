#include "harness/core/shared_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>

#include <utility>

#include "harness/core/error.hpp"

namespace memstress {
namespace {

// The file name the dynamic linker knows the object at `address` by, or "".
std::string object_of(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  return info.dli_fname;
}

}  // namespace

SharedLibrary::SharedLibrary(const std::filesystem::path& path, std::string_view what) : path_(path) {
  // A bare file name would make dlopen search the library path; a plugin is named by its file.
  const std::filesystem::path file = path.has_parent_path() ? path : std::filesystem::path(".") / path;
  // RTLD_NODELETE: the library stays mapped after dlclose (as PyTorch never closes a plugin). A library that
  // links the CUDA runtime statically registers exit handlers in itself; unmapped, they would crash the
  // process at exit (seen under ThreadSanitizer).
  handle_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle_ == nullptr) {
    const char* reason = dlerror();
    throw InputError(fmt::format("{}: cannot load {}: {}", what, path.string(),
                                 reason != nullptr ? reason : "unknown dlopen error"));
  }
}

SharedLibrary::~SharedLibrary() {
  if (handle_ != nullptr) {
    dlclose(handle_);
  }
}

SharedLibrary::SharedLibrary(SharedLibrary&& other) noexcept
    : path_(std::move(other.path_)), handle_(std::exchange(other.handle_, nullptr)) {}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) {
      dlclose(handle_);
    }
    path_ = std::move(other.path_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void* SharedLibrary::own_symbol(const std::string& symbol) const noexcept {
  void* address = dlsym(handle_, symbol.c_str());
  if (address == nullptr) {
    return nullptr;
  }
  const link_map* self = nullptr;
  if (dlinfo(handle_, RTLD_DI_LINKMAP, &self) != 0 || self == nullptr) {
    return nullptr;
  }
  return object_of(address) == self->l_name ? address : nullptr;
}

std::string SharedLibrary::provider_of(const std::string& symbol) const {
  return object_of(dlsym(handle_, symbol.c_str()));
}

}  // namespace memstress
