// sonic — library version: the one place it is written (CMakeLists.txt reads it from here).
#pragma once

#define SONIC_VERSION_MAJOR 0
#define SONIC_VERSION_MINOR 2
#define SONIC_VERSION_PATCH 0

#define SONIC_DETAIL_STRINGIFY(x) #x
#define SONIC_DETAIL_VERSION_STRING(major, minor, patch) \
  SONIC_DETAIL_STRINGIFY(major) "." SONIC_DETAIL_STRINGIFY(minor) "." SONIC_DETAIL_STRINGIFY(patch)

namespace sonic {
/// The version of these headers, "major.minor.patch".
inline constexpr const char* kVersion =
    SONIC_DETAIL_VERSION_STRING(SONIC_VERSION_MAJOR, SONIC_VERSION_MINOR, SONIC_VERSION_PATCH);
}  // namespace sonic
