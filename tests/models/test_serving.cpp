// Real models served: a sonic::Server over the generated repository (ONNX and TorchScript)
// answers as torch does over every transport, reports the repository's config, and a client
// whose server dies mid-run gets every remaining answer, right, from its in-process fallback
// running the same directory.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "reference_checks.hpp"
#include "sonic/executor.hpp"
#include "sonic/repository/repository.hpp"
#include "sonic/server.hpp"
#include "sonic/sonic.hpp"

using namespace sonic;

namespace {

const std::string kRepository = test::kModels + "/repository";

struct Case {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

const std::vector<Case> kCases = {
    {"jet_mlp_onnx", {"features"}, {"probabilities"}},
    {"emtrk_cnn_onnx", {"patch"}, {"em_trk_none", "michel"}},
    {"jet_mlp_torch", {"INPUT__0"}, {"OUTPUT__0"}},
    {"emtrk_cnn_torch", {"INPUT__0"}, {"OUTPUT__0", "OUTPUT__1"}},
    {"edgeconv_torch", {"INPUT__0"}, {"OUTPUT__0"}},
};

InferRequest reference_request(const Case& c) { return test::reference_request(c.model, c.inputs); }

// Empty when every output is within 1e-5 of torch's; else what differs.
std::string compare_with_reference(const Case& c, const Result<InferResult>& result) {
  return test::compare_with_reference(c.model, c.outputs, result);
}

std::shared_ptr<CpuExecutor> served_executor() {
  auto executor = std::make_shared<CpuExecutor>(2);
  auto repository = std::make_shared<repository::Repository>(std::vector<std::string>{kRepository});
  executor->set_source(repository, false);
  for (const auto& c : kCases) REQUIRE(executor->load_model(c.model));
  return executor;
}

ServerOptions local_options() {
  ServerOptions options;
  options.port = 0;
  options.tcp_port = 0;
  return options;
}

}  // namespace

TEST_CASE("every transport serves the repository's models with torch's answers") {
  Server server(served_executor(), local_options());
  server.start();
  const std::string host = "127.0.0.1:";
  for (const std::string& url : {"grpc://" + host + std::to_string(server.port()),
                                 "grpc+shm://" + host + std::to_string(server.port()),
                                 "tcp://" + host + std::to_string(server.tcp_port()),
                                 "tcp+zstd://" + host + std::to_string(server.tcp_port())}) {
    Client client(url);
    for (const auto& c : kCases) {
      INFO(url << " " << c.model);
      CHECK(compare_with_reference(c, client.infer_future(reference_request(c)).get()) == "");
    }
  }
  server.stop();
}

TEST_CASE("ModelConfig and RepositoryIndex report the repository") {
  Server server(served_executor(), local_options());
  server.start();
  Client client("grpc://127.0.0.1:" + std::to_string(server.port()));
  const std::string config = client.model_config("emtrk_cnn_onnx");
  CHECK(config.find("\"max_batch_size\":64") != std::string::npos);
  CHECK(config.find("\"platform\":\"onnxruntime_onnx\"") != std::string::npos);
  CHECK(config.find("\"backend\":\"onnxruntime\"") != std::string::npos);
  CHECK(config.find("\"name\":\"michel\"") != std::string::npos);
  server.stop();
}

TEST_CASE("several versions over gRPC: metadata lists them, requests name one or get the highest") {
  namespace fs = std::filesystem;
  auto root = test::scratch_model(SONIC_TEST_SCRATCH, "versions", "jet_mlp_onnx", "model.onnx",
                                  "max_batch_size: 8 version_policy { all {} }");
  fs::copy(fs::path(root) / "jet_mlp_onnx" / "1", fs::path(root) / "jet_mlp_onnx" / "2");
  auto executor = std::make_shared<CpuExecutor>(2);
  executor->set_source(std::make_shared<repository::Repository>(std::vector<std::string>{root}),
                       false);
  REQUIRE(executor->load_model("jet_mlp_onnx"));
  Server server(executor, local_options());
  server.start();
  Client client("grpc://127.0.0.1:" + std::to_string(server.port()));
  CHECK(client.model_metadata("jet_mlp_onnx").versions == std::vector<std::string>{"1", "2"});
  CHECK(client.model_ready("jet_mlp_onnx", "1"));
  CHECK_FALSE(client.model_ready("jet_mlp_onnx", "3"));
  std::vector<std::string> indexed;
  for (const auto& model : client.repository_index()) indexed.push_back(model.version);
  CHECK(indexed == std::vector<std::string>{"1", "2"});
  for (const std::string version : {"1", "2", ""}) {
    InferRequest request = reference_request(kCases[0]);
    InferRequest versioned("jet_mlp_onnx", version);
    for (const auto& input : request.inputs()) versioned.input(input.name, input.tensor);
    InferResult result = client.infer_future(versioned).get();
    INFO("version '" << version << "'");
    CHECK(result.model_version() == (version.empty() ? "2" : version));
    CHECK(compare_with_reference(kCases[0], std::move(result)) == "");
  }
  InferRequest unknown("jet_mlp_onnx", "3");
  unknown.input("features", Tensor::from_vector(std::vector<float>(16), {1, 16}));
  try {
    client.infer(unknown);
    FAIL("version 3 should not be found");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::NotFound);
  }
  server.stop();
}

