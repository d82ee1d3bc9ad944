// One endpoint's connection as the client transports keep it, shared by the process's clients
// of that endpoint: the current connection while it is usable, else a new one, unless the last
// attempt to connect failed less than the reconnect backoff ago; then a call waits for the next
// attempt (when its client has nowhere else to go) or fails UNAVAILABLE at once. And, per
// client, its calls on the channel, which destroying the client cancels.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "call_life.hpp"
#include "network_threads.hpp"
#include "sonic/cancel.hpp"
#include "sonic/options.hpp"
#include "sonic/transport.hpp"

namespace sonic::net {

/// Exponential backoff with ±20 % jitter between failed connection attempts
/// (ClientOptions::reconnect_backoff, doubling up to reconnect_backoff_max). Not thread-safe:
/// a connection's owner keeps one on its network thread.
class ReconnectBackoff {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ReconnectBackoff(const ClientOptions& options)
      : initial_(options.reconnect_backoff), max_(options.reconnect_backoff_max) {}

  /// Whether a client's calls that meet the backoff should wait for the next attempt rather
  /// than fail at once. Failing fast helps only when the client has somewhere else to go
  /// (another endpoint, the CPU fallback); alone, it would just spend the request's retries
  /// while the server restarts. A waiting call still ends by its deadline.
  static bool calls_wait(const ClientOptions& options) {
    return options.endpoints.size() == 1 && !options.resolution.each_address &&
           options.fallback == nullptr;
  }

  /// When the next attempt may be made.
  Clock::time_point next_attempt() const { return next_; }

  /// A connection attempt succeeded: the next failure starts from the initial pause.
  void succeeded() {
    failures_ = 0;
    next_ = {};
  }

  /// A connection attempt failed for `why`: no new attempt before the pause is over.
  void failed(std::string why) {
    ++failures_;
    why_ = std::move(why);
    double ms = static_cast<double>(initial_.count());
    for (int i = 1; i < failures_ && ms < static_cast<double>(max_.count()); ++i) ms *= 2;
    ms = std::min(ms, static_cast<double>(max_.count()));
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    next_ = Clock::now() +
            std::chrono::microseconds(static_cast<std::int64_t>(ms * 1000 * jitter(random_)));
  }

  /// How long until a new attempt may be made; zero or less when it may be made now.
  Clock::duration wait() const { return next_ - Clock::now(); }

  /// Why the last attempt failed ("Connection refused").
  const std::string& why() const { return why_; }

 private:
  std::chrono::milliseconds initial_, max_;
  int failures_ = 0;
  Clock::time_point next_{};
  std::string why_;
  std::mt19937 random_{std::random_device{}()};
};

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
/// shutdown(StatusCode, const std::string&); `Call` derives from CallLife (call_life.hpp) and
/// has `wait_for_reconnect`. Everything but the constructor, the destructor and get() runs on
/// the channel's network thread.
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

