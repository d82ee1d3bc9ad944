// Numbers given on a command line, read whole, so that "2abc" is not 2, "" is not 0 and
// "1e999" is not infinity; each tool says in its own words which option wanted what.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

namespace sonic::tools {

/// A decimal whole number, all of `text`; nothing when it is not one or overflows.
inline std::optional<long long> whole_number(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno == ERANGE) return std::nullopt;
  return value;
}

/// A finite real number, all of `text`; nothing for anything else (NaN and infinities too).
inline std::optional<double> finite_number(const std::string& text) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !std::isfinite(value)) return std::nullopt;
  return value;
}

}  // namespace sonic::tools
