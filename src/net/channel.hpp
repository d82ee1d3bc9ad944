// One endpoint's connection as a client transport keeps it, shared by the process's clients of
// that endpoint: the current connection while it is usable, else a new one, unless the last
// attempt to connect failed less than the reconnect backoff ago; then a call waits for the next
// attempt (when its client has nowhere else to go) or fails UNAVAILABLE at once.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "network_threads.hpp"
#include "reconnect_backoff.hpp"
#include "sonic/transport.hpp"

namespace sonic::net {

/// How long a client connection may keep writing the bytes of a request that already ended
/// (cancelled, or its client destroyed) before the connection is closed to let go of them:
/// the caller's memory must not be read after its callback, and that callback waits for it.
/// A request whose deadline passed gets no grace.
inline constexpr std::chrono::milliseconds kParkedGrace{1000};

/// What a connection reports to its channel, on the network thread.
template <typename Call>
struct ChannelEvents {
  /// A call the server never processed (refused by GOAWAY, say): start it on a new connection.
  /// Posted by the connection, never called inside a call into it.
  std::function<void(std::shared_ptr<Call>)> restart;
  /// The outcome of connecting: an empty string once connected, else why it failed. Called at
  /// once, before the connection completes any call, so that the reconnect backoff is in place
  /// when their callers hear of the failure.
  std::function<void(const std::string& failure)> connected;
};

/// `Connection` has connect(), usable(), submit(std::shared_ptr<Call>) and
/// shutdown(StatusCode, const std::string&); `Call` has `finished`, `deadline`,
/// `wait_for_reconnect`, and `done`, callable with an Error. Everything but the constructor,
/// the destructor and get() runs on the channel's network thread.
template <typename Connection, typename Call>
class Channel : public std::enable_shared_from_this<Channel<Connection, Call>> {
 public:
  using Factory =
      std::function<std::shared_ptr<Connection>(asio::io_context&, ChannelEvents<Call>)>;

  /// The channel other clients of this process use for `key` (an endpoint and the settings of
  /// its connections), or a new one; always a new one when `shared` is false.
  static std::shared_ptr<Channel> get(const std::string& key, bool shared, const Endpoint& endpoint,
                                      const ClientOptions& options, Factory factory) {
    if (!shared) return std::make_shared<Channel>(endpoint, options, std::move(factory));
    static std::mutex mutex;
    static std::map<std::string, std::weak_ptr<Channel>> channels;
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = channels.begin(); it != channels.end();) {
      it = it->second.expired() ? channels.erase(it) : std::next(it);
    }
    auto& slot = channels[key];
    auto channel = slot.lock();
    if (!channel) {
      channel = std::make_shared<Channel>(endpoint, options, std::move(factory));
      slot = channel;
    }
    return channel;
  }

  Channel(Endpoint endpoint, const ClientOptions& options, Factory factory)
      : endpoint_(std::move(endpoint)),
        factory_(std::move(factory)),
        threads_(NetworkThreads::shared(options.network_threads)),
        io_(threads_->next()),
        backoff_(options) {}

  /// Every client of the channel is gone, and took its calls with it: closes the connections
  /// on the network thread (the closure holds the pool, which keeps the thread running).
  ~Channel() {
    asio::post(*io_, [threads = threads_, connections = std::move(connections_),
                      deferred = std::move(deferred_)] {
      for (auto& timer : deferred) timer->cancel();
      for (auto& weak : connections) {
        if (auto connection = weak.lock()) {
          connection->shutdown(StatusCode::Cancelled, "the client was destroyed");
        }
      }
    });
  }
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  asio::io_context& io() { return *io_; }
  const Endpoint& endpoint() const { return endpoint_; }

  /// Starts `call` on a usable connection, or waits or fails as the backoff says.
  void submit(std::shared_ptr<Call> call) {
    if (call->finished) return;  // cancelled before it got here
    if (!current_ || !current_->usable()) {
      if (backoff_.wait() > Clock::duration::zero()) {
        if (call->wait_for_reconnect) return defer(std::move(call));
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(backoff_.wait()).count();
        return complete(
            *call, Error(StatusCode::Unavailable, cannot_connect() + "; not trying again for " +
                                                      std::to_string(ms + 1) + " ms"));
      }
      std::weak_ptr<Channel> weak = this->weak_from_this();
      ChannelEvents<Call> events{
          [weak](std::shared_ptr<Call> refused) {
            if (auto self = weak.lock()) return self->submit(refused);
            complete(*refused, Error(StatusCode::Cancelled, "the client was destroyed"));
          },
          [weak](const std::string& failure) {
            auto self = weak.lock();
            if (!self) return;
            if (failure.empty()) return self->backoff_.succeeded();
            self->backoff_.failed(failure);
          }};
      current_ = factory_(*io_, std::move(events));
      connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                        [](const auto& c) { return c.expired(); }),
                         connections_.end());
      connections_.push_back(current_);
      current_->connect();
    }
    current_->submit(std::move(call));
  }

  /// Completes a call that is on no connection (it never reached the wire).
  static void complete(Call& call, Error error) {
    if (call.finished) return;
    call.finished = true;
    auto done = std::move(call.done);
    done(std::move(error));
  }

 private:
  std::string cannot_connect() const {
    return "cannot connect to " + endpoint_.url + ": " + backoff_.why();
  }

  // Holds a call until the next connection attempt (or its deadline, if sooner).
  void defer(std::shared_ptr<Call> call) {
    if (call->deadline <= Clock::now()) {
      return complete(*call,
                      Error(StatusCode::DeadlineExceeded,
                            "deadline passed while waiting to reconnect: " + cannot_connect()));
    }
    auto timer = std::make_shared<asio::steady_timer>(
        *io_, std::min(backoff_.next_attempt(), call->deadline));
    deferred_.push_back(timer);
    std::weak_ptr<Channel> weak = this->weak_from_this();
    timer->async_wait([weak, call, timer](std::error_code) mutable {
      auto self = weak.lock();
      if (!self) return complete(*call, Error(StatusCode::Cancelled, "the client was destroyed"));
      auto& deferred = self->deferred_;
      deferred.erase(std::remove(deferred.begin(), deferred.end(), timer), deferred.end());
      self->submit(std::move(call));  // its deadline passed meanwhile: DEADLINE_EXCEEDED there
    });
  }

  const Endpoint endpoint_;
  Factory factory_;
  std::shared_ptr<NetworkThreads> threads_;
  std::shared_ptr<asio::io_context> io_;
  // Network-thread state.
  std::shared_ptr<Connection> current_;
  std::vector<std::weak_ptr<Connection>> connections_;  // including draining ones
  ReconnectBackoff backoff_;
  std::vector<std::shared_ptr<asio::steady_timer>> deferred_;  // calls waiting out the backoff
};

}  // namespace sonic::net
