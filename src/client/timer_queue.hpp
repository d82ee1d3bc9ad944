// sonic — one thread that runs tasks at given times (retry backoff, health probes, name
// lookups), shared by every client of the process.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "client/threads.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/detail/unique_function.hpp"

namespace sonic::detail {

/// Runs each scheduled task at (or soon after) its time, in time order, on its own thread.
/// Tasks must be short: they hand work elsewhere. Each task has an owner (a client), whose
/// tasks run_now() runs at once when it goes away. Thread-safe. Destruction runs every task
/// still queued at once (nothing scheduled is lost), then joins.
class TimerQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using Task = UniqueFunction<void()>;
  using Owner = const void*;

  /// The process's queue, started on first use and stopped once the last holder lets go.
  /// Default visibility: one queue for the whole process, however many libraries use sonic.
  SONIC_EXPORT static std::shared_ptr<TimerQueue> shared() {
    static std::mutex mutex;
    static std::weak_ptr<TimerQueue> current;
    std::lock_guard<std::mutex> lock(mutex);
    auto queue = current.lock();
    if (!queue) current = queue = std::make_shared<TimerQueue>();
    return queue;
  }

  TimerQueue() : state_(std::make_shared<State>()) {
    thread_ = std::thread([state = state_] {
      name_this_thread("sonic-timer");
      run(*state);
    });
  }
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  ~TimerQueue() {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->stopping = true;
    }
    state_->wake.notify_one();
    // Released from one of its own tasks, the thread finishes the queue on the state it
    // shares.
    join_unless_self(thread_);
  }

  /// Runs `task` at `when`.
  void schedule(Owner owner, Clock::time_point when, Task task) {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->tasks.emplace(when, Entry{owner, std::move(task)});
    }
    state_->wake.notify_one();
  }

  /// Runs every task of `owner` now, on the calling thread, once none of its tasks is running
  /// on the timer thread. The owner makes sure it schedules nothing more afterwards.
  void run_now(Owner owner) {
    std::vector<Task> mine;
    {
      State& s = *state_;
      std::unique_lock<std::mutex> lock(s.mutex);
      for (auto it = s.tasks.begin(); it != s.tasks.end();) {
        if (it->second.owner != owner) {
          ++it;
          continue;
        }
        mine.push_back(std::move(it->second.task));
        it = s.tasks.erase(it);
      }
      if (thread_.get_id() != std::this_thread::get_id()) {
        s.idle.wait(lock, [&] { return s.running != owner; });
      }
    }
    for (auto& task : mine) task();
  }

 private:
  struct Entry {
    Owner owner;
    Task task;
  };
  struct State {
    std::mutex mutex;
    std::condition_variable wake;
    std::condition_variable idle;  // a task finished
    std::multimap<Clock::time_point, Entry> tasks;
    Owner running = nullptr;
    bool stopping = false;
  };

  static void run(State& s) {
    std::unique_lock<std::mutex> lock(s.mutex);
    for (;;) {
      if (s.tasks.empty()) {
        if (s.stopping) return;
        s.wake.wait(lock);
        continue;
      }
      auto first = s.tasks.begin();
      if (!s.stopping && first->first > Clock::now()) {
        // A copy: run_now() may erase the entry while this thread waits.
        const Clock::time_point when = first->first;
        s.wake.wait_until(lock, when);
        continue;
      }
      Entry entry = std::move(first->second);
      s.tasks.erase(first);
      s.running = entry.owner;
      lock.unlock();
      entry.task();
      entry.task = nullptr;  // what it holds goes before its owner is declared done
      lock.lock();
      s.running = nullptr;
      s.idle.notify_all();
    }
  }

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace sonic::detail
