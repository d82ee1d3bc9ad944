// A hedge's loser (the remote attempt a faster local answer beat) is reset on the wire, not left
// to run on the server for no one.
#include <doctest/doctest.h>

#include <sonic/builtin_models.hpp>
#include <sonic/executor.hpp>
#include <sonic/sonic.hpp>

#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "eventually.hpp"
#include "scripted_h2_server.hpp"
#include "simple_request.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

TEST_CASE("a hedge's loser: the local answer wins and the remote attempt is reset on the wire") {
  ScriptedH2Server server(H2Script{0, /*answer=*/false});  // holds every call open
  ClientOptions options;
  options.endpoints = {server.url()};
  options.validate_inputs = false;  // the scripted server knows no metadata
  options.fallback = CpuExecutor::with_models(models::builtin(), 1);
  // Long enough for the remote call to be on the wire (and held there) when the local run starts.
  options.fallback_latency_budget = 200ms;
  Client client(options);
  // A deadline far away: the stream's reset must come from the hedge, not from the deadline.
  const auto start = Clock::now();
  SUBCASE("infer_async") {
    std::promise<Result<InferResult>> done;
    client.infer_async(simple_request(3, 4).timeout(60s),
                       [&](Result<InferResult> r) { done.set_value(std::move(r)); });
    auto result = done.get_future().get();
    REQUIRE(result);
    CHECK(result->executed_on() == ExecutedOn::Local);
  }
  SUBCASE("blocking infer, on the calling thread's own connection") {
    auto result = client.infer(simple_request(3, 4).timeout(60s));
    CHECK(result.executed_on() == ExecutedOn::Local);
  }
  CHECK(ms_since(start) < 3000);  // the winner is not held back by the loser
  CHECK(server.calls_received() == 1);
  // RST_STREAM CANCEL: the server may drop the work instead of running it for no one.
  CHECK(eventually([&] { return server.cancels_received() == 1; }, 3000ms));
}
