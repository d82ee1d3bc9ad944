// A thread's own network lane for its blocking calls: an asio::io_context that no network thread
// runs, only the thread itself while it waits in a blocking call (detail::CallerDrive). The
// connections a transport opens on it carry that thread's blocking calls alone, so there is no
// other caller to be fair to, and nothing on them waits while the thread does something else:
// between its blocking calls the thread has no call on them (a blocking call returns once its
// transport calls completed).
#pragma once

#include <asio.hpp>

#include <memory>

#include "client/blocking_wait.hpp"
#include "sonic/detail/export.hpp"

namespace sonic::net {

class SONIC_EXPORT CallerLane final : public detail::CallerDrive {
 public:
  /// The calling thread's lane, made on first use; it lives while the thread does, and while a
  /// connection opened on it does.
  static std::shared_ptr<CallerLane> of_this_thread();

  CallerLane();
  ~CallerLane();
  CallerLane(const CallerLane&) = delete;
  CallerLane& operator=(const CallerLane&) = delete;

  /// The context the thread's connections run on; it lives as long as the returned pointer.
  const std::shared_ptr<asio::io_context>& io() const { return io_; }

  /// Runs what is ready (a closed connection, a server's GOAWAY or PING that arrived while the
  /// thread was away) without waiting: so that a call is not started on a connection whose end
  /// is already in its socket. Not inside a handler of this lane. Owning thread only.
  void catch_up();

  /// Whether the owning thread is inside one of this lane's handlers.
  bool running() const { return depth_ > 0; }

  void run_one() override;
  void wake() override;

 private:
  std::shared_ptr<asio::io_context> io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  int depth_ = 0;  // owning thread only
};

}  // namespace sonic::net
