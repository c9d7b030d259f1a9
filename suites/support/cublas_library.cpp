#include "suites/support/cublas_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include "harness/core/error.hpp"

namespace memstress::suites {
namespace {

template <typename Fn>
void resolve(void* handle, const std::string& name, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, symbol));  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  if (fn == nullptr) {
    throw EnvironmentError(fmt::format(
        "cuBLAS ({}) lacks {}: a cuBLAS older than the one memstress was built with", name, symbol));
  }
}

}  // namespace

void CublasLibrary::Close::operator()(void* handle) const noexcept {
  dlclose(handle);
}

CublasLibrary::CublasLibrary() {
  // The major version built against, by the name the loader searches for (the binary's run path, the system's
  // library paths), else the unversioned name a toolkit's development files provide.
  std::string why;
  for (const std::string& name :
       {fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR), std::string("libcublas.so")}) {
    handle_.reset(dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL));
    if (handle_) {
      name_ = name;
      break;
    }
    const char* error = dlerror();
    why = why.empty() && error != nullptr ? error : why;
  }
  if (!handle_) {
    throw EnvironmentError(
        fmt::format("the burn's GEMM canary needs cuBLAS (libcublas.so.{}, from the CUDA "
                    "toolkit): {}",
                    CUBLAS_VER_MAJOR, why));
  }
  resolve(handle_.get(), name_, "cublasCreate_v2", api_.create);
  resolve(handle_.get(), name_, "cublasDestroy_v2", api_.destroy);
  resolve(handle_.get(), name_, "cublasSetStream_v2", api_.set_stream);
  resolve(handle_.get(), name_, "cublasSetWorkspace_v2", api_.set_workspace);
  resolve(handle_.get(), name_, "cublasSetAtomicsMode", api_.set_atomics_mode);
  resolve(handle_.get(), name_, "cublasSetMathMode", api_.set_math_mode);
  resolve(handle_.get(), name_, "cublasGemmEx", api_.gemm_ex);
  resolve(handle_.get(), name_, "cublasDgemm_v2", api_.dgemm);
  resolve(handle_.get(), name_, "cublasGetVersion_v2", api_.get_version);
  resolve(handle_.get(), name_, "cublasGetStatusName", api_.status_name);
  resolve(handle_.get(), name_, "cublasGetStatusString", api_.status_string);
}

std::string CublasLibrary::version() const {
  int version = 0;
  static_cast<void>(api_.get_version(nullptr, &version));
  return fmt::format("cuBLAS {}", version);
}

void CublasLibrary::check(cublasStatus_t status, const char* call, const char* file, int line) const {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw ApiError("cuBLAS", static_cast<int>(status), api_.status_name(status), call, file, line,
                   api_.status_string(status));
  }
}

}  // namespace memstress::suites
