// Failures: unknown models, bad input, no server, deadlines, servers and clients going away.
#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "expect_error.hpp"
#include "loopback_server.hpp"
#include "loopback_socket.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

StatusCode code_of(std::future<InferResult>& future) {
  try {
    future.get();
    return StatusCode::Ok;
  } catch (const Error& e) {
    return e.code();
  }
}

}  // namespace

TEST_CASE("an unknown model is NOT_FOUND with the server's message") {
  LoopbackServer server;
  Client client(server.url());
  try {
    (void)client.infer(
        InferRequest("no_such_model").input("X", Tensor::from_vector(std::vector<float>{1}, {1})));
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::NotFound);
    CHECK(e.message().find("no_such_model") != std::string::npos);
  }
}

TEST_CASE("bad input is INVALID_ARGUMENT at once, without a round trip") {
  LoopbackServer server;
  Client client(server.url());
  (void)client.infer(simple_request(1, 1));  // caches the model's metadata
  auto before = server.executor().statistics("simple").value();

  std::vector<float> floats(16);
  std::vector<std::int32_t> ints(16);
  std::vector<InferRequest> bad;
  bad.push_back(InferRequest("simple")
                    .input("INPUT0", Tensor::view(floats, {1, 16}))
                    .input("INPUT1", Tensor::view(ints, {1, 16})));
  bad.push_back(InferRequest("simple")
                    .input("INPUT0", Tensor::view(ints.data(), 16, {2, 8}))
                    .input("INPUT1", Tensor::view(ints, {1, 16})));
  bad.push_back(InferRequest("simple").input("INPUT7", Tensor::view(ints, {1, 16})));
  bad.push_back(InferRequest("simple").input("INPUT0", Tensor::view(ints.data(), 15, {1, 16})));
  for (auto& request : bad) {
    auto start = std::chrono::steady_clock::now();
    try {
      (void)client.infer(std::move(request));
      FAIL("must throw");
    } catch (const Error& e) {
      CHECK(e.code() == StatusCode::InvalidArgument);
      CHECK(e.message().find("INPUT") != std::string::npos);  // names the tensor
    }
    CHECK(ms_since(start) < 50);
  }
  auto after = server.executor().statistics("simple").value();
  CHECK(after.success.count == before.success.count);
  CHECK(after.fail.count == before.fail.count);  // the server never saw them
}

TEST_CASE("the server rejects bad input too when client validation is off") {
  LoopbackServer server;
  ClientOptions options;
  options.validate_inputs = false;
  Client client(server.url(), options);
  std::vector<float> floats(16);
  try {
    (void)client.infer(InferRequest("simple").input("INPUT0", Tensor::view(floats, {1, 16})));
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::InvalidArgument);
  }
  CHECK(server.executor().statistics("simple")->fail.count == 1);
}

TEST_CASE("no server listening is UNAVAILABLE within 1 s") {
  Client client(unused_url());
  auto start = std::chrono::steady_clock::now();
  try {
    (void)client.infer(simple_request(1, 2));
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
    CHECK(e.message().find("Connection refused") != std::string::npos);
  }
  CHECK(ms_since(start) < 1000);
  CHECK_THROWS_AS(client.server_live(), Error);
}

TEST_CASE("with two dead endpoints, the error names both and what each said") {
  LoopbackSocket first(false), second(false);  // bound, not listening: connects are refused
  ClientOptions options;
  options.endpoints = {first.url(), second.url()};
  options.retry.initial_backoff = 0ms;
  Client client(options);
  try {
    (void)client.infer(simple_request(1, 2).timeout(2s));
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
    const std::string message = e.message();
    CHECK_MESSAGE(message.find("none of the 2 endpoints tried answered") != std::string::npos,
                  message);
    CHECK_MESSAGE(message.find(first.url()) != std::string::npos, message);
    CHECK_MESSAGE(message.find(second.url()) != std::string::npos, message);
    CHECK_MESSAGE(message.find("Connection refused") != std::string::npos, message);
  }
}

