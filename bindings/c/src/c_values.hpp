// sonic C API — reading the numbers a C caller passes.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>

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

/// A duration a C caller gave in seconds: 0 to a billion seconds. Nothing for a negative
/// number, NaN or more (converting a double past int64's range is undefined).
inline std::optional<std::chrono::microseconds> duration_of(double seconds) {
  if (!(seconds >= 0 && seconds <= 1e9)) return std::nullopt;
  return std::chrono::microseconds(static_cast<std::int64_t>(seconds * 1e6));
}

}  // namespace sonic::c_api
