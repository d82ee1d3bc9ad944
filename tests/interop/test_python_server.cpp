// Interop: sonic::Client against python_server.py, an independent KServe v2 server built on the
// stock gRPC stack (python3-grpcio). The suite starts the server as a child process on first use
// and stops it when the program exits; where to find Python and the script is compiled in.
// Over 500 lines: one case per call of the service, all against the same child server.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sonic/executor.hpp>
#include <sonic/sonic.hpp>

#include "compression_checks.hpp"
#include "example_model_checks.hpp"
#include "expect_error.hpp"
#include "model_control_checks.hpp"
#include "python_server.hpp"
#include "request_option_checks.hpp"
#include "stream_checks.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using sonic::test::expect_error;
using sonic::test::server_url;

sonic::Client make_client(sonic::ClientOptions options = {}) {
  // A limit on every request, so that a hang fails one check instead of the whole run.
  if (options.default_timeout.count() == 0) options.default_timeout = 30s;
  return sonic::Client(server_url(), std::move(options));
}

// ---- The `simple` model: inputs and the expected outputs ----

struct SimpleCase {
  std::vector<std::int32_t> a, b;

  explicit SimpleCase(std::int32_t seed) : a(16), b(16) {
    for (int i = 0; i < 16; ++i) {
      a[i] = seed * 100 + i * 3;
      b[i] = 7 - 2 * i + seed;
    }
    a[15] = INT32_MAX;  // the sum wraps around, as the server's int32 arithmetic does
    b[15] = 1 + seed;
  }
  std::int32_t sum(int i) const {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(a[i]) +
                                     static_cast<std::uint32_t>(b[i]));
  }
  std::int32_t difference(int i) const {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(a[i]) -
                                     static_cast<std::uint32_t>(b[i]));
  }
  // A request borrowing this case's vectors.
  sonic::InferRequest request() const {
    return sonic::InferRequest("simple")
        .input("INPUT0", sonic::Tensor::view(a, {1, 16}))
        .input("INPUT1", sonic::Tensor::view(b, {1, 16}));
  }
  // A request owning copies, for calls that outlive this case.
  sonic::InferRequest owning_request() const {
    return sonic::InferRequest("simple")
        .input("INPUT0", sonic::Tensor::from_vector(a, {1, 16}))
        .input("INPUT1", sonic::Tensor::from_vector(b, {1, 16}));
  }
  // Whether a result carries both outputs with the right values.
  bool matches(const sonic::InferResult& result) const {
    const auto* out0 = result.find_output("OUTPUT0");
    const auto* out1 = result.find_output("OUTPUT1");
    if (!out0 || !out1) return false;
    auto s = out0->tensor.as<std::int32_t>();
    auto d = out1->tensor.as<std::int32_t>();
    if (s.size() != 16 || d.size() != 16) return false;
    for (int i = 0; i < 16; ++i) {
      if (s[i] != sum(i) || d[i] != difference(i)) return false;
    }
    return true;
  }
};

void check_simple_outputs(const SimpleCase& c, const sonic::InferResult& result) {
  REQUIRE(result.outputs().size() == 2);
  CHECK(result.outputs()[0].name == "OUTPUT0");  // the model's order when none were requested
  CHECK(result.outputs()[1].name == "OUTPUT1");
  for (const char* name : {"OUTPUT0", "OUTPUT1"}) {
    const auto& t = result.output(name);
    CHECK(t.dtype() == sonic::DataType::Int32);
    CHECK(t.shape() == sonic::Shape{1, 16});
    CHECK(t.byte_size() == 64);
  }
  auto s = result.output("OUTPUT0").as<std::int32_t>();
  auto d = result.output("OUTPUT1").as<std::int32_t>();
  REQUIRE(s.size() == 16);
  REQUIRE(d.size() == 16);
  for (int i = 0; i < 16; ++i) {
    CAPTURE(i);
    CHECK(s[i] == c.sum(i));
    CHECK(d[i] == c.difference(i));
  }
}

std::string string_parameter(const sonic::Parameters& parameters, const std::string& name) {
  auto it = parameters.find(name);
  if (it == parameters.end()) return "<absent>";
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  return "<not a string>";
}

// Bytes that survive only an exact copy: every bit pattern, NaNs and denormals included.
std::vector<float> pattern_floats(std::size_t count, std::uint32_t salt) {
  std::vector<float> values(count);
  std::uint32_t x = salt;
  for (auto& v : values) {
    x = x * 1664525u + 1013904223u;
    std::memcpy(&v, &x, sizeof v);
  }
  return values;
}

}  // namespace

