// Test support: a framework's scheduler in miniature (CpuExecutorOptions::scheduler), one
// thread of its own that runs, in order, the functions it is given.
#pragma once

#include <sonic/executor.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace sonic::test {

/// A framework thread that runs what its scheduler() is given, in order. With `paused`, it
/// keeps the functions until run_kept(). Destruction runs what it holds, unless paused.
class FrameworkThread {
 public:
  explicit FrameworkThread(bool paused = false) : paused_(paused) {
    thread_ = std::thread([this] { loop(); });
  }
  ~FrameworkThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  FrameworkThread(const FrameworkThread&) = delete;
  FrameworkThread& operator=(const FrameworkThread&) = delete;

  TaskScheduler scheduler() {
    return [this](std::function<void()> task) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++received_;
        tasks_.push_back(std::move(task));
      }
      wake_.notify_all();
    };
  }
  // Lets the thread run what it was given, and what it is given later.
  void run_kept() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      paused_ = false;
    }
    wake_.notify_all();
  }
  // Waits until everything given so far has run.
  void drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return tasks_.empty() && !busy_; });
  }
  int received() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_;
  }
  std::thread::id id() const { return thread_.get_id(); }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || (!paused_ && !tasks_.empty()); });
      if (paused_ || tasks_.empty()) return;  // stopping
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      busy_ = true;
      lock.unlock();
      task();
      lock.lock();
      busy_ = false;
      idle_.notify_all();
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> tasks_;
  int received_ = 0;
  bool paused_, busy_ = false, stopping_ = false;
  std::thread thread_;
};

}  // namespace sonic::test
