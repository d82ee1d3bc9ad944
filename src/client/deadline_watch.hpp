// sonic — a client's requests with deadlines, watched by a thread of their own, so that a
// request's outcome comes by its deadline whatever its transport is doing.
//
// A transport ends a call at its deadline with a timer on the connection's network thread. That
// thread may be far behind: when a server dies with thousands of calls on its connection, their
// failures, retries and reconnects queue there, and a deadline timer that expires meanwhile
// waits its turn (a kill storm with 2,000 requests in flight and 100 ms deadlines had outcomes
// 125 ms late). The watch is the backstop: one thread of the process looks at every client's
// watched requests each tick and decides DEADLINE_EXCEEDED for those still undecided kGrace
// after their deadline, and hands over those decided whose outcome still waits in a queue. It
// never waits on a network thread, and the request path pays a lock and a link to watch a
// request, and a lock and an unlink when its outcome is handed over.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "sonic/detail/export.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

class WatchThread;

class SONIC_EXPORT DeadlineWatch : public std::enable_shared_from_this<DeadlineWatch> {
 public:
  /// How long after its deadline a request's transport has to decide it before the watch does.
  static constexpr std::chrono::milliseconds kGrace{5};
  /// How often the watch's thread looks, while any request is watched.
  static constexpr std::chrono::milliseconds kTick{2};

  /// Something with a deadline: a client's request. Its hooks belong to the watch.
  class Watched {
   public:
    virtual ~Watched() = default;
    /// The watched object, kept alive while the watch acts on it; null once it is going.
    virtual std::shared_ptr<Watched> hold() = 0;
    /// Its deadline passed kGrace ago and it is still watched: decide it, or, decided but not
    /// yet handed to its caller, hand it over ahead of what it waits behind. On the watch's
    /// thread, without the watch's lock.
    virtual void deadline_passed() = 0;

   private:
    friend class DeadlineWatch;
    Watched* previous_ = nullptr;
    Watched* next_ = nullptr;
    std::int64_t tick_ = kUnwatched;  // the watch's lock guards the hooks
  };

  /// A watch. It joins the process's watch thread when it first watches a request (a client
  /// whose requests have no deadlines starts no thread); the thread stops after the last watch.
  static std::shared_ptr<DeadlineWatch> make() { return std::make_shared<DeadlineWatch>(); }

  DeadlineWatch() = default;
  DeadlineWatch(const DeadlineWatch&) = delete;
  DeadlineWatch& operator=(const DeadlineWatch&) = delete;

  /// Watches `watched` until forget(); Deadline::max() is no deadline and watches nothing.
  /// Thread-safe.
  void watch(Watched& watched, Deadline deadline);
  /// Stops watching `watched` (no-op when it is not watched). Thread-safe; once it returns,
  /// deadline_passed() is not called for it, unless a call is already under way.
  void forget(Watched& watched);

  /// Requests watched now.
  std::size_t size() const;

  /// Calls deadline_passed() for every request due by `now`; the watch thread's tick. Returns
  /// when the next request left is due (Clock::time_point::max() when none is).
  Clock::time_point expire(Clock::time_point now);

 private:
  static constexpr std::int64_t kUnwatched = -1;
  static std::int64_t tick_of(Clock::time_point when);
  void unlink(Watched& watched);  // lock held

  mutable std::mutex mutex_;              // guards what follows
  std::shared_ptr<WatchThread> thread_;   // joined on the first watch()
  std::map<std::int64_t, Watched*> due_;  // tick → the first of a list of requests due then
  std::size_t size_ = 0;
};

}  // namespace sonic::detail
