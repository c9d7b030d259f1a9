#pragma once

#include <stdexcept>
#include <string>

#include "harness/core/exit_code.hpp"

namespace memstress {

// Base of every exception memstress throws on purpose. Each carries the exit code the command line
// maps it to, so a failure anywhere ends the process with the code users script against.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  [[nodiscard]] ExitCode exit_code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

// Bad flags, configs, traces or result files: the message names the input. Exit code 2.
class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(ExitCode::bad_input, what) {}
};

// Bad input that a program memstress ran (the snapshot converter) has already refused in memstress's own
// words
// ("memstress: error: FILE: ..."): main() prints nothing more, so that the refusal stays one line. Exit
// code 2.
class ReportedInputError : public InputError {
 public:
  using InputError::InputError;
};

// What the run needs is not there (no GPU, no driver, no MPI launcher). Exit code 3.
class EnvironmentError : public Error {
 public:
  explicit EnvironmentError(const std::string& what) : Error(ExitCode::env_missing, what) {}
};

// A failed API call (CUDA runtime or driver, NCCL, MPI, NVML): the call text, where it was made and the
// library's own description. Exit code 1 unless caught and turned into a result row.
class ApiError : public Error {
 public:
  ApiError(std::string api, int code, std::string code_name, std::string call, const char* file, int line,
           const std::string& description);

  [[nodiscard]] const std::string& api() const noexcept { return api_; }
  [[nodiscard]] int code() const noexcept { return code_; }
  [[nodiscard]] const std::string& code_name() const noexcept { return code_name_; }
  [[nodiscard]] const std::string& call() const noexcept { return call_; }

 private:
  std::string api_;
  int code_;
  std::string code_name_;
  std::string call_;
};

// A device allocation failed for lack of memory. Allocators and the OOM searches catch this one.
class OutOfMemoryError : public Error {
 public:
  explicit OutOfMemoryError(const std::string& what) : Error(ExitCode::check_failed, what) {}
};

}  // namespace memstress
