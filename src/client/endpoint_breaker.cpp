// sonic — the circuit breaker's decisions and the health probes of ejected endpoints.
#include "client/endpoint_breaker.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "client/endpoint_slots.hpp"

namespace sonic::detail {

bool EndpointBreaker::failed(BreakerState& state, bool can_eject, Clock::time_point now) const {
  state.consecutive_failures = std::min(state.consecutive_failures + 1, options_.failures_to_eject);
  if (state.consecutive_failures < options_.failures_to_eject || state.ejected || !can_eject) {
    return false;
  }
  state.ejected = true;
  state.rest_until = now + options_.cool_down;
  return true;
}

bool EndpointBreaker::start_probe(BreakerState& state, Clock::time_point now) const {
  if (!state.ejected || state.probing || now < state.rest_until) return false;
  state.probing = true;
  return true;
}

bool EndpointBreaker::probed(BreakerState& state, bool ready, Clock::time_point now) const {
  state.probing = false;
  if (ready) {
    state.ejected = false;
    state.consecutive_failures = 0;
    return true;
  }
  state.rest_until = now + options_.cool_down;
  return false;
}

void HealthProbes::bind(std::weak_ptr<HealthProbes> self) {
  std::lock_guard<std::mutex> lock(table_.mutex);
  self_ = std::move(self);
}

void HealthProbes::schedule() {
  std::lock_guard<std::mutex> lock(table_.mutex);
  if (table_.closed || scheduled_) return;
  scheduled_ = true;
  table_.timers.schedule(table_.timer_owner, Clock::now() + breaker_.options().probe_interval,
                         [weak = self_] {
                           if (auto self = weak.lock()) self->probe();
                         });
}

void HealthProbes::probe() {
  std::vector<std::pair<std::size_t, std::shared_ptr<Transport>>> due;
  bool any_ejected = false;
  {
    std::lock_guard<std::mutex> lock(table_.mutex);
    scheduled_ = false;
    if (table_.closed) return;
    const auto now = Clock::now();
    for (std::size_t i = 0; i < table_.slots.size(); ++i) {
      auto& s = *table_.slots[i];
      if (s.state != SlotState::Active || !s.breaker.ejected) continue;
      any_ejected = true;
      if (breaker_.start_probe(s.breaker, now)) due.emplace_back(i, s.transport);
    }
  }
  for (auto& [i, transport] : due) {
    transport->server_ready_async(
        Clock::now() + breaker_.options().cool_down, [this, i = i](Result<bool> ready) {
          std::string back;
          {
            std::lock_guard<std::mutex> lock(table_.mutex);
            auto& s = *table_.slots[i];
            if (breaker_.probed(s.breaker, ready && *ready, Clock::now())) back = s.url;
          }
          if (!back.empty())
            table_.log(LogLevel::Info, "endpoint " + back + " is back in rotation");
        });
  }
  if (any_ejected) schedule();
}

}  // namespace sonic::detail
