// sonic — a Client's endpoints: their slots and transports, composed of the balancer
// (endpoint_balancer.hpp), the circuit breaker and its probes (endpoint_breaker.hpp), name
// resolution (endpoint_resolution.hpp) and model discovery (model_discovery.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/endpoint_balancer.hpp"
#include "client/endpoint_breaker.hpp"
#include "client/endpoint_resolution.hpp"
#include "client/endpoint_slots.hpp"
#include "client/model_discovery.hpp"
#include "client/model_ref.hpp"
#include "client/timer_queue.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/options.hpp"
#include "sonic/stats.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

/// The endpoints requests may go to. Thread-safe: one mutex (SlotTable::mutex) guards every
/// slot, and every member takes it (callers hold no lock of the pool). Endpoints have fixed
/// indices ("slots") for the pool's whole life, so that attempts can report back by index; an
/// address that leaves a name's rotation drains, and its slot is reused once its transport is
/// gone. Held by std::shared_ptr (start() needs it).
///
/// Transports are destroyed only by close() and by the drain check on the timer thread, never
/// on one of their own threads, and never while anyone else holds them.
class EndpointPool : public std::enable_shared_from_this<EndpointPool> {
 public:
  static constexpr std::size_t kNone = SIZE_MAX;

  /// What an attempt asks of the endpoint it goes to, beyond serving its model.
  struct PickFor {
    /// Where the previous attempt failed: taken only when nothing else may take it.
    std::size_t avoid = kNone;
    /// A retry: only an endpoint whose retry budget allows one (RetryBudget).
    bool retry = false;
    /// Endpoints that refused this request early (WOULD_MISS_DEADLINE): never these.
    const std::vector<std::size_t>* refused = nullptr;
  };

  /// Where an attempt goes: a slot index and its transport (held only for the call); or, with
  /// no slot, what kept the endpoints that would otherwise have taken it.
  struct Pick {
    std::size_t slot = kNone;
    std::shared_ptr<Transport> transport;
    /// No slot: an endpoint would have taken this retry but for its retry budget.
    bool throttled = false;
    /// No slot: the earliest time a pushed-back endpoint that would take it resumes (zero when
    /// none would).
    Clock::time_point resumes{};

    explicit operator bool() const { return slot != kNone; }
  };

  /// What an attempt's outcome says about its endpoint (record()).
  struct AttemptReport {
    bool ok = false;
    /// The server or the path to it failed (UNAVAILABLE that is neither an early refusal nor
    /// a pushback, a per-attempt timeout): counts toward ejection.
    bool server_failure = false;
    /// It failed with a retryable code: a retry token less (RetryThrottle).
    bool retryable_failure = false;
    /// An early refusal (WOULD_MISS_DEADLINE), for the statistics.
    bool refusal = false;
    /// The server's pushback (Error::pushback()): no attempt goes there for this long.
    std::optional<std::chrono::milliseconds> pushback;
  };

  /// Longest pause a pushback imposes, so that no server's number overflows a time point.
  static constexpr std::chrono::hours kMaxPushback{24};

  /// Creates the endpoints of options.endpoints, looking host names up now when
  /// options.resolution.each_address asks for it. Throws sonic::Error(InvalidArgument) for a
  /// malformed URL or an unlinked scheme. `timers` must outlive every task scheduled on it.
  EndpointPool(ClientOptions options, TimerQueue& timers);
  /// close(), if nobody did.
  ~EndpointPool();

  EndpointPool(const EndpointPool&) = delete;
  EndpointPool& operator=(const EndpointPool&) = delete;

  /// Starts the periodic lookups of host names and model discovery (needs shared ownership,
  /// hence not in the constructor). Once, on the creating thread, before any other member.
  void start();

  /// Stops probing and looking up (waiting for a lookup under way), then destroys every
  /// transport: their calls in flight complete with CANCELLED before this returns. Idempotent.
  /// Not on a transport's thread.
  void close();

