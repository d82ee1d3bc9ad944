// sonic — a Client's endpoints: their slots and transports, composed of the balancer
// (endpoint_balancer.hpp), the circuit breaker and its probes (endpoint_breaker.hpp), name
// resolution (endpoint_resolution.hpp) and model discovery (model_discovery.hpp).
#pragma once

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
/// on one of their own threads, and never while anyone else holds them. Exported for its tests.
class SONIC_EXPORT EndpointPool : public std::enable_shared_from_this<EndpointPool> {
 public:
  static constexpr std::size_t kNone = SIZE_MAX;

  /// Where an attempt goes: a slot index and its transport (held only for the call).
  struct Pick {
    std::size_t slot = kNone;
    std::shared_ptr<Transport> transport;
  };

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
  /// heard from it, reporting the pinned configuration, among the model's preferred endpoints
  /// while one qualifies, chosen as ClientOptions::routing.balancing says. `avoid` (where the
  /// previous attempt failed) only when nothing else may take it: when discovery's lists leave
  /// nothing else, an endpoint that does not list the model is tried (the lists may be out of
  /// date; they are asked again). Counts the attempt as outstanding until record(). Nothing when
  /// no endpoint qualifies. Any thread.
  std::optional<Pick> pick(std::size_t avoid, const ModelRef& model);

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

  /// The outcome of an attempt picked from `slot`: breaker bookkeeping and statistics.
  /// `server_failure`: the server or the path to it failed (UNAVAILABLE, a per-attempt
  /// timeout), which counts toward ejection. Once per pick(); any thread.
  void record(std::size_t slot, bool ok, bool server_failure, Clock::duration latency);

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

  SlotTable table_;
  EndpointBalancer balancer_;             // under table_.mutex
  std::vector<EndpointLoad> pick_loads_;  // pick()'s views of the slots, under table_.mutex
  std::vector<bool> pick_eligible_;
  EndpointBreaker breaker_;
  DiscoveryRules rules_;
  HealthProbes probes_{table_, breaker_};
  ModelDiscovery discovery_{table_, rules_};
  NameResolution resolution_{table_};
};

}  // namespace sonic::detail
