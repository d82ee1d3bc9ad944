#include "http_pool.hpp"

#include <algorithm>
#include <utility>

namespace sonic::http {

HttpPool::HttpPool(asio::io_context& io, Endpoint endpoint, net::ConnectionSettings settings,
                   net::ChannelEvents<HttpCall> events)
    : io_(io),
      endpoint_(std::move(endpoint)),
      settings_(std::move(settings)),
      events_(std::move(events)),
      wake_(io) {}

void HttpPool::connect() { open(); }

void HttpPool::open() {
  std::weak_ptr<HttpPool> weak = weak_from_this();
  HttpConnection::Events events{[weak](const std::string& failure) {
                                  if (auto self = weak.lock()) self->on_connected(failure);
                                },
                                [weak](std::shared_ptr<HttpCall> call, Result<HttpAnswer> outcome) {
                                  if (auto self = weak.lock())
                                    return self->on_finished(std::move(call), std::move(outcome));
                                  if (call) call->deliver(std::move(outcome));
                                }};
  auto connection = std::make_shared<HttpConnection>(io_, endpoint_, settings_, std::move(events));
  connections_.push_back(connection);
  alive_ = shared_from_this();
  connection->connect();
}

void HttpPool::on_connected(const std::string& failure) {
  // First the backoff, then the calls: a caller that sends again on hearing of the failure
  // must find the backoff in place.
  if (events_.connected) events_.connected(failure);
  if (failure.empty()) return dispatch();
  const bool others = std::any_of(connections_.begin(), connections_.end(),
                                  [](const auto& c) { return !c->closed(); });
  if (others) return;  // the calls wait for the connections that are up
  failed_ = true;
  connections_.clear();  // each closed
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& call : waiting) {
    call->deliver(
        Error(StatusCode::Unavailable, "cannot connect to " + endpoint_.url + ": " + failure)
            .set_never_sent());
  }
  // The channel makes a new pool for its next calls; this one goes once the connection that
  // failed lets go of it (the caller holds it meanwhile).
  alive_.reset();
}

void HttpPool::submit(std::shared_ptr<HttpCall> call) {
  if (failed_) {
    return call->deliver(
        Error(StatusCode::Unavailable, "connection to " + endpoint_.url + " is closed")
            .set_never_sent());
  }
  call->connection = weak_from_this();
  net::arm_deadline(call, io_, call->connection);
  if (call->finished()) return;
  waiting_.push_back(std::move(call));
  dispatch();
}

void HttpPool::dispatch() {
  for (const auto& c : connections_) {
    // Closed before it carried a call: the server turns connections away (at its limit, or
    // going down). No new one before the reconnect backoff, or the pool would spin on it.
    if (c->closed() && !c->served()) quiet_until_ = Clock::now() + settings_.reconnect_backoff;
  }
  connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                    [](const auto& c) { return c->closed(); }),
                     connections_.end());
  // Every caller of dispatch() holds the pool: letting go of it here never ends this call.
  if (connections_.empty() && waiting_.empty()) alive_.reset();
  while (!waiting_.empty()) {
    if (waiting_.front()->finished()) {
      waiting_.pop_front();
      continue;
    }
    auto idle = std::find_if(connections_.begin(), connections_.end(),
                             [](const auto& c) { return c->idle(); });
    if (idle == connections_.end()) break;
    auto call = std::move(waiting_.front());
    waiting_.pop_front();
    carried_.emplace_back(call.get(), *idle);
    (*idle)->start(std::move(call));
  }
  // Connections still to come up serve the calls that wait; open more up to the limit.
  const std::size_t most = std::max<std::size_t>(1, settings_.http_connections);
  std::size_t opening = 0;
  for (const auto& c : connections_) opening += c->connecting() ? 1 : 0;
  if (opening >= waiting_.size() || connections_.size() >= most) return;
  if (Clock::now() < quiet_until_) return wake_at(quiet_until_);
  while (opening < waiting_.size() && connections_.size() < most) {
    open();
    ++opening;
  }
}

void HttpPool::wake_at(Clock::time_point when) {
  if (wake_armed_) return;
  wake_armed_ = true;
  wake_.expires_at(when);
  wake_.async_wait([weak = weak_from_this()](std::error_code error) {
    auto self = weak.lock();
    if (error || !self) return;
    self->wake_armed_ = false;
    self->dispatch();
  });
}

void HttpPool::on_finished(std::shared_ptr<HttpCall> call, Result<HttpAnswer> outcome) {
  if (call) {
    carried_.erase(std::remove_if(carried_.begin(), carried_.end(),
                                  [&call](const auto& entry) { return entry.first == call.get(); }),
                   carried_.end());
    call->deliver(std::move(outcome));
  }
  // The next call starts on the freed connection after this handler, never inside the
  // connection's own read or write handler.
  if (waiting_.empty() || dispatch_posted_) return;
  dispatch_posted_ = true;
  asio::post(io_, [weak = weak_from_this()] {
    if (auto self = weak.lock()) {
      self->dispatch_posted_ = false;
      self->dispatch();
    }
  });
}

void HttpPool::abandon(const std::shared_ptr<HttpCall>& call, Error why) {
  if (call->finished()) return;
  auto queued = std::find(waiting_.begin(), waiting_.end(), call);
  if (queued != waiting_.end()) {
    waiting_.erase(queued);
    return call->deliver(std::move(why));
  }
  for (const auto& [carried, connection] : carried_) {
    if (carried == call.get()) return connection->abandon(std::move(why));
  }
  call->deliver(std::move(why));
}

void HttpPool::shutdown(StatusCode code, const std::string& why) {
  const auto keep = std::move(alive_);  // the pool goes, at the earliest, as this returns
  failed_ = true;
  wake_.cancel();
  const Error error(code, why);
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& call : waiting) call->deliver(error);
  auto connections = connections_;
  for (auto& connection : connections) connection->close(error);
}

void HttpPool::let_go(const std::shared_ptr<HttpCall>& call, const std::string& why) {
  for (const auto& [carried, connection] : carried_) {
    if (carried == call.get()) return connection->close(Error(StatusCode::Unavailable, why));
  }
}

}  // namespace sonic::http