  /// An endpoint in rotation for `model`: not known to lack it, listing it when discovery has
  /// heard from it, reporting the pinned configuration, not pushed back, among the model's
  /// preferred endpoints while one qualifies, chosen as ClientOptions::routing.balancing says;
  /// and as `want` says: never one that refused the request, for a retry only one whose retry
  /// budget allows it, `want.avoid` only when nothing else may take it. When discovery's lists
  /// leave nothing else, an endpoint that does not list the model is tried (the lists may be
  /// out of date; they are asked again). Counts the attempt as outstanding until record(). No
  /// slot when no endpoint qualifies (the Pick says whether the budget or a pushback is why).
  /// Any thread.
  Pick pick(const ModelRef& model, const PickFor& want);
  /// A first attempt's pick: pick(model, PickFor{}).
  Pick pick(const ModelRef& model);

  /// Whether a retry of a request for `model` would be refused by the retry budget of every
  /// endpoint that `want` allows and could take it (now or after a pushback), at least one
  /// being there: the retry is throttled whenever it would go. Any thread.
  bool retry_throttled(const ModelRef& model, const PickFor& want) const;

  /// Whether a request for `model` that found no endpoint should wait a moment: a question
  /// about a model pinned to a checksum is still unanswered by an endpoint in rotation (its
  /// model list, or its configuration). Any thread.
  bool awaiting_discovery(const ModelRef& ref) const;

  /// Why no endpoint may serve `model`, endpoint by endpoint, for an error message; empty when
  /// routing has nothing to say (no discovery, no pin). Any thread.
  std::string why_unservable(const ModelRef& ref) const;

  /// A NOT_FOUND, lists that looked out of date, or a question that failed: asks every
  /// endpoint again, now or a second after the last round (at most one round a second). Any
  /// thread.
  void rediscover_soon();

  /// The outcome of an attempt picked from `slot`, which took `latency`: the breaker's
  /// bookkeeping, the retry budget, a pushback's pause, and statistics. Once per pick(); any
  /// thread.
  void record(std::size_t slot, const AttemptReport& outcome, Clock::duration latency);

  /// `slot` answered NOT_FOUND for `model`: no request for it goes there for model_recheck.
  /// Any thread.
  void lacks_model(std::size_t slot, const ModelRef& model);

  /// The transport for control calls: the first of control_transports(). Null once closed.
  std::shared_ptr<Transport> control_transport();

  /// Every active endpoint, for a control call that moves on from one that does not answer:
  /// healthy ones first, in rotation order, then ejected ones. Empty once closed. Any thread.
  std::vector<std::shared_ptr<Transport>> control_transports();

  /// Endpoints that take requests now (healthy or not). Any thread.
  std::size_t active() const;

  /// The URL of `slot` (empty once vacant). Any thread.
  std::string url(std::size_t slot) const;

  /// Statistics of the endpoints that exist now (draining ones included). Any thread.
  std::vector<EndpointStats> stats() const;

 private:
  // Whether slot `s` may take `ref` at `now`, by the rules of one pick pass. Under the mutex.
  bool qualifies(const EndpointSlot& s, const ModelRef& ref, Clock::time_point now,
                 bool despite_refusal, bool despite_index) const;
  // Why no slot took a pick that found none: the budget, or pushbacks that end when. Under the
  // mutex.
  void explain_none(Pick& pick, const ModelRef& ref, const PickFor& want,
                    Clock::time_point now) const;

  SlotTable table_;
  EndpointBalancer balancer_;             // under table_.mutex
  std::vector<EndpointLoad> pick_loads_;  // pick()'s views of the slots, under table_.mutex
  std::vector<bool> pick_eligible_;
  EndpointBreaker breaker_;
  RetryThrottle throttle_;
  DiscoveryRules rules_;
  HealthProbes probes_{table_, breaker_};
  ModelDiscovery discovery_{table_, rules_};
  NameResolution resolution_{table_};
};

}  // namespace sonic::detail
