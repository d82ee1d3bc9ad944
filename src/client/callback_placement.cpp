#include "client/callback_placement.hpp"

#include <algorithm>
#include <string>

namespace sonic::detail {

namespace {

// What the network threads tolerate of a callback (their watcher's tick), and how long a moved
// client's callbacks must stay under it to go back: first, and at most.
constexpr std::chrono::nanoseconds kQuickCallback = kCallbackTick;
constexpr std::chrono::nanoseconds kFirstTrial = std::chrono::seconds(1);
constexpr std::chrono::nanoseconds kLongestTrial = std::chrono::seconds(64);

std::string what_of(const std::exception_ptr& thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "not a std::exception";
  }
}

}  // namespace

// On the callback threads, a client whose callbacks moved there is timed: a callback as long as
// the network threads tolerate starts the trial again; once they have all been quick for the
// trial, later callbacks run on the network thread again.
void CallbackPlacement::run_callback(Callback<InferResult>& done, Result<InferResult>&& result,
                                     bool timed) {
  if (!timed) return call_back(done, std::move(result));
  const auto started = Clock::now();
  call_back(done, std::move(result));
  const auto finished = Clock::now();
  const auto now = finished.time_since_epoch().count();
  if (finished - started >= kQuickCallback) {
    quiet_since_ns_.store(now, std::memory_order_relaxed);
  } else if (now - quiet_since_ns_.load(std::memory_order_relaxed) >=
             trial_ns_.load(std::memory_order_relaxed)) {
    callbacks_moved_.store(false, std::memory_order_relaxed);
  }
}

void CallbackPlacement::call_back(Callback<InferResult>& done, Result<InferResult>&& result) {
  ScopedCount callback(CallbackContext::callbacks());
  try {
    done(std::move(result));
  } catch (...) {
    callback_threw(std::current_exception());
  }
}

void CallbackPlacement::callback_threw(const std::exception_ptr& thrown) {
  callback_exceptions_.fetch_add(1, std::memory_order_relaxed);
  if (!options_.log) return;
  options_.log(LogLevel::Error, "a completion callback threw (" + what_of(thrown) +
                                    "): sonic caught it; callbacks must not throw (see "
                                    "sonic::forward_exceptions)");
}

// A callback held its network thread too long: this client's callbacks go to the callback
// threads, until they have all been quick for a while (a thread preempted under load looks slow
// too, and must not cost a client the network thread for good). Each move doubles the while, so
// that a client whose callbacks are slow now and then settles on the pool.
void CallbackPlacement::move_callbacks() {
  const auto now = Clock::now().time_since_epoch().count();
  const auto trial = trial_ns_.load(std::memory_order_relaxed);
  trial_ns_.store(trial == 0 ? kFirstTrial.count() : std::min(2 * trial, kLongestTrial.count()),
                  std::memory_order_relaxed);
  quiet_since_ns_.store(now, std::memory_order_relaxed);
  callbacks_moved_.store(true, std::memory_order_relaxed);
}

ThreadPool& CallbackPlacement::pool() {
  std::call_once(pool_once_,
                 [this] { pool_ = ThreadPool::shared_callbacks(options_.callback_threads); });
  return *pool_;
}

void CallbackPlacement::delivered(std::size_t count) {
  for (; count > 0; --count) {
    // Not the last: no lock (the hot path). The last one, or one that may be, decrements
    // under the lock.
    std::size_t left = undelivered_.load(std::memory_order_relaxed);
    bool done = false;
    while (left > 1 && !done) {
      done = undelivered_.compare_exchange_weak(left, left - 1, std::memory_order_acq_rel);
    }
    if (done) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    if (undelivered_.fetch_sub(1, std::memory_order_acq_rel) == 1) all_delivered_.notify_all();
  }
}

void CallbackPlacement::wait_all_delivered() {
  std::unique_lock<std::mutex> lock(mutex_);
  all_delivered_.wait(lock, [this] { return undelivered_.load() == 0; });
}

}  // namespace sonic::detail