TEST_CASE("a control call moves past a dead endpoint to one that answers, or names each") {
  // An operator's endpoint list whose first server is down: metadata, readiness and statistics
  // come from the next, as inference does; load and unload stay with the first.
  LoopbackSocket dead(false);  // bound, not listening: connects are refused
  LoopbackServer server;
  ClientOptions options;
  options.endpoints = {dead.url(), server.url()};
  Client client(options);
  CHECK(client.model_metadata("simple").inputs.size() == 2);
  CHECK(client.server_ready());
  CHECK(client.model_ready("simple"));
  CHECK(client.model_config("simple").find("simple") != std::string::npos);
  CHECK_FALSE(client.repository_index().empty());
  CHECK_FALSE(client.model_statistics("simple").empty());
  CHECK_FALSE(client.server_metadata().name.empty());

  LoopbackSocket also_dead(false);
  ClientOptions none;
  none.endpoints = {dead.url(), also_dead.url()};
  Client nowhere(none);
  try {
    (void)nowhere.model_metadata("simple");
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
    CHECK_MESSAGE(e.message().find("none of the 2 endpoints answered") != std::string::npos,
                  e.message());
    CHECK_MESSAGE(e.message().find(dead.url()) != std::string::npos, e.message());
    CHECK_MESSAGE(e.message().find(also_dead.url()) != std::string::npos, e.message());
  }
}

TEST_CASE("after a failed connection attempt, the next waits its backoff and requests fail fast") {
  LoopbackSocket reserved(false);  // bound, not listening: connects are refused
  ClientOptions options;
  options.retry.max_attempts = 1;
  options.validate_inputs = false;  // one connection attempt per request, not a metadata fetch too
  options.reconnect_backoff = 300ms;
  // Somewhere else to go (a fallback executor; this one lacks the model): calls fail fast.
  options.fallback = CpuExecutor::with_models({}, 1);
  options.breaker.failures_to_eject = 100;  // keep the endpoint in rotation throughout
  Client client(reserved.url(), options);
  auto message_of = [&] {
    try {
      (void)client.infer(simple_request(1, 2));
    } catch (const Error& e) {
      CHECK(e.code() == StatusCode::Unavailable);
      return std::string(e.message());
    }
    FAIL("must throw");
    return std::string();
  };
  CHECK(message_of().find("Connection refused") != std::string::npos);
  auto start = std::chrono::steady_clock::now();
  std::string waiting = message_of();  // inside the backoff: no new attempt
  CHECK(ms_since(start) < 100);
  CHECK_MESSAGE(waiting.find("not trying again for") != std::string::npos, waiting);
  CHECK(waiting.find("Connection refused") != std::string::npos);     // and why the last failed
  std::this_thread::sleep_for(400ms);                                 // backoff (300 ms +20 %) over
  CHECK(message_of().find("not trying again") == std::string::npos);  // a real attempt again
  // The next backoff doubles: still waiting 400 ms later.
  std::this_thread::sleep_for(400ms);
  CHECK(message_of().find("not trying again") != std::string::npos);
}

TEST_CASE("alone, a call inside the reconnect backoff waits for the next attempt") {
  auto reserved = std::make_unique<LoopbackSocket>(false);
  std::uint16_t port = static_cast<std::uint16_t>(std::stoi(reserved->url().substr(17)));
  ClientOptions options;
  options.retry.max_attempts = 1;
  options.validate_inputs = false;
  options.reconnect_backoff = 300ms;
  Client client(reserved->url(), options);
  CHECK_THROWS_AS(client.infer(simple_request(1, 2)), Error);  // refused: the backoff starts
  // A deadline shorter than the backoff ends the wait on time.
  auto start = std::chrono::steady_clock::now();
  try {
    (void)client.infer(simple_request(1, 2).timeout(100ms));
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::DeadlineExceeded);
  }
  CHECK(ms_since(start) >= 90);
  CHECK(ms_since(start) < 300);
  // The server comes back meanwhile: the waiting call is served at the next attempt.
  reserved.reset();
  ServerOptions server_options;
  server_options.host = "127.0.0.1";
  server_options.port = port;
  Server server(test_executor(1), server_options);
  server.start();
  CHECK(client.infer(simple_request(40, 2)).output("OUTPUT0").as<std::int32_t>()[0] == 42);
}

