// Model discovery's decisions: whether an index lists a model (and version), what an endpoint
// that refused the question, or reports another configuration than the pinned one, may serve.
#include "client/model_discovery.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using sonic::Clock;
using sonic::Error;
using sonic::ModelIndex;
using sonic::ModelRef;
using sonic::ModelState;
using sonic::Result;
using sonic::Routing;
using sonic::StatusCode;
using sonic::detail::DiscoveryRules;
using sonic::detail::DiscoveryState;

namespace {

const std::string kJetsConfig = R"({"name":"jets","max_batch_size":8})";

Routing pinned_jets(std::string version = {}) {
  Routing routing;
  routing.pins["jets"] = {std::move(version), sonic::model_config_checksum(kJetsConfig)};
  return routing;
}

bool admits_now(const DiscoveryRules& rules, const DiscoveryState& state, const ModelRef& ref) {
  return rules.admits(state, ref, Clock::now(), false, false);
}

}  // namespace

TEST_CASE("an index lists a model by name, and by version when both name one") {
  const auto ready = DiscoveryRules::ready_models({{"jets", "1", ModelState::Ready, ""},
                                                   {"jets", "2", ModelState::Unavailable, "oom"},
                                                   {"taus", "", ModelState::Unknown, ""},
                                                   {"met", "3", ModelState::Loading, ""}});
  CHECK(DiscoveryRules::lists(ready, {"jets", ""}));
  CHECK(DiscoveryRules::lists(ready, {"jets", "1"}));
  CHECK_FALSE(DiscoveryRules::lists(ready, {"jets", "2"}));  // not ready
  CHECK(DiscoveryRules::lists(ready, {"taus", "7"}));        // the index names no version
  CHECK_FALSE(DiscoveryRules::lists(ready, {"met", ""}));    // loading
  CHECK_FALSE(DiscoveryRules::lists(ready, {"other", ""}));
}

TEST_CASE("an endpoint takes only the models its index lists, once it answered") {
  Routing routing;
  routing.discovery_interval = 1s;
  const DiscoveryRules rules(routing);
  CHECK(rules.discovering());
  DiscoveryState state;
  CHECK(admits_now(rules, state, {"jets", ""}));  // not answered yet: tried as without discovery
  const std::vector<ModelIndex> index{{"jets", "1", ModelState::Ready, ""}};
  auto outcome = rules.took_index(state, "fake://a", index);
  CHECK_FALSE(outcome.failed);
  CHECK(admits_now(rules, state, {"jets", "1"}));
  CHECK_FALSE(admits_now(rules, state, {"jets", "2"}));
  CHECK_FALSE(admits_now(rules, state, {"taus", ""}));
  CHECK(rules.admits(state, {"taus", ""}, Clock::now(), false, true));  // despite the index
  CHECK(rules.why_not(state, {"taus", ""}) == "does not list the model as ready");
}

TEST_CASE("an endpoint that refuses discovery takes nothing until it answers again") {
  Routing routing;
  routing.discovery_interval = 1s;
  const DiscoveryRules rules(routing);
  DiscoveryState state;
  state.index_pending = true;
  const Result<std::vector<ModelIndex>> refusal =
      Error(StatusCode::ResourceExhausted, "servers overloaded");
  auto first = rules.took_index(state, "fake://a", refusal);
  CHECK(first.failed);
  CHECK(first.message.find("refused model discovery (servers overloaded)") != std::string::npos);
  CHECK_FALSE(state.index_pending);
  CHECK_FALSE(admits_now(rules, state, {"jets", ""}));
  CHECK(rules.admits(state, {"jets", ""}, Clock::now(), true, true));  // the last resort
  CHECK(rules.why_not(state, {"jets", ""}) == "refused model discovery (servers overloaded)");
  CHECK(rules.took_index(state, "fake://a", refusal).message.empty());  // said once

  auto back = rules.took_index(state, "fake://a",
                               std::vector<ModelIndex>{{"jets", "", ModelState::Unknown, ""}});
  CHECK_FALSE(back.failed);
  CHECK(back.message == "endpoint fake://a answers model discovery again");
  CHECK(admits_now(rules, state, {"jets", ""}));
  CHECK(rules.why_not(state, {"jets", ""}).empty());
}

