// sonic inside a plugin built with hidden visibility: the process still has one transport
// registry, and a callback never runs inside cancel() even when cancel() is called from
// another library than the one that sent the request (each has its own copy of any
// thread_local state in sonic's headers, so the contract must not rest on such state).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "eventually.hpp"
#include "loopback_server.hpp"
#include "plugin.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

TEST_CASE("a client made inside a hidden-visibility plugin finds the program's transports") {
  LoopbackServer server;
  auto client = plugin::make_client(server.url(), {});
  CHECK(client->infer(simple_request(2, 3)).output("OUTPUT0").as<std::int32_t>()[0] == 5);
}

TEST_CASE("an inline callback of a plugin's request never runs inside the program's cancel()") {
  LoopbackServer server;
  ClientOptions options;
  options.callbacks = CallbackThread::Inline;
  Client client(server.url(), options);
  std::vector<float> input(4, 1.0f);
  std::atomic<bool> inside_cancel{false}, ran_inside{false};
  std::promise<StatusCode> outcome;
  const auto canceller = std::this_thread::get_id();
  // Inside cancel() means on the cancelling thread while it is in the call; another thread
  // may well complete the request meanwhile.
  auto handle =
      plugin::start(client, InferRequest(kSlowModel).input("INPUT0", Tensor::view(input, {2, 2})),
                    [&](StatusCode code) {
                      ran_inside = inside_cancel.load() && std::this_thread::get_id() == canceller;
                      outcome.set_value(code);
                    });
  std::this_thread::sleep_for(50ms);  // under way on the server
  inside_cancel = true;
  CHECK(handle.cancel());
  inside_cancel = false;
  auto code = outcome.get_future();
  REQUIRE(code.wait_for(5s) == std::future_status::ready);
  CHECK(code.get() == StatusCode::Cancelled);
  CHECK_FALSE(ran_inside.load());
}
