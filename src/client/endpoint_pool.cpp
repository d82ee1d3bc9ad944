// sonic — a Client's endpoints: the slots, and the parts composed over them.
#include "client/endpoint_pool.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

namespace sonic::detail {

namespace {

// Destroys a transport once nobody else holds it (picks hold one only while sending).
void release(std::shared_ptr<Transport> transport) {
  while (transport && transport.use_count() > 1) std::this_thread::yield();
  transport.reset();
}

// Whether slot `i` refused the request `want` is for.
bool refused_by(const EndpointPool::PickFor& want, std::size_t i) {
  return want.refused &&
         std::find(want.refused->begin(), want.refused->end(), i) != want.refused->end();
}

}  // namespace

EndpointPool::EndpointPool(ClientOptions options, TimerQueue& timers)
    : table_(std::move(options), timers, this),
      balancer_(table_.options.routing.balancing),
      breaker_(table_.options.breaker),
      throttle_(table_.options.retry.budget),
      rules_(table_.options.routing) {
  for (const auto& url : table_.options.endpoints) {
    Endpoint endpoint = parse_endpoint(url).value();
    if (table_.options.resolution.each_address && !is_ip_literal(endpoint.host)) {
      resolution_.add_name(endpoint);
    } else {
      table_.new_slot().activate(url, table_.make_transport(endpoint).value());
    }
  }
}

EndpointPool::~EndpointPool() { close(); }

void EndpointPool::start() {
  // Aliasing pointers: each part's timer tasks and lookups keep the whole pool alive.
  auto self = shared_from_this();
  probes_.bind(std::shared_ptr<HealthProbes>(self, &probes_));
  discovery_.bind(std::shared_ptr<ModelDiscovery>(self, &discovery_));
  resolution_.bind(std::shared_ptr<NameResolution>(self, &resolution_));
  if (!resolution_.empty()) resolution_.schedule_lookup();
  if (rules_.discovering()) discovery_.discover();
}

void EndpointPool::close() {
  {
    std::unique_lock<std::mutex> lock(table_.mutex);
    if (table_.closed) return;
    table_.closed = true;
    // A lookup in progress calls the resolver and may log: both belong to the client, so
    // neither may run once it is gone. Wait for it.
    resolution_.wait_for_lookups(lock);
  }
  for (auto& slot : table_.slots) {
    std::shared_ptr<Transport> transport;
    {
      std::lock_guard<std::mutex> lock(table_.mutex);
      transport = std::move(slot->transport);
    }
    release(std::move(transport));
  }
}

bool EndpointPool::qualifies(const EndpointSlot& s, const ModelRef& ref, Clock::time_point now,
                             bool despite_refusal, bool despite_index) const {
  return s.state == SlotState::Active && !s.breaker.ejected &&
         rules_.admits(s.discovery, ref, now, despite_refusal, despite_index);
}

EndpointPool::Pick EndpointPool::pick(const ModelRef& model) { return pick(model, PickFor{}); }

EndpointPool::Pick EndpointPool::pick(const ModelRef& model, const PickFor& want) {
  Pick picked;
  bool stale = false;
  {
    std::lock_guard<std::mutex> lock(table_.mutex);
    const auto& slots = table_.slots;
    if (table_.closed || slots.empty()) return picked;
    const auto now = Clock::now();
    // The views live in members, so that a pick allocates nothing.
    auto& loads = pick_loads_;
    auto& eligible = pick_eligible_;
    loads.resize(slots.size());
    eligible.resize(slots.size());
    for (std::size_t i = 0; i < slots.size(); ++i) {
      loads[i] = {slots[i]->stats.outstanding, slots[i]->recent_latency_ns};
    }
    // What this attempt asks beyond the routing rules, whatever the pass.
    auto free_for_it = [&](std::size_t i) {
      const EndpointSlot& s = *slots[i];
      return now >= s.paused_until && !refused_by(want, i) &&
             (!want.retry || throttle_.allows_retry(s.budget));
    };
    PickPasses passes(balancer_, loads, want.avoid);
    // One pass: the slots `rule` admits.
    auto pass = [&](auto rule) {
      if (passes.settled()) return false;
      for (std::size_t i = 0; i < slots.size(); ++i) {
        eligible[i] = free_for_it(i) && rule(*slots[i]);
      }
      return passes.pass(eligible);
    };
    if (const auto* urls = preferred_urls(table_.options.routing, model.name)) {
      pass([&](const EndpointSlot& s) {
        return qualifies(s, model, now, false, false) &&
               is_preferred(
                   *urls, s.url,
                   s.name == EndpointSlot::kNoName ? nullptr : &resolution_.name_url(s.name));
      });
    }
    pass([&](const EndpointSlot& s) { return qualifies(s, model, now, false, false); });
    stale = pass([&](const EndpointSlot& s) { return qualifies(s, model, now, false, true); });
    // Every endpoint refused discovery: without a fallback, trying one beats refusing the
    // request outright (as the last endpoint stays in rotation after failures).
    if (!table_.options.fallback) {
      pass([&](const EndpointSlot& s) { return qualifies(s, model, now, true, true); });
    }
    const std::size_t best = passes.best();
    if (best == kNone) {
      explain_none(picked, model, want, now);
    } else {
      balancer_.picked(best);
      auto& stats = slots[best]->stats;
      ++stats.outstanding;
      ++stats.attempts;
      picked.slot = best;
      picked.transport = slots[best]->transport;
    }
  }
  if (stale) rediscover_soon();
  return picked;
}

void EndpointPool::explain_none(Pick& pick, const ModelRef& ref, const PickFor& want,
                                Clock::time_point now) const {
  const bool despite_refusal = !table_.options.fallback;
  for (std::size_t i = 0; i < table_.slots.size(); ++i) {
    const EndpointSlot& s = *table_.slots[i];
    if (refused_by(want, i) || !qualifies(s, ref, now, despite_refusal, true)) continue;
    if (want.retry && !throttle_.allows_retry(s.budget)) {
      pick.throttled = true;  // a pause would end, the budget would still refuse
    } else if (now < s.paused_until &&
               (pick.resumes == Clock::time_point{} || s.paused_until < pick.resumes)) {
      pick.resumes = s.paused_until;
    }
  }
}

bool EndpointPool::retry_throttled(const ModelRef& model, const PickFor& want) const {
  std::lock_guard<std::mutex> lock(table_.mutex);
  const auto now = Clock::now();
  bool throttled = false;
  for (std::size_t i = 0; i < table_.slots.size(); ++i) {
    const EndpointSlot& s = *table_.slots[i];
    if (refused_by(want, i) || !qualifies(s, model, now, !table_.options.fallback, true)) continue;
    if (throttle_.allows_retry(s.budget)) return false;
    throttled = true;
  }
  return throttled;
}

bool EndpointPool::awaiting_discovery(const ModelRef& ref) const {
  return discovery_.awaiting_discovery(ref);
}

std::string EndpointPool::why_unservable(const ModelRef& ref) const {
  return discovery_.why_unservable(ref);
}

void EndpointPool::rediscover_soon() { discovery_.rediscover_soon(); }

void EndpointPool::record(std::size_t slot, const AttemptReport& outcome, Clock::duration latency) {
  std::string ejected_url;
  {
    std::lock_guard<std::mutex> lock(table_.mutex);
    auto& s = *table_.slots[slot];
    auto& e = s.stats;
    --e.outstanding;
    if (outcome.ok) {
      ++e.successes;
      const auto ns = static_cast<double>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(latency).count());
      e.latency_ns += static_cast<std::uint64_t>(ns);
      s.recent_latency_ns = EndpointBalancer::latency_after_success(s.recent_latency_ns, ns);
      breaker_.succeeded(s.breaker);
      throttle_.succeeded(s.budget);
      return;
    }
    ++e.failures;
    if (outcome.retryable_failure) throttle_.failed(s.budget);
    if (outcome.refusal) ++e.refusals;
    if (outcome.pushback) {
      ++e.pushbacks;
      // kNoRetry is about the one request ("do not retry"), not a pause of the endpoint.
      if (*outcome.pushback != Error::kNoRetry) {
        const std::chrono::milliseconds pause = std::clamp<std::chrono::milliseconds>(
            *outcome.pushback, std::chrono::milliseconds(0), kMaxPushback);
        s.paused_until = std::max(s.paused_until, Clock::now() + pause);
      }
    }
    s.recent_latency_ns = EndpointBalancer::latency_after_failure(s.recent_latency_ns);
    if (!outcome.server_failure || s.state != SlotState::Active) return;
    const bool can_eject =
        EndpointBreaker::may_eject(table_.in_rotation(), table_.options.fallback != nullptr);
    if (breaker_.failed(s.breaker, can_eject, Clock::now())) {
      ++e.ejections;
      ejected_url = s.url;
    }
  }
  if (!ejected_url.empty()) {
    table_.log(LogLevel::Warning, "endpoint " + ejected_url + " ejected after " +
                                      std::to_string(breaker_.options().failures_to_eject) +
                                      " consecutive failures");
    probes_.schedule();
  }
}

