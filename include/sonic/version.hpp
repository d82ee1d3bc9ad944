// sonic — library version.
#pragma once

#define SONIC_VERSION_MAJOR 0
#define SONIC_VERSION_MINOR 1
#define SONIC_VERSION_PATCH 0

namespace sonic {
/// The version of these headers, "major.minor.patch".
inline constexpr const char* kVersion = "0.1.0";
}  // namespace sonic