TEST_CASE("a slow model and a short deadline give DEADLINE_EXCEEDED on time") {
  LoopbackServer server;
  Client client(server.url());
  (void)client.model_metadata(kSlowModel);
  std::vector<float> data(4);
  auto start = std::chrono::steady_clock::now();
  try {
    (void)client.infer(
        InferRequest(kSlowModel).input("INPUT0", Tensor::view(data, {2, 2})).timeout(150ms));
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::DeadlineExceeded);
  }
  double elapsed = ms_since(start);
  CHECK(elapsed >= 150);
  CHECK(elapsed < 150 + 250);  // margin for a loaded 2-core machine, far below the 1 s model

  // The default timeout applies to requests that set none.
  ClientOptions options;
  options.default_timeout = 100ms;
  Client hurried(server.url(), options);
  auto future =
      hurried.infer_future(InferRequest(kSlowModel).input("INPUT0", Tensor::view(data, {2, 2})));
  CHECK(code_of(future) == StatusCode::DeadlineExceeded);
}

TEST_CASE("a server stopping mid-request completes every request exactly once") {
  auto server = std::make_unique<LoopbackServer>();
  Client client(server->url());
  std::vector<float> data(4);
  std::atomic<int> calls{0}, unavailable{0};
  std::promise<void> all_done;
  constexpr int kRequests = 20;
  for (int i = 0; i < kRequests; ++i) {
    client.infer_async(InferRequest(kSlowModel).input("INPUT0", Tensor::view(data, {2, 2})),
                       [&](Result<InferResult> r) {
                         if (r.code() == StatusCode::Unavailable) ++unavailable;
                         if (++calls == kRequests) all_done.set_value();
                       });
  }
  std::this_thread::sleep_for(200ms);
  auto start = std::chrono::steady_clock::now();
  server->stop();
  REQUIRE(all_done.get_future().wait_for(10s) == std::future_status::ready);
  CHECK(ms_since(start) < 2000);
  CHECK(calls == kRequests);
  CHECK(unavailable == kRequests);
  server.reset();
  std::this_thread::sleep_for(50ms);
  CHECK(calls == kRequests);  // never twice
}

TEST_CASE("a client destroyed with requests in flight completes them all with CANCELLED") {
  LoopbackServer server;
  std::atomic<int> calls{0}, cancelled{0};
  std::vector<float> data(4);
  constexpr int kRequests = 50;
  {
    Client client(server.url());
    (void)client.model_metadata(kSlowModel);
    for (int i = 0; i < kRequests; ++i) {
      client.infer_async(InferRequest(kSlowModel).input("INPUT0", Tensor::view(data, {2, 2})),
                         [&](Result<InferResult> r) {
                           if (r.code() == StatusCode::Cancelled) ++cancelled;
                           ++calls;
                         });
    }
    std::this_thread::sleep_for(50ms);
  }  // destructor: every callback has run when it returns
  CHECK(calls == kRequests);
  CHECK(cancelled == kRequests);
}

TEST_CASE("a peer that is not a gRPC server produces an error, not a hang") {
  LoopbackSocket listener(true);
  int fd = listener.fd();
  std::thread peer([fd] {
    int conn = ::accept(fd, nullptr, nullptr);
    if (conn < 0) return;
    const char reply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    (void)::write(conn, reply, sizeof reply - 1);
    std::this_thread::sleep_for(50ms);
    ::close(conn);
  });
  ClientOptions options;
  options.retry.max_attempts = 1;  // one connection: the peer answers only once
  options.validate_inputs = false;
  Client client(listener.url(), options);
  auto start = std::chrono::steady_clock::now();
  auto future = client.infer_future(simple_request(1, 1).timeout(5s));
  try {
    future.get();
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
    // Triton's HTTP port instead of its gRPC port: the error says which mistake it is.
    const std::string message = e.message();
    CHECK_MESSAGE(message.find("answered in HTTP/1") != std::string::npos, message);
    CHECK_MESSAGE(message.find("HTTP/1.1 400 Bad Request") != std::string::npos, message);
    CHECK_MESSAGE(message.find("gRPC on 8001") != std::string::npos, message);
  }
  CHECK(ms_since(start) < 2000);
  peer.join();
}

