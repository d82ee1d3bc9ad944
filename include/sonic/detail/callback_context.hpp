// sonic — whether the current thread is running a completion callback of sonic's, and which
// kind, for what must not happen there: blocking calls inside an inline callback (the thread
// would stall, or wait for itself), and a client's destruction waiting for the very thread that
// runs it.
#pragma once

#include "sonic/detail/export.hpp"

namespace sonic::detail {

/// Per-thread depth counters. Default visibility: every library and program that includes this
/// shares one counter per thread, so that a callback started by code in one library is seen by
/// code in another.
struct CallbackContext {
  /// Callbacks of any kind running on this thread (inline or on a callback thread).
  SONIC_EXPORT static int& callbacks() {
    thread_local int depth = 0;
    return depth;
  }
  /// Inline callbacks (ClientOptions::inline_callbacks) running on this thread.
  SONIC_EXPORT static int& inline_callbacks() {
    thread_local int depth = 0;
    return depth;
  }
  static bool in_callback() { return callbacks() > 0; }
  static bool in_inline_callback() { return inline_callbacks() > 0; }
};

/// Marks the current thread for the lifetime of the scope.
class ScopedCount {
 public:
  explicit ScopedCount(int& depth) : depth_(depth) { ++depth_; }
  ~ScopedCount() { --depth_; }
  ScopedCount(const ScopedCount&) = delete;
  ScopedCount& operator=(const ScopedCount&) = delete;

 private:
  int& depth_;
};

}  // namespace sonic::detail