TEST_CASE("an endpoint without the repository extension is no refusal") {
  const DiscoveryRules rules(pinned_jets());
  DiscoveryState state;
  auto outcome = rules.took_index(state, "fake://a",
                                  Error(StatusCode::Unimplemented, "no repository extension"));
  CHECK_FALSE(outcome.failed);
  CHECK_FALSE(state.refused);
  CHECK(outcome.to_check == std::vector<std::string>{"jets"});  // asked all the same
}

TEST_CASE("a pinned checksum excludes an endpoint until it reports that configuration") {
  const DiscoveryRules rules(pinned_jets("1"));
  CHECK(rules.discovering());  // a pin with a checksum asks, without an interval
  REQUIRE(rules.pinned_checksum("jets") != nullptr);
  CHECK(rules.pinned_checksum("taus") == nullptr);
  DiscoveryState state;
  CHECK_FALSE(admits_now(rules, state, {"jets", "1"}));  // nothing reported yet
  CHECK(admits_now(rules, state, {"taus", ""}));         // not pinned: unchecked
  CHECK(rules.why_not(state, {"jets", "1"}) == "has not reported its configuration yet");

  auto outcome = rules.took_index(state, "fake://a",
                                  std::vector<ModelIndex>{{"jets", "1", ModelState::Ready, ""}});
  CHECK(outcome.to_check == std::vector<std::string>{"jets"});
  CHECK(rules.awaiting(state, "jets"));
  CHECK_FALSE(rules.awaiting(state, "taus"));

  const std::string other = R"({"name":"jets","max_batch_size":4})";
  const std::string warning = rules.took_config(state, "fake://a", "jets", other);
  CHECK(warning.find("configuration checksum " + sonic::model_config_checksum(other)) !=
        std::string::npos);
  CHECK_FALSE(rules.awaiting(state, "jets"));
  CHECK_FALSE(admits_now(rules, state, {"jets", "1"}));
  CHECK_FALSE(rules.admits(state, {"jets", "1"}, Clock::now(), true, true));  // never
  CHECK(rules.why_not(state, {"jets", "1"}).find("pinned " + *rules.pinned_checksum("jets")) !=
        std::string::npos);
  CHECK(rules.took_config(state, "fake://a", "jets", other).empty());  // said once

  CHECK(rules.took_config(state, "fake://a", "jets", kJetsConfig).empty());
  CHECK(admits_now(rules, state, {"jets", "1"}));

  // A failed question counts as no configuration.
  CHECK(rules.took_config(state, "fake://a", "jets", Error(StatusCode::Unavailable, "reset"))
            .find("no configuration (reset)") != std::string::npos);
  CHECK_FALSE(admits_now(rules, state, {"jets", "1"}));
}

TEST_CASE("a pinned model its index does not list is not asked about") {
  const DiscoveryRules rules(pinned_jets("2"));
  DiscoveryState state;
  auto outcome = rules.took_index(state, "fake://a",
                                  std::vector<ModelIndex>{{"jets", "1", ModelState::Ready, ""}});
  CHECK(outcome.to_check.empty());
  CHECK(state.config_pending.empty());
}

TEST_CASE("a NOT_FOUND keeps the model from the endpoint until its recheck time") {
  const DiscoveryRules rules(Routing{});
  CHECK_FALSE(rules.discovering());
  DiscoveryState state;
  const auto now = Clock::now();
  state.missing_models[{"jets", ""}] = now + 10s;
  CHECK_FALSE(rules.admits(state, {"jets", ""}, now, true, true));
  CHECK(rules.admits(state, {"jets", "1"}, now, false, false));  // another version
  CHECK(rules.admits(state, {"jets", ""}, now + 11s, false, false));
}
