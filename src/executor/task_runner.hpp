// sonic — where an executor's tasks run: a pool of its own (ThreadPool), or a framework's
// scheduler (CpuExecutorOptions::scheduler) that it hands them to, so that a job's fallback
// never doubles the framework's threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>

#include "client/thread_pool.hpp"
#include "sonic/detail/unique_function.hpp"
#include "sonic/executor.hpp"

namespace sonic::detail {

/// Runs posted tasks, in the order posted, on its own pool or on a scheduler. With a scheduler
/// the tasks stay in a queue of its own, and the scheduler receives for each a copyable function
/// that runs the oldest task still queued: the scheduler's functions then hold no task and no
/// reference into the executor, and destruction runs on the destroying thread what the scheduler
/// has not started, waits for the tasks running elsewhere, and leaves nothing for later. As with
/// the pool, nothing posted is ever dropped, and the runner may be destroyed from one of its own
/// tasks.
class TaskRunner {
 public:
  using Task = UniqueFunction<void()>;

  /// `threads` (at least 1) threads of its own when `scheduler` is empty; else none, and
  /// `threads` is only what size() says.
  TaskRunner(std::size_t threads, TaskScheduler scheduler);
  ~TaskRunner();
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  /// Queues a task. Thread-safe; tasks posted during destruction still run (with a scheduler,
  /// on the destroying thread).
  void post(Task task);

  /// How many tasks run at once: the pool's threads, or the count given with a scheduler.
  std::size_t size() const { return pool_ ? pool_->size() : threads_; }

 private:
  // The queue the scheduler's functions take from, shared with them.
  struct Queue {
    std::mutex mutex;
    std::condition_variable idle;  // a task ended, or one was posted, during destruction
    std::deque<Task> tasks;
    std::size_t running = 0;  // tasks under way, on any thread
    bool stopping = false;
    /// Runs the oldest queued task, if any is left. What the scheduler's functions do.
    void run_one();
  };

  std::size_t threads_;
  // With a scheduler; shared with the calls to it under way, which may end after the runner.
  std::shared_ptr<const TaskScheduler> scheduler_;
  std::shared_ptr<Queue> queue_;
  std::unique_ptr<ThreadPool> pool_;  // without
};

}  // namespace sonic::detail
