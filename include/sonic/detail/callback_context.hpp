// sonic — what the current thread is doing on sonic's behalf, for inline callbacks
// (ClientOptions::inline_callbacks): whether it is inside a call made by the user (where a
// completion must not run) or inside an inline callback (where nothing may block or destroy the
// client, because the thread is one the client would have to wait for).
#pragma once

namespace sonic::detail {

/// Per-thread depth counters; inline so that every translation unit shares them.
struct CallbackContext {
  static int& user_calls() {
    thread_local int depth = 0;
    return depth;
  }
  static int& inline_callbacks() {
    thread_local int depth = 0;
    return depth;
  }
  /// The thread is inside Client::infer_async or RequestHandle::cancel.
  static bool in_user_call() { return user_calls() > 0; }
  /// The thread is running an inline callback (a network, timer or executor thread).
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
