// Host names standing for several servers (Resolution::each_address): every address is an
// endpoint, and lookups repeated while requests run add and drain endpoints without losing any.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "loopback_server.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

// A discovery service the test rewrites: the addresses a name stands for now.
class FakeDns {
 public:
  void set(std::vector<std::string> addresses) {
    std::lock_guard<std::mutex> lock(mutex_);
    addresses_ = std::move(addresses);
    failing_ = false;
  }
  void fail() {
    std::lock_guard<std::mutex> lock(mutex_);
    failing_ = true;
  }
  int lookups() const { return lookups_; }

  Resolver resolver() {
    return [this](const std::string& host, std::uint16_t) -> Result<std::vector<std::string>> {
      ++lookups_;
      std::lock_guard<std::mutex> lock(mutex_);
      if (failing_ || host != "inference.svc") {
        return Error(StatusCode::Unavailable, "no such host '" + host + "'");
      }
      return addresses_;
    };
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> addresses_;
  bool failing_ = false;
  std::atomic<int> lookups_{0};
};

std::string address_of(const LoopbackServer& server) {
  return "127.0.0.1:" + std::to_string(server.port());
}

std::vector<std::string> endpoint_urls(const Client& client) {
  std::vector<std::string> urls;
  for (const auto& e : client.stats().endpoints) urls.push_back(e.url);
  std::sort(urls.begin(), urls.end());
  return urls;
}

ClientOptions each_address(FakeDns& dns) {
  ClientOptions options;
  options.resolution.each_address = true;
  options.resolution.interval = 100ms;
  options.resolution.resolver = dns.resolver();
  return options;
}

}  // namespace

TEST_CASE("every address of a name is an endpoint, and requests balance over them") {
  LoopbackServer a, b;
  FakeDns dns;
  dns.set({address_of(a), address_of(b)});
  Client client("grpc://inference.svc:8001", each_address(dns));
  auto urls = endpoint_urls(client);
  std::vector<std::string> expected{"grpc://" + address_of(a), "grpc://" + address_of(b)};
  std::sort(expected.begin(), expected.end());
  CHECK(urls == expected);

  std::vector<std::future<InferResult>> futures;
  for (int i = 0; i < 200; ++i) futures.push_back(client.infer_future(simple_request(i, 1)));
  for (int i = 0; i < 200; ++i) {
    CHECK(futures[i].get().output("OUTPUT0").as<std::int32_t>()[0] == i + 1);
  }
  for (const auto& e : client.stats().endpoints) CHECK(e.successes > 20);
}

TEST_CASE("lookups repeated under load: addresses join and drain, no request is lost") {
  LoopbackServer a, b, c;
  FakeDns dns;
  dns.set({address_of(a)});
  Client client("grpc://inference.svc:8001", each_address(dns));
  CHECK(endpoint_urls(client) == std::vector<std::string>{"grpc://" + address_of(a)});

  // Load on paced_fp32 (5 ms per call on the server) while the name's addresses change.
  std::atomic<bool> stop{false};
  std::atomic<int> sent{0}, ok{0}, failed{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 3; ++t) {
    load.emplace_back([&] {
      std::vector<float> data{1, 2, 3, 4};
      while (!stop) {
        ++sent;
        try {
          auto r =
              client.infer(InferRequest("paced_fp32").input("INPUT0", Tensor::view(data, {2, 2})));
          if (r.output("OUTPUT0").as<float>()[3] == 4.0f) ++ok;
        } catch (const Error& e) {
          ++failed;
          MESSAGE("failed: " << e.what());
        }
      }
    });
  }
  auto urls_are = [&](std::vector<const LoopbackServer*> servers) {
    std::vector<std::string> expected;
    for (auto* s : servers) expected.push_back("grpc://" + address_of(*s));
    std::sort(expected.begin(), expected.end());
    return eventually([&] { return endpoint_urls(client) == expected; });
  };
  std::this_thread::sleep_for(100ms);
  dns.set({address_of(a), address_of(b)});
  CHECK(urls_are({&a, &b}));
  std::this_thread::sleep_for(200ms);
  dns.set({address_of(b), address_of(c)});  // a leaves: it drains, then closes
  CHECK(urls_are({&b, &c}));
  auto served_by_a = a.executor().statistics("paced_fp32");
  std::this_thread::sleep_for(300ms);
  dns.fail();  // a failed lookup keeps the known addresses
  std::this_thread::sleep_for(300ms);
  CHECK(urls_are({&b, &c}));
  stop = true;
  for (auto& t : load) t.join();

  CHECK(failed == 0);
  CHECK(ok == sent);
  CHECK(dns.lookups() >= 5);
  // Nothing went to a after it left.
  CHECK(a.executor().statistics("paced_fp32")->execution_count == served_by_a->execution_count);
  for (const auto& e : client.stats().endpoints) CHECK(e.successes > 0);
  MESSAGE(sent.load() << " requests during the changes, all answered");
}

TEST_CASE("a name that does not resolve at first is one endpoint until a lookup succeeds") {
  LoopbackServer a;
  FakeDns dns;
  dns.fail();
  std::vector<std::string> logged;
  std::mutex log_mutex;
  ClientOptions options = each_address(dns);
  options.log = [&](LogLevel, const std::string& m) {
    std::lock_guard<std::mutex> lock(log_mutex);
    logged.push_back(m);
  };
  Client client("grpc://inference.svc:8001", options);
  CHECK(endpoint_urls(client) == std::vector<std::string>{"grpc://inference.svc:8001"});
  {
    std::lock_guard<std::mutex> lock(log_mutex);
    REQUIRE(!logged.empty());
    CHECK(logged.front().find("no such host") != std::string::npos);
  }
  dns.set({address_of(a)});
  CHECK(eventually([&] {
    auto urls = endpoint_urls(client);
    return urls == std::vector<std::string>{"grpc://" + address_of(a)};
  }));
  CHECK(client.infer(simple_request(40, 2)).output("OUTPUT0").as<std::int32_t>()[0] == 42);
}

TEST_CASE("the system resolver: localhost's addresses become endpoints") {
  LoopbackServer server;
  ClientOptions options;
  options.resolution.each_address = true;
  Client client("grpc://localhost:" + std::to_string(server.port()), options);
  auto urls = endpoint_urls(client);
  CHECK(std::find(urls.begin(), urls.end(), server.url()) != urls.end());
  for (const auto& url : urls) CHECK(url.find("localhost") == std::string::npos);
  // An address where nothing listens (::1, when localhost has it) costs retries, not failures.
  for (int i = 0; i < 20; ++i) {
    CHECK(client.infer(simple_request(i, i)).output("OUTPUT0").as<std::int32_t>()[0] == 2 * i);
  }
}

TEST_CASE("the resolver is never called once the client is gone, even mid-lookup") {
  LoopbackServer a;
  std::atomic<int> calls{0}, running{0};
  ClientOptions options;
  options.resolution.each_address = true;
  options.resolution.interval = 10ms;
  std::string address = address_of(a);
  options.resolution.resolver = [&](const std::string&,
                                    std::uint16_t) -> Result<std::vector<std::string>> {
    ++running;
    ++calls;
    if (calls > 1) std::this_thread::sleep_for(100ms);  // a slow DNS server
    --running;
    return std::vector<std::string>{address};
  };
  {
    Client client("grpc://inference.svc:8001", options);
    REQUIRE(eventually([&] { return running == 1; }));  // a periodic lookup is under way
  }                                                     // the destructor waits for it
  CHECK(running == 0);
  int after = calls;
  std::this_thread::sleep_for(100ms);
  CHECK(calls == after);  // and none starts later
}
