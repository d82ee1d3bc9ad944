// The client's deadline watch (src/client/deadline_watch.hpp) against a transport that never
// answers and never keeps a deadline (a network thread far behind, as far as the client can
// tell): a request is decided DEADLINE_EXCEEDED shortly after its deadline all the same, and
// its callback runs then, unless the caller lent its inputs, which the transport may still be
// reading: that outcome waits for the transport to let go.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loopback_server.hpp"
#include "sanitizers.hpp"
#include "sonic/sonic.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

// Grace, a tick, and a loaded machine's scheduling. Not checked under the sanitizers, which
// slow every thread several times (one ThreadSanitizer run came 288 ms late), as the kill
// storm's bound is not.
constexpr double kLateBoundMs = 50;

// Holds every call until it is destroyed, then completes them all with CANCELLED (the Transport
// contract's destructor).
class DeafTransport final : public Transport {
 public:
  static std::atomic<int>& calls() {
    static std::atomic<int> count{0};
    return count;
  }
  ~DeafTransport() override {
    std::vector<std::function<void()>> held;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held.swap(held_);
    }
    for (auto& cancel : held) cancel();
  }
  void infer_async(const InferRequest&, Deadline, std::shared_ptr<CancelSignal>,
                   Callback<InferResult> done) override {
    ++calls();
    hold(std::move(done));
  }
  void control_async(ControlRequest, Deadline, Callback<ControlAnswer> done) override {
    hold(std::move(done));
  }

 private:
  template <typename T>
  void hold(Callback<T> done) {
    auto shared = std::make_shared<Callback<T>>(std::move(done));
    std::lock_guard<std::mutex> lock(mutex_);
    held_.push_back([shared] { (*shared)(Error(StatusCode::Cancelled, "transport destroyed")); });
  }

  std::mutex mutex_;
  std::vector<std::function<void()>> held_;
};

const bool registered = [] {
  transport_registry().add("deaf", [](const Endpoint&, const ClientOptions&) {
    return Result<std::unique_ptr<Transport>>(std::make_unique<DeafTransport>());
  });
  return true;
}();

ClientOptions deaf_client() {
  ClientOptions options;
  options.endpoints = {"deaf://127.0.0.1:1"};
  options.validate_inputs = false;
  return options;
}

}  // namespace

TEST_CASE(
    "a request its transport never answers is decided by its deadline plus the watch's grace") {
  REQUIRE(registered);
  Client client(deaf_client());
  const int calls_before = DeafTransport::calls();
  for (const auto timeout : {30ms, 80ms}) {
    const auto start = std::chrono::steady_clock::now();
    auto outcome = client.infer_future(simple_request(1, 2).timeout(timeout));
    REQUIRE(outcome.wait_for(2s) == std::future_status::ready);  // without the watch: never
    const double late = ms_since(start) - static_cast<double>(timeout.count());
    try {
      outcome.get();
      FAIL("a deaf transport answered");
    } catch (const Error& e) {
      CHECK(e.code() == StatusCode::DeadlineExceeded);
      CHECK(std::string(e.what()).find("no outcome by the deadline") != std::string::npos);
    }
    CAPTURE(late);
    CHECK(late >= 5);  // the transport's grace
#if !defined(SONIC_TEST_SANITIZED)
    CHECK(late < kLateBoundMs);
#endif
  }
  // A blocking call, which waits without connections of its own here.
  CHECK_THROWS_AS(client.infer(simple_request(1, 2).timeout(30ms)), Error);
  CHECK(DeafTransport::calls() - calls_before == 3);
}

TEST_CASE("a request with borrowed inputs waits, past its deadline, for the transport to let go") {
  std::promise<StatusCode> outcome;
  auto decided = outcome.get_future();
  std::vector<std::int32_t> lent(16, 3);
  {
    Client client(deaf_client());
    client.infer_async(
        InferRequest("simple")
            .input("INPUT0", Tensor::view(lent, {1, 16}))
            .input("INPUT1", Tensor::from_vector(std::vector<std::int32_t>(16, 4), {1, 16}))
            .timeout(20ms),
        [&outcome](Result<InferResult> result) { outcome.set_value(result.code()); });
    // The transport may still read `lent`: no callback while it holds the call.
    CHECK(decided.wait_for(150ms) == std::future_status::timeout);
  }  // destroying the client destroys the transport, which lets go of the call
  REQUIRE(decided.wait_for(1s) == std::future_status::ready);
  CHECK(decided.get() == StatusCode::DeadlineExceeded);
}

TEST_CASE("requests without a deadline are not watched, and never time out") {
  Client client(deaf_client());
  std::promise<StatusCode> outcome;
  auto decided = outcome.get_future();
  {
    client.infer_async(simple_request(1, 2), [&outcome](Result<InferResult> result) {
      outcome.set_value(result.code());
    });
    CHECK(decided.wait_for(100ms) == std::future_status::timeout);
  }
  client = Client(deaf_client());  // the first client goes, with its transport
  REQUIRE(decided.wait_for(1s) == std::future_status::ready);
  CHECK(decided.get() == StatusCode::Cancelled);
}
