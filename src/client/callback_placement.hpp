// Where a client's callbacks run (ClientOptions::callbacks): on the network thread that decided
// the outcome once its handler is done, inline, or on the callback threads; how a client whose
// callbacks hold the network threads too long moves them to the callback threads and, once they
// are quick again, back; the count of outcomes not yet delivered, which close() waits for; and
// which of sonic's callbacks the current thread is inside, for what must not happen there:
// blocking calls inside an inline callback (the thread would stall, or wait for itself), a
// client's destruction waiting for the very thread that runs it, and a caller's callback running
// inside the caller's own call.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>

#include "client/callback_host.hpp"
#include "client/thread_pool.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/options.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

/// Per-thread depth counters, one of each per thread in the process: sonic::client holds them,
/// with default visibility, so that a plugin built with hidden visibility shares them too.
struct CallbackContext {
  /// Callbacks of any kind running on this thread (inline or on a callback thread).
  SONIC_EXPORT static int& callbacks() {
    thread_local int depth = 0;
    return depth;
  }
  /// Inline callbacks (CallbackThread::Inline) running on this thread.
  SONIC_EXPORT static int& inline_callbacks() {
    thread_local int depth = 0;
    return depth;
  }
  /// A caller's calls into client-side batching or chunking (infer_async, cancel) running on
  /// this thread, inside which none of the caller's callbacks may run.
  SONIC_EXPORT static int& callers_calls() {
    thread_local int depth = 0;
    return depth;
  }
  static bool in_callback() { return callbacks() > 0; }
  static bool in_inline_callback() { return inline_callbacks() > 0; }
  static bool in_callers_call() { return callers_calls() > 0; }
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

/// One per client core. Thread-safe.
class SONIC_EXPORT CallbackPlacement {
 public:
  /// `options` outlives this object (a member of the same core).
  explicit CallbackPlacement(const ClientOptions& options) : options_(options) {}

  CallbackPlacement(const CallbackPlacement&) = delete;
  CallbackPlacement& operator=(const CallbackPlacement&) = delete;

  /// Runs `run(timed)` where ClientOptions::callbacks says, never on this thread when
  /// `inside_callers_call` (the caller's own infer or cancel call is under way on it). `run`
  /// runs callbacks through run_callback() (`timed`: the client's callbacks moved to the
  /// callback threads for being slow, and are timed there) and returns how many it ran; they
  /// are then counted delivered. An `overdue` outcome (its deadline passed) that goes to the
  /// callback threads goes ahead of every outcome waiting there that is not. Never blocks.
  template <typename Run>
  void place(Run run, bool inside_callers_call, bool overdue = false) {
    switch (options_.callbacks) {
      case CallbackThread::Network:
        if (auto* host = CallbackHost::current();
            host && !callbacks_moved_.load(std::memory_order_relaxed)) {
          return host->run_later([this, run = std::move(run)]() mutable {
            const std::size_t ran = run(false);
            // It held the network thread so long that the connections moved on: this
            // client's callbacks are not the quick kind, give them threads of their own.
            if (CallbackHost::current()->handed_off()) {
              slow_callbacks_.fetch_add(1, std::memory_order_relaxed);
              move_callbacks();
            }
            delivered(ran);
          });
        }
        break;
      case CallbackThread::Inline:
        if (inside_callers_call) break;
        {
          ScopedCount inline_callback(CallbackContext::inline_callbacks());
          const std::size_t ran = run(false);
          delivered(ran);
        }
        return;
      case CallbackThread::Pool: break;
    }
    auto task = [this, run = std::move(run)]() mutable {
      delivered(run(callbacks_moved_.load(std::memory_order_relaxed)));
    };
    if (overdue) return pool().post_urgent(std::move(task));
    pool().post(std::move(task));
  }

  /// Runs a user callback, the thread marked as inside one while it does; `timed` as place()
  /// passes it. What the callback throws stops here: escaping into a network thread would end
  /// the process (or that thread, and with it every request it serves), so it is counted and
  /// logged instead (ClientStats).
  void run_callback(Callback<InferResult>& done, Result<InferResult>&& result, bool timed);

  /// A callback of this client (a request's, a stream's) threw: counted and logged.
  void callback_threw(const std::exception_ptr& thrown);

  /// Callbacks that held a network thread so long that its connections moved (ClientStats).
  std::uint64_t slow_callbacks() const { return slow_callbacks_.load(std::memory_order_relaxed); }
  /// Callbacks that threw (ClientStats).
  std::uint64_t callback_exceptions() const {
    return callback_exceptions_.load(std::memory_order_relaxed);
  }

  /// The process's callback threads, taken on first need (a client that only uses futures and
  /// the blocking API starts none).
  ThreadPool& pool();
  std::shared_ptr<ThreadPool> shared_pool() {
    pool();
    return pool_;
  }

  /// One more outcome to deliver: wait_all_delivered() waits for it.
  void expect() { undelivered_.fetch_add(1, std::memory_order_relaxed); }
  /// Outcomes delivered. The one that may be the last takes the lock wait_all_delivered()
  /// checks under, so that the waiter cannot return (and this object go away) between the
  /// decrement and the notification; the caller touches nothing of the client after it.
  void delivered(std::size_t count = 1);
  /// Blocks until every expected outcome was delivered.
  void wait_all_delivered();

 private:
  void move_callbacks();
  void call_back(Callback<InferResult>& done, Result<InferResult>&& result);

  const ClientOptions& options_;
  std::atomic<std::uint64_t> slow_callbacks_{0};
  std::atomic<std::uint64_t> callback_exceptions_{0};
  std::mutex mutex_;  // for the last delivery and its waiter
  std::condition_variable all_delivered_;
  std::atomic<std::size_t> undelivered_{0};
  // A callback held a network thread past its budget: callbacks go to the callback threads,
  // since quiet_since_ns_ (steady clock) all quick, until that lasts trial_ns_ (move_callbacks).
  std::atomic<bool> callbacks_moved_{false};
  std::atomic<std::int64_t> quiet_since_ns_{0};
  std::atomic<std::int64_t> trial_ns_{0};
  std::once_flag pool_once_;
  std::shared_ptr<ThreadPool> pool_;
};

}  // namespace sonic::detail