TEST_SUITE("interop: sonic client vs python server") {
  TEST_CASE("server_live and server_ready") {
    auto client = make_client();
    CHECK(client.server_live());
    CHECK(client.server_ready());
  }

  TEST_CASE("server_metadata") {
    auto client = make_client();
    auto md = client.server_metadata();
    CHECK(md.name == "sonic-python-test-server");
    CHECK(md.version == "1.0.0");
    CHECK(md.extensions == std::vector<std::string>{"model_configuration", "statistics",
                                                    "parameters", "model_repository",
                                                    "system_shared_memory"});
  }

  TEST_CASE("model_metadata") {
    auto client = make_client();
    SUBCASE("simple") {
      auto md = client.model_metadata("simple");
      CHECK(md.name == "simple");
      CHECK(md.versions == std::vector<std::string>{"1"});
      CHECK(md.platform == "sonic_python");
      REQUIRE(md.inputs.size() == 2);
      REQUIRE(md.outputs.size() == 2);
      CHECK(md.inputs[0].name == "INPUT0");
      CHECK(md.inputs[1].name == "INPUT1");
      CHECK(md.outputs[0].name == "OUTPUT0");
      CHECK(md.outputs[1].name == "OUTPUT1");
      for (const auto* list : {&md.inputs, &md.outputs}) {
        for (const auto& t : *list) {
          CAPTURE(t.name);
          CHECK(t.dtype == sonic::DataType::Int32);
          CHECK(t.shape == sonic::Shape{-1, 16});  // max_batch_size 8, as Triton publishes it
        }
      }
    }
    SUBCASE("identity_fp32 has variable dimensions") {
      auto md = client.model_metadata("identity_fp32", "1");
      CHECK(md.name == "identity_fp32");
      REQUIRE(md.inputs.size() == 1);
      REQUIRE(md.outputs.size() == 1);
      CHECK(md.inputs[0].dtype == sonic::DataType::Fp32);
      CHECK(md.inputs[0].shape == sonic::Shape{-1, -1});
      CHECK(md.outputs[0].name == "OUTPUT0");
      CHECK(md.outputs[0].shape == sonic::Shape{-1, -1});
    }
  }

  TEST_CASE("model_config is JSON naming the model and its INT32 tensors") {
    auto client = make_client();
    std::string config = client.model_config("simple");
    CAPTURE(config);
    auto first = config.find_first_not_of(" \t\r\n");
    REQUIRE(first != std::string::npos);
    CHECK(config[first] == '{');
    CHECK(config.find_last_not_of(" \t\r\n") == config.rfind('}'));
    CHECK(config.find("\"simple\"") != std::string::npos);
    CHECK(config.find("TYPE_INT32") != std::string::npos);
    CHECK(config.find("INPUT0") != std::string::npos);
    CHECK(config.find("OUTPUT1") != std::string::npos);
  }

  TEST_CASE("model_ready") {
    auto client = make_client();
    CHECK(client.model_ready("simple"));
    CHECK(client.model_ready("simple", "1"));
    CHECK(client.model_ready("identity_fp32"));
    CHECK_FALSE(client.model_ready("simple", "7"));
    CHECK_FALSE(client.model_ready("no_such_model"));
  }

  TEST_CASE("infer simple: sum, difference and the request id") {
    auto client = make_client();
    SimpleCase c(1);
    auto result = client.infer(c.request().id("interop-42"));
    CHECK(result.model_name() == "simple");
    CHECK(result.model_version() == "1");
    CHECK(result.request_id() == "interop-42");
    CHECK(result.executed_on() == sonic::ExecutedOn::Remote);
    check_simple_outputs(c, result);

    SUBCASE("without validation (no metadata fetched first)") {
      sonic::ClientOptions options;
      options.validate_inputs = false;
      auto direct = make_client(options);
      SimpleCase c2(2);
      auto r = direct.infer(c2.request());
      CHECK(r.request_id().empty());
      check_simple_outputs(c2, r);
    }
  }

  TEST_CASE("infer simple with only OUTPUT1 requested") {
    auto client = make_client();
    SimpleCase c(3);
    auto result = client.infer(c.request().output("OUTPUT1"));
    REQUIRE(result.outputs().size() == 1);
    CHECK(result.outputs()[0].name == "OUTPUT1");
    CHECK(result.find_output("OUTPUT0") == nullptr);
    auto d = result.output("OUTPUT1").as<std::int32_t>();
    REQUIRE(d.size() == 16);
    for (int i = 0; i < 16; ++i) CHECK(d[i] == c.difference(i));

    SUBCASE("both, in the requested order") {
      auto both = client.infer(c.request().output("OUTPUT1").output("OUTPUT0"));
      REQUIRE(both.outputs().size() == 2);
      CHECK(both.outputs()[0].name == "OUTPUT1");
      CHECK(both.outputs()[1].name == "OUTPUT0");
      CHECK(c.matches(both));
    }
  }

  TEST_CASE("infer_async and infer_future") {
    auto client = make_client();
    SimpleCase c(4);

    SUBCASE("infer_async") {
      std::promise<sonic::Result<sonic::InferResult>> promise;
      auto future = promise.get_future();
      client.infer_async(c.request().id("async"), [&](sonic::Result<sonic::InferResult> r) {
        promise.set_value(std::move(r));
      });
      REQUIRE(future.wait_for(30s) == std::future_status::ready);
      auto r = future.get();
      REQUIRE(r.ok());
      CHECK(r->request_id() == "async");
      check_simple_outputs(c, *r);
    }
    SUBCASE("infer_future") {
      auto future = client.infer_future(c.request().id("future"));
      REQUIRE(future.wait_for(30s) == std::future_status::ready);
      auto r = future.get();
      CHECK(r.request_id() == "future");
      check_simple_outputs(c, r);
    }
    SUBCASE("infer_future reports errors through get()") {
      auto future = client.infer_future(sonic::InferRequest("no_such_model", "")
                                            .input("INPUT0", sonic::Tensor::view(c.a, {1, 16})));
      REQUIRE(future.wait_for(30s) == std::future_status::ready);
      auto e = expect_error([&] { future.get(); });
      CHECK(e.code() == sonic::StatusCode::NotFound);
    }
  }

  TEST_CASE("identity_fp32 round-trips large tensors byte for byte") {
    auto client = make_client();
    std::size_t count = 0;
    SUBCASE("4 MiB") { count = std::size_t{1} << 20; }
    SUBCASE("64 MiB") { count = std::size_t{16} << 20; }
    CAPTURE(count);
    auto values = pattern_floats(count, static_cast<std::uint32_t>(count));
    auto result = client.infer(
        sonic::InferRequest("identity_fp32")
            .input("INPUT0", sonic::Tensor::view(values, {1, static_cast<std::int64_t>(count)}))
            .timeout(60s));
    REQUIRE(result.outputs().size() == 1);
    const auto& out = result.output("OUTPUT0");
    CHECK(out.dtype() == sonic::DataType::Fp32);
    CHECK(out.shape() == sonic::Shape{1, static_cast<std::int64_t>(count)});
    REQUIRE(out.byte_size() == count * sizeof(float));
    CHECK(std::memcmp(out.data(), values.data(), out.byte_size()) == 0);
  }

  TEST_CASE("an unknown model fails with NOT_FOUND and the server's message") {
    const std::string expected = "Request for unknown model: 'no_such_model' is not found";
    SimpleCase c(5);
    auto request = [&] {
      return sonic::InferRequest("no_such_model")
          .input("INPUT0", sonic::Tensor::view(c.a, {1, 16}))
          .input("INPUT1", sonic::Tensor::view(c.b, {1, 16}));
    };
    SUBCASE("infer, validated (the metadata fetch fails)") {
      auto client = make_client();
      auto e = expect_error([&] { client.infer(request()); });
      CHECK(e.code() == sonic::StatusCode::NotFound);
      CHECK_MESSAGE(e.message().find(expected) != std::string::npos, e.message());
    }
    SUBCASE("infer, unvalidated (ModelInfer itself fails)") {
      sonic::ClientOptions options;
      options.validate_inputs = false;
      auto client = make_client(options);
      auto e = expect_error([&] { client.infer(request()); });
      CHECK(e.code() == sonic::StatusCode::NotFound);
      CHECK(e.message() == expected);
    }
    SUBCASE("model_metadata") {
      auto client = make_client();
      auto e = expect_error([&] { client.model_metadata("no_such_model"); });
      CHECK(e.code() == sonic::StatusCode::NotFound);
      CHECK(e.message() == expected);
    }
    SUBCASE("model_config") {
      auto client = make_client();
      auto e = expect_error([&] { client.model_config("no_such_model"); });
      CHECK(e.code() == sonic::StatusCode::NotFound);
      CHECK(e.message() == expected);
    }
  }

  TEST_CASE("model control: the index, unload and load") {
    sonic::ClientOptions options;
    options.validate_inputs = false;  // the request must reach the server
    options.retry.max_attempts = 1;   // UNAVAILABLE would be retried
    auto client = make_client(options);
    SimpleCase c(3);
    sonic::test::check_unload_and_load(client, "simple", c.owning_request());
    // Triton loads with a new configuration; the Python server accepts one too.
    CHECK_NOTHROW(client.load_model("simple", R"({"max_batch_size": 0})"));
  }

  TEST_CASE("Triton's request options: typed setters taken, wrong types refused") {
    auto client = make_client();
    SimpleCase c(4);
    sonic::test::check_request_options(client, [&] { return c.owning_request(); });
  }

  TEST_CASE("streams, as Triton answers them: in order, decoupled, errors in-band") {
    auto client = make_client();
    sonic::test::check_streams(client);
  }

  TEST_CASE("gRPC compression: requests gzip and deflate, answers as grpcio compresses them") {
    const std::string address = sonic::test::python_server_address();
    sonic::test::check_compression(
        static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))), false);
    auto compressing = sonic::test::start_python_server({"--infer-response-compression", "gzip"});
    sonic::test::check_compression(static_cast<std::uint16_t>(compressing->port()), true);
  }

  TEST_CASE("reliability against Triton's answers: fallback, a server lost, a model unloaded") {
    // The reliability paths read what a server answers (codes, Triton's wording): here the
    // answers are the Triton-like server's, not sonic-server's.
    const SimpleCase c(4);
    SUBCASE("a model the server does not host (NOT_FOUND, Triton's words) runs locally") {
      sonic::Model local_only;  // an identity that only this process hosts
      local_only.name = "local_only";
      local_only.inputs = {{"INPUT0", sonic::DataType::Fp32, {-1, -1}}};
      local_only.outputs = {{"OUTPUT0", sonic::DataType::Fp32, {-1, -1}}};
      local_only.compute =
          [](const sonic::InferRequest& request) -> sonic::Result<std::vector<sonic::NamedTensor>> {
        return std::vector<sonic::NamedTensor>{
            {"OUTPUT0", request.find_input("INPUT0")->tensor.to_owned(), {}}};
      };
      auto local = std::make_shared<sonic::CpuExecutor>(1);
      local->add_model(std::move(local_only));
      sonic::ClientOptions options;
      options.fallback = local;
      auto client = make_client(options);
      std::vector<float> data = {1, 2, 3, 4};
      auto r = client.infer(
          sonic::InferRequest("local_only").input("INPUT0", sonic::Tensor::view(data, {2, 2})));
      CHECK(r.executed_on() == sonic::ExecutedOn::Local);
      CHECK(r.output("OUTPUT0").as<float>()[3] == 4.f);
    }
    SUBCASE("a server lost mid-run is passed over: none of 80 requests fails") {
      auto lost = sonic::test::start_python_server();
      sonic::test::FaultProxy proxy(static_cast<std::uint16_t>(lost->port()));
      sonic::ClientOptions options;
      options.endpoints = {proxy.url(), server_url()};
      options.default_timeout = 30s;
      sonic::Client client(options);
      for (int i = 0; i < 40; ++i) CHECK(c.matches(client.infer(c.request())));
      proxy.refuse(true);
      proxy.reset_all();
      for (int i = 0; i < 40; ++i) CHECK(c.matches(client.infer(c.request())));
      auto stats = client.stats();
      CHECK(stats.failed == 0);
      CHECK_FALSE(stats.endpoints[0].healthy);
    }
    SUBCASE("a model unloaded from one server (UNAVAILABLE) is served by the other") {
      auto unloaded = sonic::test::start_python_server();
      const std::string unloaded_url = "grpc://127.0.0.1:" + std::to_string(unloaded->port());
      sonic::Client(unloaded_url).unload_model("simple");
      sonic::ClientOptions options;
      options.endpoints = {unloaded_url, server_url()};
      options.default_timeout = 30s;
      sonic::Client client(options);
      for (int i = 0; i < 20; ++i) CHECK(c.matches(client.infer(c.request())));
      CHECK(client.stats().failed == 0);
    }
  }

  TEST_CASE("a stream's slow callback holds the server back, and the client's memory with it") {
    const std::string address = sonic::test::python_server_address();
    sonic::test::check_stream_backpressure(
        static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  }

  TEST_CASE("Triton's example models: simple_string, and a sequence by its options") {
    auto client = make_client();
    sonic::test::check_example_models(client);
  }

  TEST_CASE("a per-request timeout ends a slow call with DEADLINE_EXCEEDED") {
    auto client = make_client();
    std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f};
    auto start = Clock::now();
    auto e = expect_error([&] {
      client.infer(sonic::InferRequest("slow")
                       .input("INPUT0", sonic::Tensor::view(x, {1, 4}))
                       .timeout(300ms));
    });
    auto elapsed = Clock::now() - start;
    CAPTURE(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count());
    CHECK(e.code() == sonic::StatusCode::DeadlineExceeded);
    CHECK(elapsed < 1500ms);  // the model sleeps 2 s: the deadline, not the answer, ended it
    CHECK(elapsed >= 250ms);

    // The connection is still good afterwards.
    SimpleCase c(6);
    CHECK(c.matches(client.infer(c.request())));
  }

  TEST_CASE("custom metadata headers reach the server") {
    sonic::ClientOptions options;
    options.headers = {{"x-sonic-client", "from-options"}};
    auto client = make_client(options);
    SimpleCase c(7);

    SUBCASE("a request header, echoed") {
      auto result = client.infer(
          c.request().header("x-sonic-test", "hello").parameter("echo_metadata", true));
      CHECK(c.matches(result));
      CHECK(string_parameter(result.parameters(), "x-sonic-test") == "hello");
      CHECK(string_parameter(result.parameters(), "x-sonic-client") == "from-options");
    }
    SUBCASE("a binary (-bin) header arrives byte for byte") {
      const std::string blob("\x00\x01\xfe\xff", 4);
      auto result = client.infer(
          c.request().header("x-sonic-blob-bin", blob).parameter("echo_metadata", true));
      CHECK(string_parameter(result.parameters(), "x-sonic-blob-bin") == "AAH+/w==");
    }
    SUBCASE("nothing echoed unless asked") {
      auto result = client.infer(c.request().header("x-sonic-test", "hello"));
      CHECK(result.parameters().count("x-sonic-test") == 0);
    }
  }

  TEST_CASE("model_statistics counts inferences") {
    auto client = make_client();
    SimpleCase c(8);
    CHECK(c.matches(client.infer(c.request())));
    auto stats = client.model_statistics("simple");
    REQUIRE(stats.size() == 1);
    const auto& s = stats[0];
    CHECK(s.name == "simple");
    CHECK(s.version == "1");
    CHECK(s.inference_count > 0);
    CHECK(s.execution_count > 0);
    CHECK(s.success.count > 0);
    CHECK(s.success.ns > 0);
    CHECK(s.last_inference_ms > 0);

    auto all = client.model_statistics();
    CHECK(all.size() == 7);  // every model of the server
  }

  TEST_CASE("200 concurrent infer_async calls from 4 threads each complete once") {
    constexpr int kThreads = 4;
    constexpr int kPerThread = 50;
    constexpr int kTotal = kThreads * kPerThread;
    std::vector<std::atomic<int>> calls(kTotal);
    std::vector<std::atomic<bool>> right(kTotal);
    std::atomic<int> done{0};
    std::mutex mutex;
    std::condition_variable finished;
    {
      sonic::ClientOptions options;
      options.callback_threads = 2;
      auto client = make_client(options);
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          for (int k = 0; k < kPerThread; ++k) {
            const int index = t * kPerThread + k;
            auto c = std::make_shared<SimpleCase>(index);
            client.infer_async(c->owning_request().id(std::to_string(index)),
                               [&, c, index](sonic::Result<sonic::InferResult> r) {
                                 right[index] = r.ok() &&
                                                r->request_id() == std::to_string(index) &&
                                                c->matches(*r);
                                 calls[index].fetch_add(1);
                                 if (done.fetch_add(1) + 1 == kTotal) {
                                   std::lock_guard<std::mutex> lock(mutex);
                                   finished.notify_all();
                                 }
                               });
          }
        });
      }
      for (auto& th : threads) th.join();
      std::unique_lock<std::mutex> lock(mutex);
      CHECK(finished.wait_for(lock, 60s, [&] { return done.load() == kTotal; }));
    }  // the client is gone: nothing may complete after this
    CHECK(done.load() == kTotal);
    int once = 0, correct = 0;
    for (int i = 0; i < kTotal; ++i) {
      once += calls[i].load() == 1;
      correct += right[i].load();
    }
    CHECK(once == kTotal);
    CHECK(correct == kTotal);
  }
}
