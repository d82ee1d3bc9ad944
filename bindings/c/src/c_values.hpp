// sonic C API — reading the numbers a C caller passes.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "sonic/error.hpp"

namespace sonic::c_api {

/// The number a C caller passed as an enum. A C program may pass any int there; in C++, loading
/// an enum object whose value lies outside its enumerators' range is undefined, so the bits are
/// read as the integer they are.
template <typename Enum>
long long number_of(const Enum& value) {
  std::underlying_type_t<Enum> raw;
  static_assert(sizeof raw == sizeof value);
  std::memcpy(&raw, &value, sizeof raw);
  return static_cast<long long>(raw);
}

/// A duration a C caller gave in seconds, for `what`: 0 to a billion seconds. A negative
/// number, NaN or more is refused (INVALID_ARGUMENT naming `what`): converting a double past
/// int64's range is undefined.
inline std::chrono::microseconds duration_of(double seconds, const std::string& what) {
  if (!(seconds >= 0 && seconds <= 1e9)) {
    throw Error(StatusCode::InvalidArgument,
                what + " must be 0 to 1e9 seconds, not " + std::to_string(seconds));
  }
  return std::chrono::microseconds(static_cast<std::int64_t>(seconds * 1e6));
}

}  // namespace sonic::c_api
