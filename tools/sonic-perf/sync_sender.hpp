// sonic-perf --sync: blocking Client::infer calls, one thread per request in flight, as Triton's
// perf_analyzer measures by default (its sync mode) and as a plain program calls a model. Each
// request is handed to a sender thread, which blocks in infer() and completes it there; the
// next request of that thread's chain comes back to it at once.
#pragma once

#include <sonic/sonic.hpp>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace sonic::perf {

class SyncSender {
 public:
  SyncSender(Client& client, int threads) : client_(client) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  }

  ~SyncSender() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    queued_.notify_all();
    for (auto& thread : threads_) thread.join();
  }

  /// Queues `request` for a sender thread, which calls infer() and then `done` with its
  /// outcome. Thread-safe.
  void send(InferRequest request, Callback<InferResult> done) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.emplace_back(std::move(request), std::move(done));
    }
    queued_.notify_one();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, with nothing left
      auto [request, done] = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      try {
        done(client_.infer(std::move(request)));
      } catch (const Error& error) {
        done(error);
      }
      lock.lock();
    }
  }

  Client& client_;
  std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<std::pair<InferRequest, Callback<InferResult>>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace sonic::perf
