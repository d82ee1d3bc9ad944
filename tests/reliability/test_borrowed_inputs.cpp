// The contract of borrowed inputs (Tensor::view): sonic reads them until the request's callback
// runs, and never after, whatever ends the request: an answer, a cancel, a deadline, a local
// run that wins, a remote one that wins. The tests take the memory away inside the callback
// (poison it, or make it unreadable) and watch whether anything still reads it.
#include <doctest/doctest.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "fault_proxy.hpp"
#include "loopback_server.hpp"
#include "loopback_socket.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

// A one-shot gate a model waits at, so that the test decides when it reads its input.
class Gate {
 public:
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    wake_.notify_all();
  }
  bool wait(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    return wake_.wait_for(lock, limit, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool open_ = false;
};

// An FP32 identity over [-1,-1] that, once started, waits at the gate and then records the
// first element of its input: what it read after the test moved on.
struct GatedIdentity {
  Gate gate;
  std::atomic<bool> started{false};
  std::atomic<float> seen{0};

  Model model(const std::string& name) {
    Model m;
    m.name = name;
    m.inputs = {{"INPUT0", DataType::Fp32, {-1, -1}}};
    m.outputs = {{"OUTPUT0", DataType::Fp32, {-1, -1}}};
    m.compute = [this](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
      started = true;
      gate.wait(5s);
      const Tensor& input = request.find_input("INPUT0")->tensor;
      seen = input.as<float>()[0];
      return std::vector<NamedTensor>{{"OUTPUT0", input.to_owned(), {}}};
    };
    return m;
  }
};

constexpr float kValue = 7.0f;
constexpr float kPoison = -1.0f;

// Memory for a borrowed tensor that the test can make unreadable: a write that still reads it
// then fails with EFAULT ("Bad address") instead of sending what the caller no longer owns.
class Revocable {
 public:
  explicit Revocable(std::size_t floats) : bytes_(floats * sizeof(float)) {
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    data_ = static_cast<float*>(p);
    std::fill(data_, data_ + floats, kValue);
  }
  ~Revocable() { ::munmap(data_, bytes_); }
  Tensor tensor() const {
    return Tensor::view(data_, bytes_ / sizeof(float),
                        {1, static_cast<std::int64_t>(bytes_ / sizeof(float))});
  }
  void revoke() { ::mprotect(data_, bytes_, PROT_NONE); }

 private:
  std::size_t bytes_;
  float* data_;
};

}  // namespace

TEST_CASE("a request cancelled while the CPU fallback runs it: the local run has its own inputs") {
  LoopbackSocket nothing(false);  // connects are refused: the request falls back at once
  GatedIdentity local;
  ClientOptions options;
  options.retry.max_attempts = 1;
  options.fallback = CpuExecutor::with_models({local.model("gated")}, 1);
  Client client(nothing.url(), options);
  std::vector<float> input(16, kValue);
  std::promise<StatusCode> done;
  auto handle = client.infer_async(
      InferRequest("gated").input("INPUT0", Tensor::view(input, {1, 16})),
      [&](Result<InferResult> r) {
        std::fill(input.begin(), input.end(), kPoison);  // the caller reuses its memory
        done.set_value(r.code());
      });
  REQUIRE(eventually([&] { return local.started.load(); }, 5s));
  REQUIRE(handle.cancel());
  auto code = done.get_future();
  REQUIRE(code.wait_for(2s) == std::future_status::ready);
  CHECK(code.get() == StatusCode::Cancelled);
  local.gate.open();
  REQUIRE(eventually([&] { return local.seen.load() != 0; }, 5s));
  CHECK(local.seen.load() == kValue);
}

TEST_CASE(
    "a remote answer that beats the latency budget's local run: the local run has its own "
    "inputs") {
  LoopbackServer server;  // paced_fp32 answers in about 5 ms
  GatedIdentity local;
  ClientOptions options;
  options.fallback = CpuExecutor::with_models({local.model("paced_fp32")}, 1);
  options.fallback_latency_budget = 1ms;
  Client client(server.url(), options);
  (void)client.model_metadata("paced_fp32");  // connected, so that the budget is what starts it
  for (int round = 0; round < 20 && local.seen.load() == 0; ++round) {
    std::vector<float> input(16, kValue);
    std::promise<ExecutedOn> done;
    client.infer_async(InferRequest("paced_fp32").input("INPUT0", Tensor::view(input, {1, 16})),
                       [&](Result<InferResult> r) {
                         std::fill(input.begin(), input.end(), kPoison);
                         done.set_value(r ? r->executed_on() : ExecutedOn::Local);
                       });
    auto where = done.get_future();
    REQUIRE(where.wait_for(5s) == std::future_status::ready);
    if (where.get() != ExecutedOn::Remote || !local.started) {
      continue;  // the local run did not start in time, or won: try again
    }
    local.gate.open();
    REQUIRE(eventually([&] { return local.seen.load() != 0; }, 5s));
  }
  REQUIRE(local.seen.load() != 0);  // the race happened
  CHECK(local.seen.load() == kValue);
}

TEST_CASE("a request stuck in the socket: no byte of it is sent after its callback") {
  // The proxy stalls after the first answer, so the request's 64 MiB sit in the socket with a
  // small request queued behind them on the same connection. The big one ends (cancel or
  // deadline), and its callback makes its memory unreadable; then the network heals. A write
  // that still read that memory fails with EFAULT, and the connection, with the small request
  // on it, with "Bad address".
  for (std::string scheme : {"grpc", "tcp"}) {
    for (bool by_deadline : {false, true}) {
      CAPTURE(scheme);
      CAPTURE(by_deadline);
      ServerOptions server_options;
      server_options.tcp_port = 0;
      LoopbackServer server(server_options);
      FaultProxy proxy(scheme == "tcp" ? server.tcp_port() : server.port());
      ClientOptions options;
      options.retry.max_attempts = 1;
      options.share_connections = false;
      options.validate_inputs = false;
      Client client(scheme + "://127.0.0.1:" + std::to_string(proxy.port()), options);
      REQUIRE(client.infer(simple_request(1, 2)).output("OUTPUT0").byte_size() == 64);
      proxy.stall();
      Revocable memory(16 << 20);
      auto request = InferRequest("identity_fp32").input("INPUT0", memory.tensor());
      if (by_deadline) request.timeout(500ms);
      std::promise<Error> ended;
      auto start = std::chrono::steady_clock::now();
      auto handle = client.infer_async(std::move(request), [&](Result<InferResult> r) {
        memory.revoke();
        ended.set_value(r ? Error(StatusCode::Ok, "answered") : r.error());
      });
      std::vector<float> small(16, 1.0f);
      auto behind = client.infer_future(
          InferRequest("identity_fp32").input("INPUT0", Tensor::view(small, {1, 16})));
      std::this_thread::sleep_for(200ms);  // the write is stuck by now
      if (!by_deadline) handle.cancel();
      auto outcome = ended.get_future();
      // Cancelled: at once, or within the grace a stuck write gets; by deadline: on time.
      REQUIRE(outcome.wait_for(3s) == std::future_status::ready);
      Error why = outcome.get();
      CHECK(why.code() == (by_deadline ? StatusCode::DeadlineExceeded : StatusCode::Cancelled));
      CHECK(ms_since(start) < 2500);
      proxy.pass();
      try {
        (void)behind.get();
      } catch (const Error& e) {
        CHECK(std::string(e.message()).find("Bad address") == std::string::npos);
      }
    }
  }
}
