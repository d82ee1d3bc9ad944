// The Python backend below the server: its frames' bounds (a stub that declares lengths past
// the limits costs an error, not memory), a decoupled model's responses as the backend hands
// them on, and models' response parameters as the executor's results carry them.
// (test_python_backend.py runs the rest through sonic-server and a client's fallback.)
#include "stub_frame.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "sonic/executor.hpp"
#include "sonic/repository/backend.hpp"
#include "sonic/repository/model_config.hpp"
#include "sonic/repository/repository.hpp"

namespace pb = sonic::python_backend;
using sonic::StatusCode;

namespace {

struct SocketPair {
  int ends[2];
  SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0); }
  ~SocketPair() {
    for (int fd : ends) {
      if (fd >= 0) ::close(fd);
    }
  }
  void close_writer() {
    ::close(ends[1]);
    ends[1] = -1;
  }
};

std::string le(std::uint64_t value, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(value >> (8 * i)));
  return out;
}

void write_raw(int fd, const std::string& bytes) {
  REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
}

auto soon() { return std::chrono::steady_clock::now() + std::chrono::seconds(5); }

}  // namespace

TEST_CASE("a frame comes back as it was written, its buffers 64-byte aligned") {
  SocketPair pair;
  const std::string a = "first buffer";
  const std::string b(100000, 'x');  // more than a socket buffer: written while read
  std::thread writer([&] {
    CHECK(pb::write_frame(pair.ends[1], R"({"type":"t"})",
                          {{a.data(), a.size()}, {nullptr, 0}, {b.data(), b.size()}}, soon()));
  });
  auto frame = pb::read_frame(pair.ends[0], soon(), {});
  writer.join();
  REQUIRE(frame);
  CHECK(frame->header == R"({"type":"t"})");
  REQUIRE(frame->buffers.size() == 3);
  CHECK(std::string(static_cast<const char*>(frame->buffers[0].data), frame->buffers[0].size) == a);
  CHECK(frame->buffers[1].size == 0);
  CHECK(std::string(static_cast<const char*>(frame->buffers[2].data), frame->buffers[2].size) == b);
  CHECK(reinterpret_cast<std::uintptr_t>(frame->buffers[2].data) % 64 == 0);
}

TEST_CASE("a write to a peer that stopped reading ends at its deadline") {
  SocketPair pair;
  const std::string big(8 << 20, 'x');  // far more than a socket buffer
  const auto started = std::chrono::steady_clock::now();
  auto sent = pb::write_frame(pair.ends[0], R"({"type":"t"})", {{big.data(), big.size()}},
                              started + std::chrono::milliseconds(200));
  REQUIRE(!sent);
  CHECK(sent.error().code() == StatusCode::DeadlineExceeded);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));
}

TEST_CASE("declared lengths past the limits are refused before anything is allocated") {
  SocketPair pair;
  SUBCASE("a header over 16 MiB") {
    write_raw(pair.ends[1], le(pb::kMaxHeaderBytes + 1, 4) + le(0, 4));
    auto frame = pb::read_frame(pair.ends[0], soon(), {});
    REQUIRE(!frame);
    CHECK(frame.error().code() == StatusCode::DataLoss);
  }
  SUBCASE("buffers summing past the limit, each under it") {
    pb::FrameLimits limits;
    limits.max_buffer_bytes = 1000;
    write_raw(pair.ends[1], le(2, 4) + le(2, 4) + le(600, 8) + le(600, 8) + "{}");
    auto frame = pb::read_frame(pair.ends[0], soon(), limits);
    REQUIRE(!frame);
    CHECK(frame.error().code() == StatusCode::DataLoss);
    CHECK(frame.error().message().find("1000 bytes") != std::string::npos);
  }
  SUBCASE("sizes that would wrap a 64-bit sum") {
    write_raw(pair.ends[1], le(2, 4) + le(2, 4) + le(~std::uint64_t{0}, 8) + le(2, 8) + "{}");
    auto frame = pb::read_frame(pair.ends[0], soon(), {});
    REQUIRE(!frame);
    CHECK(frame.error().code() == StatusCode::DataLoss);
  }
}

TEST_CASE("a peer that stops or closes mid-frame is an error, within the deadline") {
  SocketPair pair;
  write_raw(pair.ends[1], le(10, 4) + le(0, 4) + "{\"ty");
  SUBCASE("silent") {
    const auto started = std::chrono::steady_clock::now();
    auto frame = pb::read_frame(pair.ends[0], started + std::chrono::milliseconds(100), {});
    REQUIRE(!frame);
    CHECK(frame.error().code() == StatusCode::DeadlineExceeded);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(2));
  }
  SUBCASE("closed") {
    pair.close_writer();
    auto frame = pb::read_frame(pair.ends[0], soon(), {});
    REQUIRE(!frame);
    CHECK(frame.error().code() == StatusCode::Unavailable);
    CHECK(frame.error().message() == "closed within a frame");
  }
}

