// sonic — the circuit breaker: counting an endpoint's consecutive server failures, ejecting it,
// and the health probes (ServerReady) that bring it back once its cool-down is over.
#pragma once

#include <cstddef>
#include <memory>

#include "sonic/detail/export.hpp"
#include "sonic/retry.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

struct SlotTable;

/// An endpoint's breaker state. Guarded by whatever guards the endpoint (SlotTable::mutex).
struct BreakerState {
  int consecutive_failures = 0;
  bool ejected = false;
  bool probing = false;            ///< a ServerReady probe is under way
  Clock::time_point rest_until{};  ///< no probe before this
};

/// The breaker's decisions, on a BreakerState the caller guards. Pure: no lock, no clock of its
/// own, no transport; const, so any thread may call it.
class EndpointBreaker {
 public:
  explicit EndpointBreaker(CircuitBreaker options) : options_(options) {}

  /// Whether a failing endpoint may leave the rotation: not the last one in it, unless a
  /// fallback takes the requests (trying a failing server beats refusing every request).
  static bool may_eject(std::size_t in_rotation, bool has_fallback) {
    return in_rotation > 1 || has_fallback;
  }
  /// A successful attempt: the count of consecutive failures starts over.
  void succeeded(BreakerState& state) const { state.consecutive_failures = 0; }
  /// A server failure (UNAVAILABLE, a per-attempt timeout) of an endpoint in rotation at `now`.
  /// True when it ejects the endpoint now: failures_to_eject in a row, `can_eject`
  /// (may_eject()), and not ejected already. An ejected endpoint rests for cool_down.
  bool failed(BreakerState& state, bool can_eject, Clock::time_point now) const;
  /// Whether an ejected endpoint is due for a probe at `now` (rested, none under way); if so it
  /// is marked probing.
  bool start_probe(BreakerState& state, Clock::time_point now) const;
  /// A probe's outcome at `now`: a ready server is back in rotation (true); otherwise it rests
  /// another cool_down.
  bool probed(BreakerState& state, bool ready, Clock::time_point now) const;

  const CircuitBreaker& options() const { return options_; }

 private:
  CircuitBreaker options_;
};

/// The health probes of ejected endpoints: every probe_interval while any is ejected, a
/// ServerReady to each whose rest is over. Works on the pool's SlotTable under its mutex; the
/// probes' answers arrive on the transports' threads. Thread-safe.
class HealthProbes {
 public:
  /// `table` and `breaker` must outlive this (members of the same EndpointPool).
  HealthProbes(SlotTable& table, const EndpointBreaker& breaker)
      : table_(table), breaker_(breaker) {}

  /// Gives the probes a handle on themselves that keeps the pool alive while a timer task runs
  /// (an aliasing pointer into the pool). Called once by EndpointPool::start(), before
  /// schedule(); takes the table's mutex.
  void bind(std::weak_ptr<HealthProbes> self);
  /// Probes ejected endpoints after probe_interval, on the timer thread, and again while any
  /// is ejected. At most one round is scheduled at a time; nothing once the table is closed.
  /// Any thread; takes the table's mutex (the caller must not hold it).
  void schedule();

 private:
  // On the timer thread: sends the probes that are due, then schedules the next round.
  void probe();

  SlotTable& table_;
  const EndpointBreaker& breaker_;
  std::weak_ptr<HealthProbes> self_;  // guarded by table_.mutex
  bool scheduled_ = false;            // guarded by table_.mutex
};

}  // namespace sonic::detail