void EndpointPool::lacks_model(std::size_t slot, const ModelRef& model) {
  std::lock_guard<std::mutex> lock(table_.mutex);
  table_.slots[slot]->discovery.missing_models[model] =
      Clock::now() + table_.options.breaker.model_recheck;
}

std::shared_ptr<Transport> EndpointPool::control_transport() {
  auto all = control_transports();
  return all.empty() ? nullptr : all.front();
}

std::vector<std::shared_ptr<Transport>> EndpointPool::control_transports() {
  std::lock_guard<std::mutex> lock(table_.mutex);
  std::vector<std::shared_ptr<Transport>> healthy, ejected;
  for (auto& slot : table_.slots) {
    if (slot->state != SlotState::Active) continue;
    (slot->breaker.ejected ? ejected : healthy).push_back(slot->transport);
  }
  healthy.insert(healthy.end(), ejected.begin(), ejected.end());
  return healthy;
}

std::size_t EndpointPool::active() const {
  std::lock_guard<std::mutex> lock(table_.mutex);
  std::size_t n = 0;
  for (const auto& slot : table_.slots) n += slot->state == SlotState::Active ? 1 : 0;
  return n;
}

std::string EndpointPool::url(std::size_t slot) const {
  std::lock_guard<std::mutex> lock(table_.mutex);
  return slot < table_.slots.size() ? table_.slots[slot]->url : std::string();
}

std::vector<EndpointStats> EndpointPool::stats() const {
  std::lock_guard<std::mutex> lock(table_.mutex);
  std::vector<EndpointStats> all;
  for (const auto& slot : table_.slots) {
    if (slot->state == SlotState::Vacant) continue;
    all.push_back(slot->stats);
    all.back().url = slot->url;
    all.back().healthy = slot->state == SlotState::Active && !slot->breaker.ejected;
    all.back().retry_tokens = throttle_.tokens(slot->budget);
  }
  return all;
}

}  // namespace sonic::detail
