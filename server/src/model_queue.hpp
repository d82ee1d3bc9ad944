// A connection's share of the models' threads: at most a few of its requests queued or running
// there at once, the rest waiting in the connection, in order. The executor is one FIFO for
// every client, so without this a client that sends a thousand requests at once would queue
// them ahead of every other client's next one. A request whose caller went away while it waits
// here never reaches the executor: one cancelled (a reset stream) leaves at once, one past its
// deadline when its turn comes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <deque>
#include <memory>
#include <utility>

#include "sonic/caller.hpp"
#include "sonic/detail/unique_function.hpp"

namespace sonic::server {

/// Runs on the connection's thread; not thread-safe.
class ModelQueue {
 public:
  /// One request's way to the executor.
  struct Job {
    std::shared_ptr<Caller> caller;  ///< who waits for it; null: nobody said
    /// Hands the request to the executor.
    detail::UniqueFunction<void()> start;
    /// Answers it unrun, with why nobody waits any more (Caller::gone(): CANCELLED or
    /// DEADLINE_EXCEEDED). Called only once its caller is gone.
    detail::UniqueFunction<void()> drop;
  };

  /// `model_threads`: the executor's threads. A connection may have two jobs out per thread:
  /// one running and one queued behind it, so that a thread that finishes one of its requests
  /// does not wait for the network thread to hand it the next.
  explicit ModelQueue(std::size_t model_threads)
      : limit_(2 * std::max<std::size_t>(1, model_threads)) {}

  /// Starts `job` now while fewer than the limit are out, else once one ends.
  void submit(Job job) {
    if (out_ < limit_) {
      ++out_;
      return job.start();
    }
    waiting_.push_back(std::move(job));
  }

  /// One of this connection's jobs ended: the next waiting one whose caller still waits starts;
  /// those before it whose caller went away are dropped.
  void finished() {
    while (!waiting_.empty()) {
      Job next = std::move(waiting_.front());
      waiting_.pop_front();
      if (next.caller && next.caller->gone(std::chrono::steady_clock::now())) {
        next.drop();
        continue;
      }
      return next.start();
    }
    --out_;
  }

  /// Drops the waiting jobs whose caller was cancelled (a reset stream, a closed connection).
  void withdraw_cancelled() {
    std::deque<Job> kept;
    std::deque<Job> dropped;
    for (auto& job : waiting_) {
      (job.caller && job.caller->cancelled() ? dropped : kept).push_back(std::move(job));
    }
    waiting_.swap(kept);
    for (auto& job : dropped) job.drop();
  }

  /// Jobs out and waiting.
  std::size_t size() const noexcept { return out_ + waiting_.size(); }

 private:
  const std::size_t limit_;
  std::size_t out_ = 0;
  std::deque<Job> waiting_;
};

}  // namespace sonic::server
