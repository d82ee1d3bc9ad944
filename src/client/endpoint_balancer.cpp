// sonic — balancing: which of the endpoints that may serve a request takes it.
#include "client/endpoint_balancer.hpp"

#include <algorithm>

namespace sonic::detail {

EndpointBalancer::EndpointBalancer(Balancing balancing, std::uint_fast32_t seed)
    : balancing_(balancing), random_(seed) {}

std::size_t EndpointBalancer::choose(const std::vector<EndpointLoad>& loads,
                                     const std::vector<bool>& eligible, std::size_t avoid) {
  const std::size_t n = std::min(loads.size(), eligible.size());
  if (n == 0) return kNone;
  if (balancing_ == Balancing::PowerOfTwoChoices) {
    // Two distinct eligible slots, drawn uniformly (reservoir sampling in one pass).
    std::size_t first = kNone, second = kNone, seen = 0, avoided = kNone;
    for (std::size_t i = 0; i < n; ++i) {
      if (!eligible[i]) continue;
      if (i == avoid) {
        avoided = i;
        continue;
      }
      ++seen;
      if (seen == 1) {
        first = i;
      } else if (seen == 2) {
        second = i;
      } else {
        std::uniform_int_distribution<std::size_t> draw(0, seen - 1);
        const std::size_t at = draw(random_);
        if (at == 0)
          first = i;
        else if (at == 1)
          second = i;
      }
    }
    if (first == kNone) return avoided;
    if (second == kNone) return first;
    return load_score(loads[second]) < load_score(loads[first]) ? second : first;
  }
  std::size_t best = kNone;
  auto better = [&](std::size_t i) {
    if (best == kNone) return true;
    if ((i == avoid) != (best == avoid)) return best == avoid;
    return loads[i].outstanding < loads[best].outstanding;
  };
  // The scan starts after the slot picked last, so that ties take turns over the slots that
  // qualify: a pass that finds none, or a slot that is out, moves no turn on.
  const std::size_t start = (last_picked_ + 1) % n;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (start + k) % n;
    if (eligible[i] && better(i)) best = i;
  }
  return best;
}

double EndpointBalancer::load_score(const EndpointLoad& load) {
  return static_cast<double>(load.outstanding + 1) *
         (load.recent_latency_ns > 0 ? load.recent_latency_ns : 1.0);
}

double EndpointBalancer::latency_after_success(double recent_ns, double latency_ns) {
  return recent_ns == 0 ? latency_ns : 0.8 * recent_ns + 0.2 * latency_ns;
}

double EndpointBalancer::latency_after_failure(double recent_ns) {
  return std::min(1e10, std::max(2 * recent_ns, 1e6));
}

PickPasses::PickPasses(EndpointBalancer& balancer, const std::vector<EndpointLoad>& loads,
                       std::size_t avoid)
    : balancer_(balancer), loads_(loads), avoid_(avoid) {}

bool PickPasses::pass(const std::vector<bool>& eligible) {
  if (settled()) return false;
  const std::size_t found = balancer_.choose(loads_, eligible, avoid_);
  if (found == EndpointBalancer::kNone || (found == avoid_ && best_ != EndpointBalancer::kNone))
    return false;
  best_ = found;
  return found != avoid_;
}

const std::vector<std::string>* preferred_urls(const Routing& routing, const std::string& model) {
  if (routing.preferred.empty()) return nullptr;
  auto it = routing.preferred.find(model);
  return it == routing.preferred.end() ? nullptr : &it->second;
}

bool is_preferred(const std::vector<std::string>& preferred, const std::string& url,
                  const std::string* name_url) {
  auto listed = [&](const std::string& u) {
    return std::find(preferred.begin(), preferred.end(), u) != preferred.end();
  };
  return listed(url) || (name_url != nullptr && listed(*name_url));
}

}  // namespace sonic::detail
