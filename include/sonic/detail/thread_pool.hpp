// sonic — a small fixed-size thread pool for callbacks and CPU models.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "sonic/detail/unique_function.hpp"

namespace sonic::detail {

/// Runs posted tasks on a fixed set of threads, in FIFO order. Destruction runs every task
/// already posted, then joins: nothing posted is ever dropped.
class ThreadPool {
 public:
  using Task = UniqueFunction<void()>;

  /// `threads` == 0 means one per hardware thread.
  explicit ThreadPool(std::size_t threads) {
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    workers_.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { run(); });
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& worker : workers_) {
      if (worker.get_id() == std::this_thread::get_id()) {
        worker.detach();  // destroyed from one of its own tasks: cannot join itself
      } else {
        worker.join();
      }
    }
  }

  /// Queues a task. Thread-safe; tasks posted during destruction still run.
  void post(Task task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
  }

  std::size_t size() const noexcept { return workers_.size(); }

 private:
  void run() {
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopping and drained
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace sonic::detail
