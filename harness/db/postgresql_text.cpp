// What the PostgreSQL backend does to text, in every build (postgresql.hpp): parameters numbered, and
// passwords kept out of messages.

#include <fmt/format.h>

#include <regex>

#include "harness/db/postgresql.hpp"

namespace memstress::db {

std::string numbered_parameters(std::string_view sql, int& count) {
  std::string out;
  out.reserve(sql.size() + 16);
  char quote = '\0';
  count = 0;
  for (const char c : sql) {
    if (quote != '\0') {
      quote = c == quote ? '\0' : quote;  // a doubled quote closes and reopens: still the same text
      out += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      out += c;
    } else if (c == '?') {
      out += fmt::format("${}", ++count);
    } else {
      out += c;
    }
  }
  return out;
}

std::string masked_url(const std::string& url) {
  static const std::regex kUserPassword(R"(^(postgres(?:ql)?://[^:/@]*:)[^@]*@)");
  static const std::regex kPasswordParameter(R"(([?&]password=)[^&]*)");
  return std::regex_replace(std::regex_replace(url, kUserPassword, "$1***@"), kPasswordParameter, "$1***");
}

}  // namespace memstress::db
