// The keep-alive connections of one http:// endpoint, as a net::Channel keeps a connection:
// up to ClientOptions::http_connections of them, opened as calls need them and kept for the
// next ones; calls beyond them wait, in order. Runs on the channel's network thread.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "http_connection.hpp"

namespace sonic::http {

class HttpPool : public std::enable_shared_from_this<HttpPool> {
 public:
  HttpPool(asio::io_context& io, Endpoint endpoint, net::ConnectionSettings settings,
           net::ChannelEvents<HttpCall> events);

  /// False once a connection could not be made or the pool was shut down: the channel then
  /// makes a new pool (after its reconnect backoff) for the next calls.
  bool usable() const { return !failed_; }
  /// Opens the first connection.
  void connect();
  /// Sends the call on a free connection, a new one, or once one comes free.
  void submit(std::shared_ptr<HttpCall> call);
  /// Ends the call with `why`: taken out of the queue, or its connection closed.
  void abandon(const std::shared_ptr<HttpCall>& call, Error why);
  /// The endpoint's URL, for messages.
  const std::string& describe() const { return endpoint_.url; }
  /// Closes the connection that still writes `call`'s bytes (net::CallLife).
  void let_go(const std::shared_ptr<HttpCall>& call, const std::string& why);
  /// Ends every call with `code` and closes every connection; the pool then goes once nothing
  /// else holds it.
  void shutdown(StatusCode code, const std::string& why);

 private:
  void open();
  void dispatch();
  // Runs dispatch() at `when` (one timer for the pool).
  void wake_at(Clock::time_point when);
  void on_connected(const std::string& failure);
  void on_finished(std::shared_ptr<HttpCall> call, Result<HttpAnswer> outcome);

  asio::io_context& io_;
  const Endpoint endpoint_;
  const net::ConnectionSettings settings_;
  net::ChannelEvents<HttpCall> events_;
  bool failed_ = false;
  bool dispatch_posted_ = false;
  Clock::time_point quiet_until_{};  // no new connection before
  asio::steady_timer wake_;
  bool wake_armed_ = false;
  std::vector<std::shared_ptr<HttpConnection>> connections_;
  std::deque<std::shared_ptr<HttpCall>> waiting_;
  // The connection each call in flight is on.
  std::vector<std::pair<HttpCall*, std::shared_ptr<HttpConnection>>> carried_;
  // The pool itself while it has connections: the channel may let go of it on another thread
  // (its client's, as it is destroyed), and its connections must still be shut down on theirs,
  // by the closure the channel posts there, which finds the pool through a weak pointer.
  std::shared_ptr<HttpPool> alive_;
};

}  // namespace sonic::http
