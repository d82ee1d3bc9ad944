// sonic — where an executor's tasks run: its own pool, or a framework's scheduler.
#include "executor/task_runner.hpp"

#include <algorithm>
#include <utility>

namespace sonic::detail {

namespace {
// The queue whose task the calling thread is running, if any: its destruction from inside one
// of its own tasks must not wait for that task to end.
thread_local const void* running_here = nullptr;

// Runs `task` as one of `queue`'s on this thread, marked so.
template <typename Task>
void run_marked(const void* queue, Task& task) {
  const void* outer = running_here;
  running_here = queue;
  task();
  running_here = outer;
}
}  // namespace

TaskRunner::TaskRunner(std::size_t threads, TaskScheduler scheduler)
    : threads_(std::max<std::size_t>(threads, 1)) {
  if (scheduler) {
    scheduler_ = std::make_shared<const TaskScheduler>(std::move(scheduler));
    queue_ = std::make_shared<Queue>();
  } else {
    pool_ = std::make_unique<ThreadPool>(threads_);
  }
}

void TaskRunner::Queue::run_one() {
  Task task;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (tasks.empty()) return;  // run already, by an earlier function or the destructor
    task = std::move(tasks.front());
    tasks.pop_front();
    ++running;
  }
  run_marked(this, task);
  task = nullptr;  // what it holds goes before the task counts as ended
  std::lock_guard<std::mutex> lock(mutex);
  --running;
  if (stopping) idle.notify_all();
}

void TaskRunner::post(Task task) {
  if (pool_) return pool_->post(std::move(task));
  // Once the task is queued, another thread may run it, and it may let go of the executor's
  // last owner: from then on this works on its own references, never on the runner's members.
  auto queue = queue_;
  auto scheduler = scheduler_;
  {
    std::lock_guard<std::mutex> lock(queue->mutex);
    queue->tasks.push_back(std::move(task));
    if (queue->stopping) {
      // A task running elsewhere posted it during destruction: the destructor runs it.
      queue->idle.notify_all();
      return;
    }
  }
  // Outside the lock: a scheduler may run the function at once on another thread.
  (*scheduler)([queue = std::move(queue)] { queue->run_one(); });
}

TaskRunner::~TaskRunner() {
  if (pool_) return;  // the pool runs what is queued and joins (or detaches the calling thread)
  Queue& queue = *queue_;
  // Destroyed from inside one of its tasks (its last owner let go there): that one is under way
  // here and ends only after this returns.
  const std::size_t here = running_here == &queue ? 1 : 0;
  std::unique_lock<std::mutex> lock(queue.mutex);
  queue.stopping = true;
  for (;;) {
    if (!queue.tasks.empty()) {
      Task task = std::move(queue.tasks.front());
      queue.tasks.pop_front();
      ++queue.running;
      lock.unlock();
      run_marked(&queue, task);
      task = nullptr;
      lock.lock();
      --queue.running;
      continue;
    }
    if (queue.running <= here) return;
    queue.idle.wait(lock);
  }
}

}  // namespace sonic::detail
