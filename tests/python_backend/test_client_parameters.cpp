// A Python model's response parameters as sonic's own client reads them
// (InferResult::parameters()), from an in-process sonic::Server over gRPC and HTTP/REST, and on
// a stream from a decoupled model, each response with its own.
#include <doctest/doctest.h>

#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loopback_server.hpp"
#include "sonic/repository/repository.hpp"

namespace {

// A server of the two test models that attach parameters.
std::unique_ptr<sonic::test::LoopbackServer> python_server() {
  auto executor = sonic::CpuExecutor::with_models({}, 2);
  executor->set_source(std::make_shared<sonic::repository::Repository>(
                           std::vector<std::string>{SONIC_PYTHON_BACKEND_MODELS}),
                       false);
  for (const char* model : {"response_parameters", "decoupled_parameters"}) {
    auto loaded = executor->load_model(model);
    REQUIRE_MESSAGE(loaded, (loaded ? "" : loaded.error().message()));
  }
  sonic::ServerOptions options;
  options.http_port = 0;
  return std::make_unique<sonic::test::LoopbackServer>(executor, options);
}

}  // namespace

TEST_CASE("sonic's client reads a Python model's response parameters, typed, over gRPC and HTTP") {
  auto server = python_server();
  std::vector<std::int32_t> zero{0};
  for (const std::string& url :
       {server->url(), "http://127.0.0.1:" + std::to_string(server->http_port())}) {
    CAPTURE(url);
    sonic::Client client(url);
    auto result = client.infer(sonic::InferRequest("response_parameters")
                                   .input("IN", sonic::Tensor::view(zero, {1}))
                                   .parameter("tag", std::string("asked")));
    const sonic::Parameters& got = result.parameters();
    CHECK(got.at("flag") == sonic::Parameter(true));
    CHECK(got.at("count") == sonic::Parameter(std::numeric_limits<std::int64_t>::min()));
    CHECK(got.at("name") == sonic::Parameter(std::string("żółw")));
    CHECK(got.at("echo") == sonic::Parameter(std::string("asked")));
  }
}

TEST_CASE("sonic's client reads each streamed response's own parameters") {
  auto server = python_server();
  sonic::Client client(server->url());
  std::mutex mutex;
  std::vector<sonic::StreamResponse> responses;
  auto stream = client.open_stream([&](sonic::StreamResponse r) {
    std::lock_guard<std::mutex> lock(mutex);
    responses.push_back(std::move(r));
  });
  std::vector<std::int32_t> values{4, 5, 6};
  REQUIRE(stream.send(
      sonic::InferRequest("decoupled_parameters").input("IN", sonic::Tensor::view(values, {3}))));
  stream.close();
  REQUIRE(stream.wait());
  std::lock_guard<std::mutex> lock(mutex);
  REQUIRE(responses.size() == 3);
  for (std::size_t i = 0; i < responses.size(); ++i) {
    REQUIRE(responses[i].result);
    const sonic::Parameters& got = responses[i].result->parameters();
    CHECK(got.at("index") == sonic::Parameter(static_cast<std::int64_t>(i)));
    CHECK(got.at("last") == sonic::Parameter(i == 2));
    CHECK(got.at("name") == sonic::Parameter("response " + std::to_string(i)));
    // The server's own, not the model's true: the model's final flag came alone, after them.
    CHECK_FALSE(responses[i].final);
  }
}
