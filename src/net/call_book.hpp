// The calls one client transport has under way on a channel that other clients may share: each
// counts from its start until its completion, so that destroying the transport can cancel its
// own calls (and only those) and wait for them.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "channel.hpp"
#include "sonic/cancel.hpp"

namespace sonic::net {

/// `Call` is a Channel call that also has `connection` (a weak_ptr to the Connection it was
/// last submitted to); `Connection` has abandon(call, Error).
/// Thread-safe; shared with the closures that run on the network thread.
template <typename Connection, typename Call>
class CallBook {
 public:
  using ChannelType = Channel<Connection, Call>;

  /// Hands `call` to the channel, counted as this client's until its `done` has run; when the
  /// book is closing, completes it with CANCELLED instead (inside this call).
  static void start(const std::shared_ptr<CallBook>& book,
                    const std::shared_ptr<ChannelType>& channel, std::shared_ptr<Call> call) {
    {
      std::unique_lock<std::mutex> lock(book->mutex_);
      if (book->closing_) {
        lock.unlock();
        auto done = std::move(call->done);
        return done(Error(StatusCode::Cancelled, "the client is being destroyed"));
      }
      ++book->outstanding_;
    }
    call->done = [book, raw = call.get(), done = std::move(call->done)](auto outcome) mutable {
      book->calls_.erase(raw);
      done(std::move(outcome));
      std::lock_guard<std::mutex> lock(book->mutex_);
      if (--book->outstanding_ == 0) book->idle_.notify_all();
    };
    asio::post(channel->io(), [book, channel, call = std::move(call)]() mutable {
      if (call->finished) return;  // cancelled on its way here
      book->calls_.emplace(call.get(), call);
      channel->submit(std::move(call));
    });
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
    {
      std::lock_guard<std::mutex> lock(book->mutex_);
      book->closing_ = true;
    }
    asio::post(channel.io(), [self = book] {
      std::vector<std::shared_ptr<Call>> mine;
      for (auto& [raw, weak] : self->calls_) {
        if (auto call = weak.lock()) mine.push_back(std::move(call));
      }
      for (auto& call : mine) {
        abandon(call, Error(StatusCode::Cancelled, "the client was destroyed"));
      }
    });
    std::unique_lock<std::mutex> lock(book->mutex_);
    book->idle_.wait(lock, [&book] { return book->outstanding_ == 0; });
  }

 private:
  static void abandon(const std::shared_ptr<Call>& call, Error why) {
    if (call->finished) return;
    if (auto connection = call->connection.lock()) return connection->abandon(call, std::move(why));
    ChannelType::complete(*call, std::move(why));  // on no connection: nothing on the wire
  }

  std::mutex mutex_;
  std::condition_variable idle_;
  std::size_t outstanding_ = 0;                           // guarded by mutex_
  bool closing_ = false;                                  // guarded by mutex_
  std::unordered_map<Call*, std::weak_ptr<Call>> calls_;  // network thread only
};

}  // namespace sonic::net
