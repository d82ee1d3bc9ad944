// sonic Python bindings — the completion thread.
#include "completions.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "convert.hpp"

namespace sonic::python {

namespace {

class CompletionThread {
 public:
  CompletionThread() : thread_([this] { run(); }) { thread_.detach(); }

  void post(std::function<void()> job) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
      wake = sleeping_;
      sleeping_ = false;
    }
    if (wake) posted_.notify_one();
  }

 private:
  // Lives as long as the process (a detached thread and a leaked object): completions may
  // arrive until its last moment, and never run after the interpreter is gone.
  [[noreturn]] void run() {
    std::vector<std::function<void()>> batch;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        while (jobs_.empty()) {
          sleeping_ = true;
          posted_.wait(lock);
        }
        batch.swap(jobs_);
      }
      if (Py_IsInitialized()) {
        Gil gil;
        for (auto& job : batch) job();
        batch.clear();  // what the jobs held goes with the GIL held
      }
      batch.clear();  // (without an interpreter, what they hold lets go without Python)
    }
  }

  std::mutex mutex_;
  std::condition_variable posted_;
  std::vector<std::function<void()>> jobs_;
  bool sleeping_ = false;
  std::thread thread_;
};

}  // namespace

void run_with_gil(std::function<void()> job) {
  static auto* thread = new CompletionThread;
  thread->post(std::move(job));
}

}  // namespace sonic::python
