// sonic — the state an EndpointPool's parts share: one record per endpoint slot, and the one
// mutex, the options and the timers they work under.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "client/endpoint_breaker.hpp"
#include "client/model_discovery.hpp"
#include "client/retry_throttle.hpp"
#include "client/timer_queue.hpp"
#include "sonic/options.hpp"
#include "sonic/stats.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

/// Where an endpoint slot is in its life: taking requests, finishing its last ones after its
/// address left a name's rotation, or free for another address.
enum class SlotState { Active, Draining, Vacant };

/// One endpoint slot. Every field is guarded by SlotTable::mutex.
struct EndpointSlot {
  static constexpr std::size_t kNoName = SIZE_MAX;

  SlotState state = SlotState::Vacant;
  std::string url;
  std::size_t name = kNoName;  ///< the host name it is an address of (NameResolution)
  std::shared_ptr<Transport> transport;
  EndpointStats stats;
  double recent_latency_ns = 0;  ///< moving average (EndpointBalancer)
  BreakerState breaker;
  DiscoveryState discovery;
  BudgetState budget;                ///< its retry tokens (RetryThrottle)
  Clock::time_point paused_until{};  ///< no attempt before this: the server pushed back

  /// Makes it an active endpoint for `endpoint_url` over `endpoint_transport`, with everything
  /// learnt of its previous address forgotten.
  void activate(std::string endpoint_url, std::shared_ptr<Transport> endpoint_transport) {
    state = SlotState::Active;
    url = std::move(endpoint_url);
    transport = std::move(endpoint_transport);
    stats = EndpointStats{};
    recent_latency_ns = 0;
    breaker = BreakerState{};
    discovery = DiscoveryState{};
    budget = BudgetState{};
    paused_until = Clock::time_point{};
  }
};

/// An EndpointPool's slots and what its parts (HealthProbes, ModelDiscovery, NameResolution)
/// need to work on them. The slots vector is fixed after construction (slots keep their index
/// for the pool's life); their contents and `closed` are guarded by `mutex`.
struct SlotTable {
  SlotTable(ClientOptions client_options, TimerQueue& timer_queue, const void* owner)
      : options(std::move(client_options)), timers(timer_queue), timer_owner(owner) {}

  const ClientOptions options;  ///< a copy: a detached lookup may outlive the client
  TimerQueue& timers;           ///< valid until close(); not used after it
  const void* const timer_owner;
  mutable std::mutex mutex;
  bool closed = false;
  std::vector<std::unique_ptr<EndpointSlot>> slots;

  /// Construction only (slots grow only before the pool starts, while no other thread sees it).
  EndpointSlot& new_slot() {
    slots.push_back(std::make_unique<EndpointSlot>());
    return *slots.back();
  }
  /// Endpoints active and not ejected. Under `mutex`.
  std::size_t in_rotation() const {
    std::size_t n = 0;
    for (const auto& slot : slots) n += slot->state == SlotState::Active && !slot->breaker.ejected;
    return n;
  }
  /// Hands `message` to the client's log hook, if any. Any thread, with or without `mutex`.
  void log(LogLevel level, const std::string& message) const {
    if (options.log) options.log(level, message);
  }
  /// A transport for `endpoint` from the scheme registry; an error for an unlinked scheme.
  Result<std::shared_ptr<Transport>> make_transport(const Endpoint& endpoint) const {
    auto transport = transport_registry().create(endpoint, options);
    if (!transport) return transport.error();
    return std::shared_ptr<Transport>(std::move(*transport));
  }
};

}  // namespace sonic::detail
