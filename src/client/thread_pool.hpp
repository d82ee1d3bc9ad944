// sonic — a small fixed-size thread pool for callbacks and CPU models.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "client/threads.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/detail/unique_function.hpp"

namespace sonic::detail {

/// Runs posted tasks on a fixed set of threads, in FIFO order, urgent ones (post_urgent) before
/// the others. Destruction runs every task already posted, then joins: nothing posted is ever
/// dropped. The pool may be destroyed from
/// one of its own tasks (the last owner of a client can be a callback): that worker is
/// detached and finishes the queue on state it shares, never touching the freed pool.
class ThreadPool {
 public:
  using Task = UniqueFunction<void()>;

  /// `threads` threads, at least 1. Its owner picks the count: the executor's default is the
  /// job's cores (sonic::usable_cores()), never the node's hardware threads.
  explicit ThreadPool(std::size_t threads) : state_(std::make_shared<State>()) {
    grow_to(std::max<std::size_t>(threads, 1));
  }

  /// The process's pool for completion callbacks, shared by every client: started on first
  /// use with `threads` threads, grown when a client asks for more, stopped once the last
  /// holder lets go. Default visibility: one pool for the whole process.
  SONIC_EXPORT static std::shared_ptr<ThreadPool> shared_callbacks(std::size_t threads) {
    static std::mutex mutex;
    static std::weak_ptr<ThreadPool> current;
    std::lock_guard<std::mutex> lock(mutex);
    auto pool = current.lock();
    if (!pool) {
      current = pool = std::make_shared<ThreadPool>(std::max<std::size_t>(threads, 1));
    } else {
      pool->grow_to(threads);
    }
    return pool;
  }

  /// Adds threads until there are `threads`.
  void grow_to(std::size_t threads) {
    std::lock_guard<std::mutex> lock(workers_mutex_);
    while (workers_.size() < threads) workers_.emplace_back([state = state_] { run(*state); });
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->stopping = true;
    }
    state_->wake.notify_all();
    for (auto& worker : workers_) join_unless_self(worker);  // maybe from one of its tasks
  }

  /// Queues a task. Thread-safe; tasks posted during destruction still run.
  void post(Task task) {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->tasks.push_back(std::move(task));
    }
    state_->wake.notify_one();
  }

  /// Queues a task ahead of every task post() queued (after the urgent ones queued before it):
  /// an outcome due by its deadline must not wait behind a backlog of others. Thread-safe.
  void post_urgent(Task task) {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->urgent.push_back(std::move(task));
    }
    state_->wake.notify_one();
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> lock(workers_mutex_);
    return workers_.size();
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<Task> urgent;  // run before `tasks`
    std::deque<Task> tasks;
    bool stopping = false;
  };

  static void run(State& state) {
    name_this_thread("sonic-pool");
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(state.mutex);
        state.wake.wait(lock, [&state] {
          return state.stopping || !state.urgent.empty() || !state.tasks.empty();
        });
        auto& queue = state.urgent.empty() ? state.tasks : state.urgent;
        if (queue.empty()) return;  // stopping and drained
        task = std::move(queue.front());
        queue.pop_front();
      }
      task();
    }
  }

  std::shared_ptr<State> state_;
  mutable std::mutex workers_mutex_;
  std::vector<std::thread> workers_;
};

}  // namespace sonic::detail
