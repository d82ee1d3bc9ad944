// sonic — one thread that runs tasks at given times (retry backoff, health probes).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "sonic/detail/unique_function.hpp"

namespace sonic::detail {

/// Runs each scheduled task at (or soon after) its time, in time order, on its own thread.
/// Tasks must be short: they hand work elsewhere. Destruction runs every task still queued at
/// once (so that nothing scheduled is lost), then joins.
class TimerQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using Task = UniqueFunction<void()>;

  TimerQueue() : thread_([this] { run(); }) {}
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  ~TimerQueue() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  /// Runs `task` at `when`. Thread-safe; tasks scheduled during destruction run at once.
  void schedule(Clock::time_point when, Task task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.emplace(when, std::move(task));
    }
    wake_.notify_one();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (tasks_.empty()) {
        if (stopping_) return;
        wake_.wait(lock);
        continue;
      }
      auto first = tasks_.begin();
      if (!stopping_ && first->first > Clock::now()) {
        wake_.wait_until(lock, first->first);
        continue;
      }
      Task task = std::move(first->second);
      tasks_.erase(first);
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::multimap<Clock::time_point, Task> tasks_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace sonic::detail
