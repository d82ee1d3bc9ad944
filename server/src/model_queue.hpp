// A connection's share of the models' threads: at most a few of its requests queued or running
// there at once, the rest waiting in the connection, in order. The executor is one FIFO for
// every client, so without this a client that sends a thousand requests at once would queue
// them ahead of every other client's next one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <deque>

#include "sonic/detail/unique_function.hpp"

namespace sonic::server {

/// Runs on the connection's thread; not thread-safe.
class ModelQueue {
 public:
  using Job = detail::UniqueFunction<void()>;

  /// `model_threads`: the executor's threads. A connection may have two jobs out per thread:
  /// one running and one queued behind it, so that a thread that finishes one of its requests
  /// does not wait for the network thread to hand it the next.
  explicit ModelQueue(std::size_t model_threads)
      : limit_(2 * std::max<std::size_t>(1, model_threads)) {}

  /// Starts `job` (which hands a request to the executor) now while fewer than the limit are
  /// out, else once one ends.
  void submit(Job job) {
    if (out_ < limit_) {
      ++out_;
      return job();
    }
    waiting_.push_back(std::move(job));
  }

  /// One of this connection's jobs ended: the next waiting one starts.
  void finished() {
    if (waiting_.empty()) {
      --out_;
      return;
    }
    Job next = std::move(waiting_.front());
    waiting_.pop_front();
    next();
  }

  /// Jobs out and waiting.
  std::size_t size() const noexcept { return out_ + waiting_.size(); }

 private:
  const std::size_t limit_;
  std::size_t out_ = 0;
  std::deque<Job> waiting_;
};

}  // namespace sonic::server
