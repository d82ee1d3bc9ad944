// The endpoint pool's parts at work together, against fake:// servers: the breaker ejects a
// failing endpoint and its probes bring it back; discovery keeps requests from an endpoint that
// refuses it until it answers again; an injected resolver's addresses join and drain. (These
// need the fake transport, which the unit tests do not link; the parts' pure decisions are
// tested in tests/unit/test_endpoint_*.cpp and test_model_discovery.cpp.)
#include "client/endpoint_pool.hpp"

#include <doctest/doctest.h>

#include <sonic/builtin_models.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "eventually.hpp"
#include "fake_transport.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;
using sonic::ModelRef;
using sonic::detail::EndpointPool;

namespace {

// A started pool, closed at the end of the test.
struct StartedPool {
  explicit StartedPool(ClientOptions options)
      : timers(detail::TimerQueue::shared()),
        pool(std::make_shared<EndpointPool>(std::move(options), *timers)) {
    pool->start();
  }
  ~StartedPool() { pool->close(); }
  StartedPool(const StartedPool&) = delete;
  StartedPool& operator=(const StartedPool&) = delete;

  std::shared_ptr<detail::TimerQueue> timers;
  std::shared_ptr<EndpointPool> pool;
};

const ModelRef kSimpleModel{"simple", ""};

// One attempt at `model`: the URL picked ("" when none), reported a success unless it is
// `failing` (then a server failure).
std::string attempt_at(EndpointPool& pool, const std::string& failing = {},
                       const ModelRef& model = kSimpleModel) {
  auto pick = pool.pick(model);
  if (!pick) return {};
  const std::string url = pool.url(pick.slot);
  EndpointPool::AttemptReport report;
  report.ok = url != failing;
  report.server_failure = !report.ok;
  pool.record(pick.slot, report, 1ms);
  return url;
}

const EndpointStats* stats_of(const std::vector<EndpointStats>& all, const std::string& url) {
  auto it = std::find_if(all.begin(), all.end(), [&](const auto& e) { return e.url == url; });
  return it == all.end() ? nullptr : &*it;
}

bool healthy_in(const EndpointPool& pool, const std::string& url) {
  auto all = pool.stats();
  const auto* e = stats_of(all, url);
  return e != nullptr && e->healthy;
}

std::vector<std::string> pool_urls(const EndpointPool& pool) {
  std::vector<std::string> urls;
  for (const auto& e : pool.stats()) urls.push_back(e.url);
  std::sort(urls.begin(), urls.end());
  return urls;
}

}  // namespace

TEST_CASE("pool: consecutive failures eject an endpoint, and a probe brings it back") {
  FakeServer a("pool-breaker-a"), b("pool-breaker-b");
  ClientOptions options;
  options.endpoints = {a.url(), b.url()};
  options.breaker.failures_to_eject = 2;
  options.breaker.cool_down = 30ms;
  options.breaker.probe_interval = 5ms;
  a.set_down(true);  // its probes answer "not ready" until it is up again
  StartedPool p(options);
  auto& pool = *p.pool;

  int failures = 0;
  for (int i = 0; i < 10 && healthy_in(pool, a.url()); ++i) {
    failures += attempt_at(pool, a.url()) == a.url() ? 1 : 0;
  }
  CHECK(failures == 2);
  CHECK_FALSE(healthy_in(pool, a.url()));
  CHECK(stats_of(pool.stats(), a.url())->ejections == 1);
  for (int i = 0; i < 10; ++i) CHECK(attempt_at(pool, a.url()) == b.url());
  // Control calls try the healthy first.
  CHECK(pool.control_transports().size() == 2);

  REQUIRE(eventually([&] { return a.readiness_probes() >= 2; }));
  CHECK_FALSE(healthy_in(pool, a.url()));  // probed, not ready: rests again
  a.set_down(false);
  REQUIRE(eventually([&] { return healthy_in(pool, a.url()); }));
  bool reached_a = false;
  for (int i = 0; i < 4; ++i) reached_a = reached_a || attempt_at(pool) == a.url();
  CHECK(reached_a);
}

