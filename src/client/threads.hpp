// sonic — what sonic's own threads share: their names, as `top -H`, `ps -L`, perf and debuggers
// show them, and how their owners let them go.
#pragma once

#include <pthread.h>

#include <thread>

namespace sonic::detail {

/// Names the calling thread (at most 15 characters are kept).
inline void name_this_thread(const char* name) { pthread_setname_np(pthread_self(), name); }

/// Joins `thread`, unless the caller is that thread (its owner was let go by one of the
/// thread's own tasks), which cannot join itself: then it is detached, and finishes on the
/// state it shares with its owner, never touching the owner.
inline void join_unless_self(std::thread& thread) {
  if (thread.get_id() == std::this_thread::get_id()) {
    thread.detach();
  } else {
    thread.join();
  }
}

}  // namespace sonic::detail
