#pragma once

// cuBLAS for the burn's canary, loaded at run time (dlopen) and never linked, as NVML is: linked, its
// libraries (half a gigabyte) were mapped and relocated by every memstress command, 130 MB of resident memory
// before any work. cublas_v2.h supplies the types; each entry point is resolved by its versioned symbol.

#include <cublas_v2.h>

#include <memory>
#include <string>

namespace memstress::suites {

struct CublasApi {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&::cublasSetAtomicsMode) set_atomics_mode = nullptr;
  decltype(&::cublasSetMathMode) set_math_mode = nullptr;
  // cublasGemmEx is overloaded in C++ (a compute type or, deprecated, a data type): the C entry point's type.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*,
                            void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&::cublasDgemm_v2) dgemm = nullptr;
  decltype(&::cublasGetVersion_v2) get_version = nullptr;
  decltype(&::cublasGetStatusName) status_name = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
};

class CublasLibrary {
 public:
  // Loads libcublas.so.<major> (the major version built against), else libcublas.so. Throws EnvironmentError
  // saying what is missing.
  CublasLibrary();
  [[nodiscard]] const CublasApi& api() const noexcept { return api_; }
  // "cuBLAS 130100"
  [[nodiscard]] std::string version() const;
  // Throws ApiError with the call's text, file and line unless `status` is success.
  void check(cublasStatus_t status, const char* call, const char* file, int line) const;

 private:
  struct Close {
    void operator()(void* handle) const noexcept;
  };
  std::unique_ptr<void, Close> handle_;  // dlopen's, found by its name as the loader finds libraries
  std::string name_;
  CublasApi api_;
};

}  // namespace memstress::suites

#define MEMSTRESS_CUBLAS_TRY(library, call) (library).check((call), #call, __FILE__, __LINE__)