TEST_CASE("grpc:// pointed at sonic-server's tcp:// port says it is not a gRPC port") {
  ServerOptions server_options;
  server_options.tcp_port = 0;
  LoopbackServer server(server_options);
  ClientOptions options;
  options.retry.max_attempts = 1;
  options.validate_inputs = false;
  Client client("grpc://127.0.0.1:" + std::to_string(server.tcp_port()), options);
  try {
    (void)client.infer(simple_request(1, 1).timeout(5s));
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
    const std::string message = e.message();
    CHECK_MESSAGE(message.find("did not answer in HTTP/2") != std::string::npos, message);
    CHECK_MESSAGE(message.find("use the tcp:// scheme there") != std::string::npos, message);
  }
}

TEST_CASE("a request larger than max_message_bytes is refused before sending") {
  LoopbackServer server;
  ClientOptions options;
  options.max_message_bytes = 1 << 20;
  Client client(server.url(), options);
  std::vector<float> big(1 << 19);  // 2 MiB
  try {
    (void)client.infer(
        InferRequest("identity_fp32").input("INPUT0", Tensor::view(big, {1, 1 << 19})));
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::ResourceExhausted);
  }
  CHECK(server.executor().statistics("identity_fp32")->success.count == 0);
}

TEST_CASE("after the server restarts, the same client reconnects") {
  auto server = std::make_unique<LoopbackServer>();
  std::uint16_t port = server->port();
  Client client(server->url());
  CHECK(client.infer(simple_request(2, 3)).output("OUTPUT0").as<std::int32_t>()[0] == 5);
  server.reset();  // GOAWAY and close
  auto down = client.infer_future(simple_request(1, 1));
  CHECK(code_of(down) == StatusCode::Unavailable);

  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = port;
  Server again(test_executor(1), options);
  again.start();
  CHECK(client.infer(simple_request(4, 3)).output("OUTPUT0").as<std::int32_t>()[0] == 7);
}

TEST_CASE("keepalive notices a peer that accepted the connection and went silent") {
  SilentPeer peer;
  ClientOptions options;
  options.keepalive_interval = 50ms;
  options.keepalive_timeout = 100ms;
  options.validate_inputs = false;  // straight to the silent peer
  Client client(peer.url(), options);
  auto start = std::chrono::steady_clock::now();
  auto future = client.infer_future(simple_request(1, 1));  // no deadline: only keepalive helps
  REQUIRE(future.wait_for(5s) == std::future_status::ready);
  auto e = expect_error([&] { future.get(); });
  CHECK(e.code() == StatusCode::Unavailable);
  CHECK(e.message().find("keepalive") != std::string::npos);
  CHECK(ms_since(start) < 1000);
}

TEST_CASE("a client destroyed while its first request still fetches model metadata") {
  LoopbackServer server;
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> calls{0};
    {
      Client client(server.url());
      for (int i = 0; i < 5; ++i) {
        client.infer_async(simple_request(i, 1), [&](Result<InferResult>) { ++calls; });
      }
    }  // the metadata answer may arrive during destruction
    CHECK(calls == 5);
  }
}

TEST_CASE("the last owner of a client may release it from inside a callback") {
  LoopbackServer server;
  auto client = std::make_shared<Client>(server.url());
  std::promise<void> released;
  client->infer_async(simple_request(1, 1), [&](Result<InferResult> r) {
    CHECK(r.ok());
    client.reset();  // destroys the client, and its callback pool, on a callback thread
    released.set_value();
  });
  REQUIRE(released.get_future().wait_for(10s) == std::future_status::ready);
  std::this_thread::sleep_for(50ms);  // let the detached worker finish on its own state
  CHECK((client == nullptr));
}
