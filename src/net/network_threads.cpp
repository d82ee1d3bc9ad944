#include "network_threads.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>

namespace sonic::net {

namespace {
constexpr std::size_t kDefaultThreads = 2;  // a grid job's usual share of cores

// Runs the context until its work is done. A handler that throws (std::bad_alloc when memory
// cannot be had, say) costs what it was doing, never the thread and every connection on it.
void run(asio::io_context& io) {
  for (;;) {
    try {
      io.run();
      return;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "sonic: a network handler failed and was dropped: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "sonic: a network handler failed and was dropped\n");
    }
  }
}
}  // namespace

std::shared_ptr<NetworkThreads> NetworkThreads::shared(std::size_t max_threads) {
  static std::mutex mutex;
  static std::weak_ptr<NetworkThreads> current;
  std::lock_guard<std::mutex> lock(mutex);
  auto pool = current.lock();
  if (!pool) {
    pool = std::make_shared<NetworkThreads>(max_threads);
    current = pool;
  } else {
    pool->raise_limit(max_threads);
  }
  return pool;
}

NetworkThreads::NetworkThreads(std::size_t max_threads)
    : max_threads_(max_threads == 0 ? kDefaultThreads : max_threads) {}

NetworkThreads::~NetworkThreads() {
  // Each thread owns its context: once the guard is gone it returns when its work is done.
  for (auto& worker : workers_) {
    worker.guard.reset();
    if (worker.thread.get_id() == std::this_thread::get_id()) {
      worker.thread.detach();
    } else {
      worker.thread.join();
    }
  }
}

void NetworkThreads::raise_limit(std::size_t max_threads) {
  std::lock_guard<std::mutex> lock(mutex_);
  max_threads_ = std::max(max_threads_, max_threads);
}

std::shared_ptr<asio::io_context> NetworkThreads::next() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (workers_.size() < max_threads_) {
    auto io = std::make_shared<asio::io_context>(1);
    auto guard = asio::make_work_guard(*io);
    std::thread thread([io] { run(*io); });
    workers_.push_back(Worker{io, std::move(guard), std::move(thread)});
    return io;
  }
  return workers_[turn_++ % workers_.size()].io;
}

std::size_t NetworkThreads::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return workers_.size();
}

bool NetworkThreads::on_own_thread() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) {
    return w.thread.get_id() == std::this_thread::get_id();
  });
}

}  // namespace sonic::net
