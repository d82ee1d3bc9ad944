// sonic — balancing: which of the endpoints that may serve a request takes it
// (ClientOptions::routing.balancing), decided over a view of their loads. No lock, no transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/routing.hpp"

namespace sonic::detail {

/// What the balancer sees of one endpoint slot.
struct EndpointLoad {
  std::uint64_t outstanding = 0;  ///< attempts in flight there
  double recent_latency_ns = 0;   ///< moving average of its latency; 0 while unmeasured
};

/// Chooses among endpoint slots, by index. Not thread-safe: the caller serialises its calls
/// (EndpointPool calls it under its mutex).
class EndpointBalancer {
 public:
  static constexpr std::size_t kNone = SIZE_MAX;

  /// `seed` feeds PowerOfTwoChoices' draws (a test fixes it; the pool draws one).
  explicit EndpointBalancer(Balancing balancing, std::uint_fast32_t seed = std::random_device{}());

  /// Of the slots `eligible` admits (`loads` and `eligible` have one entry per slot): with
  /// LeastOutstanding the one with the fewest attempts in flight, ties taking turns after the
  /// slot picked() last; with PowerOfTwoChoices the lower load_score() of two drawn at random.
  /// `avoid` only when no other slot is eligible. kNone when none is.
  std::size_t choose(const std::vector<EndpointLoad>& loads, const std::vector<bool>& eligible,
                     std::size_t avoid);

  /// `slot` took the request: LeastOutstanding's next scan starts after it.
  void picked(std::size_t slot) { last_picked_ = slot; }

  /// How long a new request would take there, roughly: the requests in flight and this one,
  /// times the recent latency (an endpoint not measured yet counts as fast, to be tried).
  static double load_score(const EndpointLoad& load);
  /// The moving average after a success that took `latency_ns`.
  static double latency_after_success(double recent_ns, double latency_ns);
  /// The moving average after a failure: a failure looks slow, so that an endpoint that fails
  /// fast does not look like the fastest (at least 1 ms, at most 10 s).
  static double latency_after_failure(double recent_ns);

 private:
  Balancing balancing_;
  std::size_t last_picked_ = kNone;
  std::mt19937 random_;
};

/// One pick's passes, from the strictest rule to the loosest. A pass's choice is taken unless
/// an earlier pass found a slot other than `avoid`; `avoid` itself is taken only when no pass
/// finds another. Not thread-safe (one pick, on the caller's thread, under the pool's mutex).
class PickPasses {
 public:
  /// `balancer` and `loads` must outlive this.
  PickPasses(EndpointBalancer& balancer, const std::vector<EndpointLoad>& loads, std::size_t avoid);

  /// Runs a pass over the slots `eligible` admits, unless settled(). True when this pass's
  /// choice was taken and is not `avoid`.
  bool pass(const std::vector<bool>& eligible);
  /// Whether a pass found a slot other than `avoid` (later passes change nothing).
  bool settled() const { return best_ != EndpointBalancer::kNone && best_ != avoid_; }
  /// The slot chosen so far; EndpointBalancer::kNone when none.
  std::size_t best() const { return best_; }

 private:
  EndpointBalancer& balancer_;
  const std::vector<EndpointLoad>& loads_;
  std::size_t avoid_;
  std::size_t best_ = EndpointBalancer::kNone;
};

/// The endpoint URLs `routing` prefers for `model`; null when it names none. Pure.
const std::vector<std::string>* preferred_urls(const Routing& routing, const std::string& model);

/// Whether an endpoint is among `preferred`: by its own URL, or by the URL of the host name it
/// is an address of (`name_url`, null when it is none). Pure.
bool is_preferred(const std::vector<std::string>& preferred, const std::string& url,
                  const std::string* name_url);

}  // namespace sonic::detail