TEST_CASE("pool: the last endpoint in rotation stays, unless there is a fallback") {
  FakeServer a("pool-last-a");
  ClientOptions options;
  options.endpoints = {a.url()};
  options.breaker.failures_to_eject = 1;
  options.breaker.probe_interval = 5ms;
  SUBCASE("without a fallback") {
    StartedPool p(options);
    for (int i = 0; i < 5; ++i) CHECK(attempt_at(*p.pool, a.url()) == a.url());
    CHECK(healthy_in(*p.pool, a.url()));
  }
  SUBCASE("with a fallback") {
    options.fallback = CpuExecutor::with_models({models::simple()}, 1);
    options.breaker.cool_down = 10s;  // no probe within the test
    StartedPool p(options);
    CHECK(attempt_at(*p.pool, a.url()) == a.url());
    CHECK_FALSE(healthy_in(*p.pool, a.url()));
    CHECK(attempt_at(*p.pool).empty());  // nothing left: the fallback's turn
  }
}

TEST_CASE("pool: an endpoint that refuses discovery gets no requests until it answers again") {
  FakeServer a("pool-discovery-a"), b("pool-discovery-b");
  a.refuse_discovery(Error(StatusCode::ResourceExhausted, "busy"));
  ClientOptions options;
  options.endpoints = {a.url(), b.url()};
  options.routing.discovery_interval = 20ms;
  StartedPool p(options);
  auto& pool = *p.pool;
  // The answers arrive on the completion thread.
  REQUIRE(eventually([&] {
    const std::string why = pool.why_unservable({"absent", ""});
    return why.find(a.url() + ": refused model discovery (busy)") != std::string::npos &&
           why.find(b.url() + ": does not list the model as ready") != std::string::npos;
  }));
  for (int i = 0; i < 10; ++i) CHECK(attempt_at(pool) == b.url());
  CHECK(pool.why_unservable(kSimpleModel).find(b.url()) == std::string::npos);

  a.refuse_discovery(std::nullopt);
  REQUIRE(eventually([&] { return attempt_at(pool) == a.url(); }));
  CHECK(pool.why_unservable(kSimpleModel).empty());
}

TEST_CASE("pool: an endpoint that reports no pinned configuration gets no requests") {
  FakeServer a("pool-pinned-a");  // answers no ModelConfig (UNIMPLEMENTED)
  ClientOptions options;
  options.endpoints = {a.url()};
  options.routing.pins["simple"] = {"", "0123456789abcdef"};
  StartedPool p(options);
  auto& pool = *p.pool;
  REQUIRE(eventually([&] { return !pool.awaiting_discovery(kSimpleModel); }));
  CHECK(attempt_at(pool).empty());
  CHECK(pool.why_unservable(kSimpleModel).find("pinned 0123456789abcdef") != std::string::npos);
  CHECK_FALSE(pool.awaiting_discovery({"identity_fp32", ""}));  // not pinned
  CHECK(attempt_at(pool, {}, {"identity_fp32", ""}) == a.url());
}

TEST_CASE("pool: a name's addresses join and drain as the resolver's answer changes") {
  FakeServer ra("pool-res-a"), rb("pool-res-b"), rc("pool-res-c");
  std::mutex mutex;  // before the pool: its lookups end before these go
  std::vector<std::string> addresses{"pool-res-a:1", "pool-res-b:1"};
  ClientOptions options;
  options.endpoints = {"fake://pool-res.svc:8001"};
  options.resolution.each_address = true;
  options.resolution.interval = 10ms;
  options.resolution.max_addresses = 2;
  options.resolution.resolver = [&](const std::string& host,
                                    std::uint16_t port) -> Result<std::vector<std::string>> {
    if (host != "pool-res.svc" || port != 8001) return Error(StatusCode::Unavailable, "no host");
    std::lock_guard<std::mutex> lock(mutex);
    return addresses;
  };
  auto set = [&](std::vector<std::string> now) {
    std::lock_guard<std::mutex> lock(mutex);
    addresses = std::move(now);
  };
  StartedPool p(options);
  auto& pool = *p.pool;
  using Urls = std::vector<std::string>;
  CHECK(pool_urls(pool) == Urls{ra.url() + ":1", rb.url() + ":1"});  // looked up at once
  CHECK(pool.active() == 2);

  set({"pool-res-b:1", "pool-res-c:1"});  // a drains, c joins
  REQUIRE(eventually([&] { return pool_urls(pool) == Urls{rb.url() + ":1", rc.url() + ":1"}; }));
  CHECK(pool.active() == 2);
  for (int i = 0; i < 6; ++i) CHECK(attempt_at(pool) != ra.url() + ":1");

  set({"pool-res-a:1", "pool-res-b:1", "pool-res-c:1"});  // the first max_addresses only
  REQUIRE(eventually([&] { return pool_urls(pool) == Urls{ra.url() + ":1", rb.url() + ":1"}; }));
  CHECK(pool.active() == 2);
}
