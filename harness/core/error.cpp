#include "harness/core/error.hpp"

#include <fmt/format.h>

#include <utility>

namespace memstress {

ApiError::ApiError(std::string api, int code, std::string code_name, std::string call, const char* file,
                   int line, const std::string& description)
    : Error(ExitCode::check_failed, fmt::format("{} error {} ({}): {}\n  in {} at {}:{}", api, code_name,
                                                code, description, call, file, line)),
      api_(std::move(api)),
      code_(code),
      code_name_(std::move(code_name)),
      call_(std::move(call)) {}

}  // namespace memstress