TEST_CASE("the server dies mid-run: every answer still comes, right, from the fallback") {
  auto server = std::make_unique<Server>(served_executor(), local_options());
  server->start();
  ClientOptions options;
  options.fallback = repository::executor_from_repository({kRepository}, 2);
  options.default_timeout = std::chrono::seconds(20);
  Client client("grpc://127.0.0.1:" + std::to_string(server->port()), options);
  const Case& tagger = kCases[0];
  const Case& graph = kCases[4];
  int right = 0;
  for (int event = 0; event < 60; ++event) {
    if (event == 20) server.reset();  // the server is gone: killed, as far as the client sees
    const Case& c = event % 2 ? graph : tagger;
    std::string difference =
        compare_with_reference(c, client.infer_future(reference_request(c)).get());
    if (difference.empty()) {
      ++right;
    } else {
      MESSAGE("event " << event << ": " << difference);
    }
  }
  CHECK(right == 60);
  CHECK(client.stats().fallbacks > 0);
}

namespace {

// An executor over a copy of jet_mlp_onnx that merges requests: up to 64 rows (16 of
// reference_request's), waiting at most `delay` for more.
std::shared_ptr<CpuExecutor> batching_executor(const std::string& case_name,
                                               std::chrono::microseconds delay) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(SONIC_TEST_SCRATCH) / case_name;
  fs::remove_all(root);
  fs::create_directories(root / "jet_mlp_onnx" / "1");
  fs::copy_file(fs::path(kRepository) / "jet_mlp_onnx" / "1" / "model.onnx",
                root / "jet_mlp_onnx" / "1" / "model.onnx");
  std::ofstream(root / "jet_mlp_onnx" / "config.pbtxt")
      << "max_batch_size: 64 dynamic_batching { max_queue_delay_microseconds: " << delay.count()
      << " }";
  auto executor = std::make_shared<CpuExecutor>(2);
  executor->set_source(
      std::make_shared<repository::Repository>(std::vector<std::string>{root.string()}), false);
  REQUIRE(executor->load_model("jet_mlp_onnx"));
  return executor;
}

}  // namespace

TEST_CASE("a server merges concurrent requests of a batching model, each answered right") {
  auto executor = batching_executor("batching", std::chrono::microseconds(5000));
  Server server(executor, local_options());
  server.start();
  const Case& tagger = kCases[0];
  for (const std::string& url : {"grpc://127.0.0.1:" + std::to_string(server.port()),
                                 "tcp://127.0.0.1:" + std::to_string(server.tcp_port())}) {
    Client client(url);
    std::vector<std::future<InferResult>> answers;
    for (int i = 0; i < 32; ++i) answers.push_back(client.infer_future(reference_request(tagger)));
    for (auto& answer : answers) CHECK(compare_with_reference(tagger, answer.get()) == "");
  }
  auto stats = executor->statistics("jet_mlp_onnx").value();
  CHECK(stats.inference_count == 2 * 32 * 4);  // 4 rows per request
  CHECK(stats.execution_count < 64);           // merged: 16 requests fill a batch of 64
  CHECK_FALSE(stats.batch_stats.empty());
  server.stop();
}

// A connection's requests wait their turn for the executor's threads (two per thread), except a
// batching model's, which all go to its batcher: held back, they would make batches of at most
// that many. A stream's requests are placed as a call's are (server/src/infer_dispatch.hpp).
TEST_CASE("a stream's requests for a batching model reach its batcher together, as calls' do") {
  // The batcher waits up to 50 ms for a full batch: 32 requests make 2 batches of 16 when they
  // reach it together, at least 8 when a connection holds all but 4 of them back.
  auto executor = batching_executor("stream_batching", std::chrono::microseconds(50000));
  Server server(executor, local_options());
  server.start();
  const Case& tagger = kCases[0];
  Client client("grpc://127.0.0.1:" + std::to_string(server.port()));
  std::mutex mutex;
  int right = 0;
  auto stream = client.open_stream([&](StreamResponse response) {
    std::lock_guard<std::mutex> lock(mutex);
    right += compare_with_reference(tagger, response.result) == "" ? 1 : 0;
  });
  for (int i = 0; i < 32; ++i) REQUIRE(stream.send(reference_request(tagger)).ok());
  stream.close();
  REQUIRE(stream.wait().ok());
  CHECK(right == 32);
  auto stats = executor->statistics("jet_mlp_onnx").value();
  CHECK(stats.inference_count == 32 * 4);
  CHECK(stats.execution_count <= 4);
  server.stop();
}

