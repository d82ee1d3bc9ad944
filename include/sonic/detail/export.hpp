// sonic — symbol visibility. sonic's libraries are built with hidden visibility: only what is
// marked SONIC_EXPORT is part of their binary interface.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
/// Marks a declaration as part of a library's binary interface. In the public headers it also
/// marks the few inline functions whose static state must be one object in the whole process
/// (the transport registry), whichever library or program instantiates them.
#define SONIC_EXPORT __attribute__((visibility("default")))
#else
#define SONIC_EXPORT
#endif