namespace {

sonic::repository::ModelConfig config_of(const std::string& model) {
  const std::string path = std::string(SONIC_PYTHON_BACKEND_MODELS) + "/" + model + "/config.pbtxt";
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  auto config = sonic::repository::parse_model_config(text.str(), path);
  REQUIRE(config);
  return *config;
}

sonic::Result<sonic::repository::LoadedModel> load(const std::string& model) {
  const auto config = config_of(model);
  auto backend = sonic::repository::find_backend(config);
  REQUIRE(backend);
  const std::string directory = std::string(SONIC_PYTHON_BACKEND_MODELS) + "/" + model;
  return backend->load(config, directory + "/1/model.py", {model, "1", directory, nullptr});
}

}  // namespace

TEST_CASE("a decoupled model's responses are handed on one by one, and then it returns") {
  auto loaded = load("repeat");
  REQUIRE_MESSAGE(loaded, (loaded ? "" : loaded.error().message()));
  REQUIRE(loaded->decoupled);
  std::vector<std::int32_t> values{5, -6, 7};
  auto request = sonic::InferRequest("repeat").input("IN", sonic::Tensor::view(values, {3}));
  std::vector<std::int32_t> got;
  auto done = loaded->decoupled(request, [&](std::vector<sonic::NamedTensor> outputs) {
    REQUIRE(outputs.size() == 1);
    CHECK(outputs[0].name == "OUT");
    got.push_back(outputs[0].tensor.as<std::int32_t>()[0]);
  });
  REQUIRE_MESSAGE(done, (done ? "" : done.error().message()));
  CHECK(got == values);
  // No responses at all is an answer too: only the final flag comes.
  std::vector<std::int32_t> none;
  auto empty = sonic::InferRequest("repeat").input("IN", sonic::Tensor::view(none, {0}));
  int responses = 0;
  CHECK(loaded->decoupled(empty, [&](std::vector<sonic::NamedTensor>) { ++responses; }));
  CHECK(responses == 0);
  // Where no stream can take them, the request says so rather than losing responses.
  auto single = loaded->compute(request);
  REQUIRE(!single);
  CHECK(single.error().code() == StatusCode::Unimplemented);
}

TEST_CASE("without python3 the load says how to get one") {
  const char* before = std::getenv("SONIC_PYTHON");
  const std::string saved = before ? before : "";
  ::setenv("SONIC_PYTHON", "/nonexistent/python3", 1);
  auto loaded = load("simple_identity");
  if (saved.empty()) {
    ::unsetenv("SONIC_PYTHON");
  } else {
    ::setenv("SONIC_PYTHON", saved.c_str(), 1);
  }
  REQUIRE(!loaded);
  CHECK(loaded.error().code() == StatusCode::FailedPrecondition);
  CHECK(loaded.error().message().find("/nonexistent/python3") != std::string::npos);
}

TEST_CASE("a Python model's response parameters reach the executor's results, typed") {
  auto executor = sonic::CpuExecutor::with_models({}, 2);
  executor->set_source(std::make_shared<sonic::repository::Repository>(
                           std::vector<std::string>{SONIC_PYTHON_BACKEND_MODELS}),
                       true);
  std::vector<std::int32_t> zero{0};
  auto result = executor->infer(sonic::InferRequest("response_parameters")
                                    .input("IN", sonic::Tensor::view(zero, {1}))
                                    .parameter("tag", std::string("asked")));
  REQUIRE_MESSAGE(result, (result ? "" : result.error().message()));
  const sonic::Parameters& got = result->parameters();
  CHECK(got.at("flag") == sonic::Parameter(true));
  CHECK(got.at("count") == sonic::Parameter(std::numeric_limits<std::int64_t>::min()));
  CHECK(got.at("name") == sonic::Parameter(std::string("żółw")));
  CHECK(got.at("echo") == sonic::Parameter(std::string("asked")));
  // A decoupled model's responses, each with its own.
  std::vector<std::int32_t> values{4, 5};
  std::vector<sonic::Parameters> each;
  auto done = executor->infer_responses(
      sonic::InferRequest("decoupled_parameters").input("IN", sonic::Tensor::view(values, {2})),
      [&](sonic::InferResult r) { each.push_back(r.parameters()); });
  REQUIRE_MESSAGE(done, (done ? "" : done.error().message()));
  REQUIRE(each.size() == 2);
  for (std::int64_t i = 0; i < 2; ++i) {
    const sonic::Parameters& one = each[static_cast<std::size_t>(i)];
    CHECK(one.at("index") == sonic::Parameter(i));
    CHECK(one.at("last") == sonic::Parameter(i == 1));
    CHECK(one.count("triton_final_response") == 0);  // the server's own name
  }
}