TEST_CASE("RepositoryModelLoad with a configuration, over gRPC, as Triton's clients send it") {
  auto executor = std::make_shared<CpuExecutor>(2);
  executor->set_source(
      std::make_shared<repository::Repository>(std::vector<std::string>{kRepository}), false);
  REQUIRE(executor->load_model("jet_mlp_onnx"));
  ServerOptions options = local_options();
  options.model_control = true;
  Server server(executor, options);
  server.start();
  Client client("grpc://127.0.0.1:" + std::to_string(server.port()));
  client.load_model("jet_mlp_onnx",
                    R"({"max_batch_size": 8, "dynamic_batching": {"preferred_batch_size": [8]}})");
  const std::string config = client.model_config("jet_mlp_onnx");
  CHECK(config.find("\"max_batch_size\":8") != std::string::npos);
  CHECK(config.find("\"preferred_batch_size\":[8]") != std::string::npos);
  CHECK(executor->batches("jet_mlp_onnx"));
  CHECK(compare_with_reference(kCases[0],
                               client.infer_future(reference_request(kCases[0])).get()) == "");
  // A configuration the model contradicts: refused with the reason, which the index keeps.
  try {
    client.load_model("jet_mlp_onnx", R"({"max_batch_size": 8, "input": [{"name": "nope",
                                          "data_type": "TYPE_FP32", "dims": [16]}]})");
    FAIL("the load should have failed");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::InvalidArgument);
    CHECK(std::string(e.what()).find("input 'nope' is not in the ONNX graph") != std::string::npos);
  }
  for (const auto& model : client.repository_index()) {
    if (model.name == "jet_mlp_onnx") CHECK(model.reason.find("'nope'") != std::string::npos);
  }
  server.stop();
}

TEST_CASE("a stateful model served: sequences over a stream and unary calls, as Triton's clients") {
  auto executor = std::make_shared<CpuExecutor>(2);
  executor->set_source(
      std::make_shared<repository::Repository>(std::vector<std::string>{kRepository}), false);
  REQUIRE(executor->load_model("track_energy_onnx"));
  Server server(executor, local_options());
  server.start();
  Client client("grpc://127.0.0.1:" + std::to_string(server.port()));
  auto hit = [](float energy, std::uint64_t track, bool first, bool last, int n) {
    return std::move(InferRequest("track_energy_onnx")
                         .input("energy", Tensor::from_vector(std::vector<float>{energy}, {1, 1}))
                         .sequence(track, first, last)
                         .id(std::to_string(track) + "/" + std::to_string(n)));
  };
  // Triton's sequence stream client: every request of two tracks sent at once, interleaved,
  // without waiting for answers. Each track's requests still run in order, one at a time.
  std::mutex mutex;
  std::map<std::string, float> means;
  std::promise<void> all_answered;
  constexpr int kHits = 40;
  auto stream = client.open_stream([&](StreamResponse response) {
    std::lock_guard<std::mutex> lock(mutex);
    REQUIRE_MESSAGE(response.result, response.result.error().message());
    means[response.request_id] = response.result->output("mean_energy").as<float>()[0];
    if (means.size() == 2 * kHits) all_answered.set_value();
  });
  for (int n = 0; n < kHits; ++n) {
    for (std::uint64_t track : {5u, 6u}) {
      const float energy = track == 5 ? static_cast<float>(n) : 100.0f;
      REQUIRE(stream.send(hit(energy, track, n == 0, n == kHits - 1, n)));
    }
  }
  REQUIRE(all_answered.get_future().wait_for(std::chrono::seconds(20)) ==
          std::future_status::ready);
  stream.close();
  for (int n = 0; n < kHits; ++n) {
    CHECK(means.at("5/" + std::to_string(n)) == doctest::Approx(n / 2.0));  // mean of 0..n
    CHECK(means.at("6/" + std::to_string(n)) == doctest::Approx(100));
  }
  // Unary calls, and Triton's refusal of a sequence that was not started.
  CHECK(client.infer(hit(8, 9, true, false, 0)).output("mean_energy").as<float>()[0] == 8);
  CHECK(client.infer(hit(4, 9, false, true, 1)).output("mean_energy").as<float>()[0] == 6);
  try {
    client.infer(hit(1, 9, false, false, 2));
    FAIL("a request of an ended sequence was answered");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::InvalidArgument);
    CHECK(std::string(e.what()).find("must specify the START flag") != std::string::npos);
  }
  server.stop();
}