  /// A channel on `io`, which its owner runs (a thread's CallerLane) rather than a network
  /// thread.
  Channel(Endpoint endpoint, const ClientOptions& options, Factory factory,
          std::shared_ptr<asio::io_context> io)
      : endpoint_(std::move(endpoint)),
        factory_(std::move(factory)),
        io_(std::move(io)),
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
    if (call->finished()) return;  // cancelled before it got here
    if (!current_ || !current_->usable()) {
      if (backoff_.wait() > Clock::duration::zero()) {
        if (call->wait_for_reconnect) return defer(std::move(call));
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(backoff_.wait()).count();
        return complete(
            *call, Error(StatusCode::Unavailable, cannot_connect() + "; not trying again for " +
                                                      std::to_string(ms + 1) + " ms")
                       .set_never_sent());
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
  static void complete(Call& call, Error error) { call.deliver(std::move(error)); }

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

/// What a CallBook keeps in each of its calls: the call's place in the book's list of calls on
/// the network thread, and the caller's `done` while the book's own stands in front of it.
/// A `Call` derives from BookEntry<Call, decltype(Call::done)>.
template <typename Call, typename Done>
struct BookEntry {
  Call* book_previous = nullptr;
  Call* book_next = nullptr;
  std::weak_ptr<Call> book_self;
  Done booked_done;
};

/// `Call` is a Channel call that also has `connection` (a weak_ptr to the Connection it was
/// last submitted to) and derives from BookEntry; `Connection` has abandon(call, Error).
/// Thread-safe; shared with the closures that run on the network thread. Keeping a call costs
/// no allocation: the book's list runs through the calls, and its `done` wrapper is small
/// enough to be stored in place.
template <typename Connection, typename Call>
class CallBook {
 public:
  using ChannelType = Channel<Connection, Call>;

  /// Hands `call` to the channel, counted as this client's until its `done` has run; when the
  /// book is closing (a call racing the transport's destructor), completes it with CANCELLED
  /// instead, on the network thread as well.
  static void start(const std::shared_ptr<CallBook>& book,
                    const std::shared_ptr<ChannelType>& channel, std::shared_ptr<Call> call) {
    book->outstanding_.fetch_add(1, std::memory_order_relaxed);
    if (book->closing_.load(std::memory_order_acquire)) {
      return complete_later(book, channel, std::move(call->done),
                            Error(StatusCode::Cancelled, "the client is being destroyed"));
    }
    // The caller's `done` stays in the call, which is alive whenever `done` runs (the
    // Channel contract): the wrapper holds only the book and the call's address.
    call->booked_done = std::move(call->done);
    call->done = [book, raw = call.get()](auto outcome) mutable {
      book->unlink(raw);
      auto done = std::move(raw->booked_done);
      done(std::move(outcome));
      book->finished();
    };
    asio::post(channel->io(), [book, channel, call = std::move(call)]() mutable {
      if (call->finished()) return;  // cancelled on its way here
      book->link(call);
      channel->submit(std::move(call));
    });
  }

  /// Completes `done` with `error` on the channel's network thread, never inside this call: a
  /// call that failed before it could be handed to the channel (a request over the size limit,
  /// say). Counted as this client's call until `done` has run, so that close_and_wait() waits
  /// for it too. Costs a post, on failures only.
  template <typename Done>
  static void fail(const std::shared_ptr<CallBook>& book,
                   const std::shared_ptr<ChannelType>& channel, Done done, Error error) {
    book->outstanding_.fetch_add(1, std::memory_order_relaxed);
    complete_later(book, channel, std::move(done), std::move(error));
  }

  /// Makes `cancel` stop the call on the network thread: its connection tells the server and
  /// the call completes with CANCELLED. The action is posted, so it holds the channel.
  static void watch(CancelSignal& cancel, const std::shared_ptr<ChannelType>& channel,
                    const std::shared_ptr<Call>& call) {
    cancel.on_cancel([channel, weak = std::weak_ptr<Call>(call)] {
      asio::post(channel->io(), [channel, weak] {
        if (auto cancelled = weak.lock()) {
          abandon(cancelled,
                  Error(StatusCode::Cancelled, "the request was cancelled by the caller"));
        }
      });
    });
  }

  /// Cancels every call of this client and returns once each has completed (a call whose
  /// request a write still reads waits for it, at most kParkedGrace).
  static void close_and_wait(const std::shared_ptr<CallBook>& book, ChannelType& channel) {
    book->closing_.store(true, std::memory_order_release);
    asio::post(channel.io(), [self = book] {
      // Abandoning completes calls, which unlinks them: collect first.
      std::vector<std::shared_ptr<Call>> mine;
      for (Call* call = self->first_; call; call = call->book_next) {
        if (auto alive = call->book_self.lock()) mine.push_back(std::move(alive));
      }
      for (auto& call : mine) {
        abandon(call, Error(StatusCode::Cancelled, "the client was destroyed"));
      }
    });
    std::unique_lock<std::mutex> lock(book->mutex_);
    book->idle_.wait(lock, [&book] { return book->outstanding_.load() == 0; });
  }

 private:
  // Runs `done` with `error` on the network thread, then counts the call finished (the caller
  // counted it outstanding). The closure holds the channel, and with it the thread.
  template <typename Done>
  static void complete_later(const std::shared_ptr<CallBook>& book,
                             const std::shared_ptr<ChannelType>& channel, Done done, Error error) {
    asio::post(channel->io(),
               [book, channel, done = std::move(done), error = std::move(error)]() mutable {
                 done(std::move(error));
                 book->finished();
               });
  }

  static void abandon(const std::shared_ptr<Call>& call, Error why) {
    if (call->finished()) return;
    if (auto connection = call->connection.lock()) return connection->abandon(call, std::move(why));
    ChannelType::complete(*call, std::move(why));  // on no connection: nothing on the wire
  }

  // Network thread only.
  void link(const std::shared_ptr<Call>& call) {
    call->book_self = call;
    call->book_next = first_;
    if (first_) first_->book_previous = call.get();
    first_ = call.get();
  }
  void unlink(Call* call) {
    if (call->book_previous) call->book_previous->book_next = call->book_next;
    if (call->book_next) call->book_next->book_previous = call->book_previous;
    if (first_ == call) first_ = call->book_next;
    call->book_previous = call->book_next = nullptr;
  }

  // One call's `done` has run. close_and_wait() may be waiting for the last: only that one
  // takes the lock.
  void finished() {
    if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.notify_all();
  }

  std::mutex mutex_;  // for idle_ alone
  std::condition_variable idle_;
  std::atomic<std::size_t> outstanding_{0};
  std::atomic<bool> closing_{false};
  Call* first_ = nullptr;  // network thread only: the calls on the channel
};

}  // namespace sonic::net
