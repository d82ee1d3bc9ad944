// Where a client transport's calls go: the endpoint's shared channel, or, for an inference call
// made by a thread waiting in a blocking sonic call (detail::WaitingThread), a channel on that
// thread's own CallerLane, which the thread runs while it waits. Each route keeps its own
// CallBook, so that each book's list of calls is touched by one thread only.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "caller_lane.hpp"
#include "channel.hpp"
#include "client/blocking_wait.hpp"
#include "connection_settings.hpp"

namespace sonic::net {

/// Thread-safe. One per transport object (one client's calls to one endpoint).
template <typename Connection, typename Call>
class CallRoutes {
 public:
  using ChannelType = Channel<Connection, Call>;
  using Book = CallBook<Connection, Call>;
  /// Makes a channel on a thread's lane, with the shared channel's endpoint and settings.
  using LaneChannel =
      std::function<std::shared_ptr<ChannelType>(std::shared_ptr<asio::io_context>)>;

  /// A channel and the book of this transport's calls on it.
  struct Route {
    std::shared_ptr<ChannelType> channel;
    std::shared_ptr<Book> book;

    /// Completes `done` with `error` on the channel's network thread, never inside this call:
    /// for a call that failed before it could be sent (CallBook::fail).
    template <typename Done>
    void fail(Done done, Error error) const {
      Book::fail(book, channel, std::move(done), std::move(error));
    }
  };

  /// `drive_blocking_calls` (ClientOptions::drive_blocking_calls) off: every call is shared.
  CallRoutes(std::shared_ptr<ChannelType> shared, bool drive_blocking_calls,
             LaneChannel lane_channel)
      : shared_{std::move(shared), std::make_shared<Book>()},
        drive_blocking_calls_(drive_blocking_calls),
        lane_channel_(std::move(lane_channel)) {}

  /// The endpoint's shared channel, for every call but blocking inference.
  const Route& shared() const { return shared_; }

  /// The route of an inference call made now: the calling thread's lane when the thread waits
  /// in a blocking call (which is then told to drive the lane), else the shared one. Called on
  /// the calling thread.
  Route for_inference() {
    auto* waiting = detail::WaitingThread::current();
    if (!waiting || !drive_blocking_calls_) return shared_;
    auto lane = CallerLane::of_this_thread();
    Route route = on(lane);
    // Hears what the server said while the thread was away (a GOAWAY, a closed connection)
    // before a call is put on the connection.
    lane->catch_up();
    waiting->drive_with(std::move(lane));
    return route;
  }

  /// Cancels this transport's calls on every route and returns once each has completed. A
  /// lane's calls complete on its thread, which runs the lane while it waits for them (a
  /// thread outside a blocking call has none). The lanes' connections close as their threads
  /// next run them, or as the threads end; the calling thread's own at once.
  void close_and_wait() {
    Book::close_and_wait(shared_.book, *shared_.channel);
    std::vector<OnLane> lanes;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
      lanes.swap(lanes_);
    }
    std::shared_ptr<CallerLane> mine;
    for (auto& on_lane : lanes) {
      Book::close_and_wait(on_lane.route.book, *on_lane.route.channel);
      if (on_lane.owner == std::this_thread::get_id()) mine = on_lane.lane.lock();
    }
    lanes.clear();  // the channels post their connections' shutdown to the lanes
    if (mine) mine->catch_up();
  }

 private:
  struct OnLane {
    std::weak_ptr<CallerLane> lane;
    std::thread::id owner;
    Route route;
  };

  // This transport's route on `lane`, made on first use; routes of threads that ended go. Once
  // closing, the shared route, whose book completes the call with CANCELLED.
  Route on(const std::shared_ptr<CallerLane>& lane) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return shared_;
    for (const auto& on_lane : lanes_) {
      if (!on_lane.lane.owner_before(lane) && !lane.owner_before(on_lane.lane)) {
        return on_lane.route;
      }
    }
    lanes_.erase(std::remove_if(lanes_.begin(), lanes_.end(),
                                [](const OnLane& on_lane) { return on_lane.lane.expired(); }),
                 lanes_.end());
    lanes_.push_back(
        {lane, std::this_thread::get_id(), {lane_channel_(lane->io()), std::make_shared<Book>()}});
    return lanes_.back().route;
  }

  const Route shared_;
  const bool drive_blocking_calls_;
  const LaneChannel lane_channel_;
  std::mutex mutex_;  // guards what follows
  bool closed_ = false;
  std::vector<OnLane> lanes_;  // one per thread that made a blocking call through this transport
};

/// What the process's clients share a connection by, besides its settings.
enum class ShareBy {
  kUrl,      ///< the endpoint's URL: one connection per scheme
  kAddress,  ///< host and port: the schemes of one transport share it (their calls say which)
};

/// The routes of one client's calls to `endpoint`: the channel the process's clients of it share
/// (the endpoint as `share_by` says, and the settings of its connections; a channel of its own
/// when options.share_connections is off), and a channel per thread that waits in a blocking
/// call. Their connections are `Connection(io, endpoint, settings, events)`, with the settings of
/// `options` and `tls` (null: plaintext). Called on the caller's thread (a transport's
/// constructor); thread-safe.
template <typename Connection, typename Call>
CallRoutes<Connection, Call> routes_for(const Endpoint& endpoint, const ClientOptions& options,
                                        std::shared_ptr<TlsContext> tls, ShareBy share_by) {
  static_assert(std::is_constructible_v<Connection, asio::io_context&, const Endpoint&,
                                        const ConnectionSettings&, ChannelEvents<Call>>,
                "Connection is made as Connection(io, endpoint, settings, events)");
  using ChannelType = Channel<Connection, Call>;
  auto settings = ConnectionSettings::of(options, std::move(tls));
  typename ChannelType::Factory factory = [endpoint, settings](asio::io_context& io,
                                                               ChannelEvents<Call> events) {
    return std::make_shared<Connection>(io, endpoint, settings, std::move(events));
  };
  const std::string key = settings.sharing_key(
      share_by == ShareBy::kUrl ? endpoint.url
                                : endpoint.host + ':' + std::to_string(endpoint.port));
  auto shared = ChannelType::get(key, options.share_connections, endpoint, options, factory);
  return CallRoutes<Connection, Call>(
      std::move(shared), options.drive_blocking_calls,
      [endpoint, options, factory](std::shared_ptr<asio::io_context> io) {
        return std::make_shared<ChannelType>(endpoint, options, factory, std::move(io));
      });
}

}  // namespace sonic::net
