// sonic — the caller of a request as whoever runs it sees it: until when it waits for the
// answer, and whether it stopped waiting before then.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/detail/unique_function.hpp"
#include "sonic/error.hpp"

namespace sonic {

/// Who waits for a request's answer: the time it stops waiting (its deadline), and whether it
/// went away before that (a reset stream, a closed connection, a client's cancel()). A server
/// makes one for each request it takes from the wire, from the deadline the request carried
/// (gRPC's grpc-timeout; see docs/overload.md), and hands it along with the request
/// (InferRequest::caller()); the requests of one gRPC stream share their stream's. Every queue
/// a request passes looks at it before running the request, so that work nobody waits for is
/// answered, never run; a model may look at it while it runs (a Python model's
/// `request.is_cancelled()`). Thread-safe.
class SONIC_EXPORT Caller {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  /// A caller that waits until `deadline`; the default waits for ever.
  explicit Caller(TimePoint deadline = TimePoint::max()) noexcept
      : deadline_(deadline.time_since_epoch().count()) {}
  Caller(const Caller&) = delete;
  Caller& operator=(const Caller&) = delete;

  /// When the caller stops waiting; TimePoint::max() when it set no deadline.
  TimePoint deadline() const noexcept {
    return TimePoint(TimePoint::duration(deadline_.load(std::memory_order_acquire)));
  }
  bool has_deadline() const noexcept { return deadline() != TimePoint::max(); }

  /// Moves the deadline to `deadline` if that is earlier (never later): for a deadline learnt
  /// after the caller was made, such as one sent inside the request's body.
  void shorten_deadline(TimePoint deadline) noexcept {
    const auto wanted = deadline.time_since_epoch().count();
    auto current = deadline_.load(std::memory_order_relaxed);
    while (wanted < current &&
           !deadline_.compare_exchange_weak(current, wanted, std::memory_order_acq_rel)) {
    }
  }

  /// Whether the caller went away.
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }

  /// The caller went away: the hooks installed with on_cancel() run, once, on this thread.
  /// Later calls do nothing.
  void cancel();

  /// Why a request of this caller should no longer run at `now`: CANCELLED once the caller went
  /// away, DEADLINE_EXCEEDED once its deadline passed, each saying what the request was waiting
  /// for (`waiting_for`: "model 'simple'", say); nothing while it still waits.
  std::optional<Error> gone(TimePoint now, const std::string& waiting_for) const;

  /// Whether gone() would say anything at `now`: cheaper, for queues that look often.
  bool gone(TimePoint now) const noexcept { return cancelled() || now >= deadline(); }

  /// Runs `action` when the caller is cancelled: at once, on this thread, when it already
  /// was. For a queue holding the caller's requests, so that it takes them out at once rather
  /// than when it next looks. One action per `key` (a queue gives its own address): a later
  /// one with the same key replaces it, so that a caller whose many requests pass one queue
  /// holds one action for it. The action runs on the thread that cancels (a connection's
  /// network thread): it must be short and must not block or complete a request inline.
  void on_cancel(const void* key, detail::UniqueFunction<void()> action);

 private:
  std::atomic<TimePoint::rep> deadline_;
  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;  // guards actions_
  std::vector<std::pair<const void*, detail::UniqueFunction<void()>>> actions_;
};

}  // namespace sonic
