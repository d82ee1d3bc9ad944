// The network threads every client of a process shares: a few threads, each running an
// asio::io_context, over which all connections are spread (each stays on one).
#pragma once

#include <asio.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "sonic/detail/export.hpp"

namespace sonic::net {

/// Thread-safe. Threads start as connections need them, up to a limit; they stop once the last
/// holder of the pool lets go and their work is done. Destroying the pool from one of its own
/// threads is safe (that thread finishes on its own).
class SONIC_EXPORT NetworkThreads {
 public:
  /// The process's pool. `max_threads` raises its limit (never lowers it): the pool grows to
  /// the largest any caller asked for (0 asks for the default, 2).
  static std::shared_ptr<NetworkThreads> shared(std::size_t max_threads = 0);

  explicit NetworkThreads(std::size_t max_threads);
  ~NetworkThreads();
  NetworkThreads(const NetworkThreads&) = delete;
  NetworkThreads& operator=(const NetworkThreads&) = delete;

  /// The context for a new connection: a new thread while below the limit, else the next one
  /// in turn. The context lives as long as the returned pointer.
  std::shared_ptr<asio::io_context> next();
  /// Threads started so far.
  std::size_t size() const;
  /// Whether the calling thread is one of this pool's.
  bool on_own_thread() const;

 private:
  void raise_limit(std::size_t max_threads);

  struct Worker {
    std::shared_ptr<asio::io_context> io;
    asio::executor_work_guard<asio::io_context::executor_type> guard;
    std::thread thread;
  };
  mutable std::mutex mutex_;
  std::size_t max_threads_;
  std::size_t turn_ = 0;
  std::vector<Worker> workers_;
};

}  // namespace sonic::net
