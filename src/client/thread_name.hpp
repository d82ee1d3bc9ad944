// sonic — names for sonic's threads, as `top -H`, `ps -L`, perf and debuggers show them.
#pragma once

#include <pthread.h>

namespace sonic::detail {

/// Names the calling thread (at most 15 characters are kept).
inline void name_this_thread(const char* name) { pthread_setname_np(pthread_self(), name); }

}  // namespace sonic::detail
