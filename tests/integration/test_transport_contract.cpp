// The async contract of sonic::Transport (include/sonic/transport.hpp), checked on each
// transport linked into this program as the registry makes it (grpc://, tcp://, http://, and
// grpc+shm:// where sonic::shm is linked): every completion runs exactly once, never inside the
// call that started it and never on the caller's thread; on the failures a call can meet before
// anything is sent (a request over max_message_bytes, a closed port, a deadline already passed),
// on the server's errors (an unknown model), and on success. Also the defaults of the Transport
// base class, which have no thread of their own.
#include <sonic/transport.hpp>

#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loopback_server.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace transport_contract {

// Set on the test's thread while it is inside a transport's call.
thread_local bool inside_call = false;

// Runs `start` (one call into a transport) marked as inside the call.
template <typename Start>
void initiate(Start&& start) {
  inside_call = true;
  start();
  inside_call = false;
}

// What became of one completion handler: how often it ran, where, with what code.
class Completion {
 public:
  explicit Completion(std::string what) : what_(std::move(what)) {}

  template <typename T>
  Callback<T> callback() {
    return [this](Result<T> result) { record(result.code()); };
  }

  /// Waits (bounded) for the first run, then checks where it happened.
  void check_ran_outside() {
    std::unique_lock<std::mutex> lock(mutex_);
    REQUIRE_MESSAGE(changed_.wait_for(lock, 15s, [this] { return runs_ > 0; }),
                    what_ << ": done never ran");
    CHECK_MESSAGE(!ran_inside_, what_ << ": done ran inside the initiating call");
    CHECK_MESSAGE(!ran_on_caller_, what_ << ": done ran on the caller's thread");
  }

  /// Checks, once the transport is gone (no more runs can come), that it ran exactly once.
  void check_ran_once() const {
    std::lock_guard<std::mutex> lock(mutex_);
    CHECK_MESSAGE(runs_ == 1, what_ << ": done ran " << runs_ << " times");
  }

  StatusCode code() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return code_;
  }
  int runs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return runs_;
  }
  const std::string& what() const { return what_; }

 private:
  void record(StatusCode code) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (inside_call) ran_inside_ = true;
    if (std::this_thread::get_id() == caller_) ran_on_caller_ = true;
    code_ = code;
    ++runs_;
    changed_.notify_all();
  }

  std::string what_;
  std::thread::id caller_ = std::this_thread::get_id();
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int runs_ = 0;
  bool ran_inside_ = false;
  bool ran_on_caller_ = false;
  StatusCode code_ = StatusCode::Ok;
};

// The transports that this program links, by the scheme that names each.
std::vector<std::string> linked_schemes() {
  std::vector<std::string> schemes;
  for (const char* scheme : {"grpc", "tcp", "http", "grpc+shm"}) {
    if (transport_registry().has(scheme)) schemes.emplace_back(scheme);
  }
  return schemes;
}

// A port on 127.0.0.1 where nothing listens: bound, then closed.
std::uint16_t closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::unique_ptr<Transport> make_transport(const std::string& url, const ClientOptions& options) {
  auto endpoint = parse_endpoint(url);
  REQUIRE(endpoint);
  auto transport = transport_registry().create(*endpoint, options);
  REQUIRE_MESSAGE(transport, url << ": " << transport.error().message());
  return std::move(*transport);
}

constexpr std::size_t kMaxMessage = 4096;  // the clients' max_message_bytes here

ClientOptions small_messages() {
  ClientOptions options;
  options.max_message_bytes = kMaxMessage;
  options.connect_timeout = 2s;
  options.control_timeout = 5s;
  return options;
}

// A request well over kMaxMessage.
InferRequest oversized_request() {
  return InferRequest("identity_fp32")
      .input("INPUT0", Tensor::from_vector(std::vector<float>(4 * kMaxMessage, 1.0f),
                                           {1, static_cast<std::int64_t>(4 * kMaxMessage)}));
}

Deadline soon() { return deadline_after(10s); }
Deadline passed() { return Clock::now() - 1s; }

// The calls made on one transport, checked together: each ran outside its call as it came, and
// exactly once after the transport was destroyed.
struct Calls {
  std::vector<std::unique_ptr<Completion>> all;
  Completion& add(std::string what) {
    all.push_back(std::make_unique<Completion>(std::move(what)));
    return *all.back();
  }
  void check_each_ran_outside() {
    for (auto& c : all) c->check_ran_outside();
  }
  void check_each_ran_once() {
    for (auto& c : all) c->check_ran_once();
  }
};

// Opens a stream, and, when it opens, sends `request` and closes it; whether it opened. A stream
// that fails to open must never run either callback; one that opens runs `done` once, outside
// this call.
bool stream_call(Transport& transport, Calls& calls, const std::string& what,
                 const InferRequest* request, std::atomic<int>& responses_inside,
                 std::atomic<int>& responses) {
  Completion& done = calls.add(what);
  Result<std::unique_ptr<TransportStream>> stream = Error(StatusCode::Unknown, "not opened");
  initiate([&] {
    stream = transport.open_stream(
        soon(),
        [&responses, &responses_inside](StreamResponse) {
          if (inside_call) ++responses_inside;
          ++responses;
        },
        done.callback<void>());
  });
  if (!stream) {
    // Refused at once: neither callback ever runs, and there is no completion to check.
    std::this_thread::sleep_for(50ms);
    CHECK_MESSAGE(done.runs() == 0, what << ": done ran although open_stream failed");
    calls.all.pop_back();
    return false;
  }
  // (A stream whose connection failed may have ended already: send() then refuses.)
  if (request) initiate([&] { (void)(*stream)->send(*request); });
  initiate([&] { (*stream)->close(); });
  done.check_ran_outside();
  initiate([&] { stream->reset(); });
  return true;
}

TEST_CASE("transport contract: calls that fail before anything is sent complete later") {
  const std::uint16_t port = closed_port();
  for (const auto& scheme : linked_schemes()) {
    CAPTURE(scheme);
    const std::string url = scheme + "://127.0.0.1:" + std::to_string(port);
    auto transport = make_transport(url, small_messages());
    Calls calls;
    const InferRequest big = oversized_request();
    const InferRequest small = simple_request(1, 2);

    // Over max_message_bytes: refused before anything is written.
    initiate([&] {
      transport->infer_async(big, soon(), nullptr,
                             calls.add(url + " oversized infer").callback<InferResult>());
    });
    initiate([&] {
      transport->call_async("ServerReady", std::string(4 * kMaxMessage, 'x'), soon(),
                            calls.add(url + " oversized call").callback<std::string>());
    });
    // Nothing listens: the connection cannot be made.
    initiate([&] {
      transport->infer_async(small, soon(), nullptr,
                             calls.add(url + " infer, closed port").callback<InferResult>());
    });
    initiate([&] {
      transport->server_ready_async(soon(),
                                    calls.add(url + " ServerReady, closed port").callback<bool>());
    });
    initiate([&] {
      transport->model_metadata_async(
          "simple", "", soon(),
          calls.add(url + " ModelMetadata, closed port").callback<ModelMetadata>());
    });
    // A deadline already passed.
    initiate([&] {
      transport->infer_async(small, passed(), nullptr,
                             calls.add(url + " infer, deadline passed").callback<InferResult>());
    });
    initiate([&] {
      transport->server_live_async(
          passed(), calls.add(url + " ServerLive, deadline passed").callback<bool>());
    });
    std::atomic<int> responses{0}, responses_inside{0};
    stream_call(*transport, calls, url + " stream, closed port", &small, responses_inside,
                responses);
    calls.check_each_ran_outside();
    for (auto& c : calls.all) CHECK_MESSAGE(c->code() != StatusCode::Ok, c->what());
    transport.reset();
    calls.check_each_ran_once();
    CHECK(responses == 0);
  }
}

TEST_CASE("transport contract: answers and the server's errors complete later, once") {
  ServerOptions server_options;
  server_options.tcp_port = 0;  // ephemeral ones
  server_options.http_port = 0;
  LoopbackServer server(server_options);
  for (const auto& scheme : linked_schemes()) {
    CAPTURE(scheme);
    const std::uint16_t port = scheme == "tcp"    ? server.tcp_port()
                               : scheme == "http" ? server.http_port()
                                                  : server.port();
    const std::string url = scheme + "://127.0.0.1:" + std::to_string(port);
    auto transport = make_transport(url, small_messages());
    Calls calls;
    const InferRequest small = simple_request(3, 1);
    const InferRequest unknown =
        InferRequest("no_such_model")
            .input("INPUT0", Tensor::from_vector(std::vector<float>(4, 1.0f), {1, 4}));
    const InferRequest big = oversized_request();

    Completion& ready = calls.add(url + " ServerReady");
    initiate([&] { transport->server_ready_async(soon(), ready.callback<bool>()); });
    ready.check_ran_outside();  // connected from here on
    CHECK(ready.code() == StatusCode::Ok);

    Completion& answered = calls.add(url + " infer");
    initiate(
        [&] { transport->infer_async(small, soon(), nullptr, answered.callback<InferResult>()); });
    Completion& not_found = calls.add(url + " infer, unknown model");
    initiate([&] {
      transport->infer_async(unknown, soon(), nullptr, not_found.callback<InferResult>());
    });
    Completion& metadata = calls.add(url + " ModelMetadata, unknown model");
    initiate([&] {
      transport->model_metadata_async("no_such_model", "", soon(),
                                      metadata.callback<ModelMetadata>());
    });
    Completion& model_ready = calls.add(url + " ModelReady");
    initiate(
        [&] { transport->model_ready_async("simple", "", soon(), model_ready.callback<bool>()); });
    Completion& live = calls.add(url + " call_async ServerLive");
    initiate([&] {
      transport->call_async("ServerLive", std::string(), soon(), live.callback<std::string>());
    });
    Completion& late = calls.add(url + " infer, deadline passed");
    initiate(
        [&] { transport->infer_async(small, passed(), nullptr, late.callback<InferResult>()); });
    Completion& oversized = calls.add(url + " oversized infer");
    initiate(
        [&] { transport->infer_async(big, soon(), nullptr, oversized.callback<InferResult>()); });
    Completion& oversized_call = calls.add(url + " oversized call");
    initiate([&] {
      transport->call_async("ServerLive", std::string(4 * kMaxMessage, 'x'), soon(),
                            oversized_call.callback<std::string>());
    });
    std::atomic<int> responses{0}, responses_inside{0};
    const bool streamed =
        stream_call(*transport, calls, url + " stream", &small, responses_inside, responses);

    calls.check_each_ran_outside();
    CHECK(answered.code() == StatusCode::Ok);
    CHECK(not_found.code() != StatusCode::Ok);
    CHECK(metadata.code() != StatusCode::Ok);
    CHECK(model_ready.code() == StatusCode::Ok);
    CHECK(live.code() == StatusCode::Ok);
    CHECK(late.code() != StatusCode::Ok);
    // grpc+shm:// carries the tensors in shared memory: only the other transports refuse it.
    if (scheme != "grpc+shm") CHECK(oversized.code() != StatusCode::Ok);
    CHECK(responses_inside == 0);
    if (streamed) CHECK(responses == 1);
    transport.reset();
    calls.check_each_ran_once();
  }
}

TEST_CASE(
    "transport contract: a call that failed before it was sent has completed when its "
    "transport is destroyed") {
  const std::uint16_t port = closed_port();
  for (const auto& scheme : linked_schemes()) {
    CAPTURE(scheme);
    const std::string url = scheme + "://127.0.0.1:" + std::to_string(port);
    for (int round = 0; round < 20; ++round) {
      auto transport = make_transport(url, small_messages());
      const InferRequest big = oversized_request();
      Completion oversized(url + " oversized infer, transport destroyed at once");
      initiate(
          [&] { transport->infer_async(big, soon(), nullptr, oversized.callback<InferResult>()); });
      transport.reset();  // returns once every call of the transport has completed
      oversized.check_ran_once();
      if (oversized.runs() != 1) break;
    }
  }
}

// A transport that implements only what it must: its control calls never answer, and streams
// are the base class's default (UNIMPLEMENTED).
class BareTransport final : public Transport {
 public:
  void infer_async(const InferRequest&, Deadline, std::shared_ptr<CancelSignal>,
                   Callback<InferResult>) override {}
  void control_async(ControlRequest, Deadline, Callback<ControlAnswer>) override {}
};

TEST_CASE("transport contract: the base class's UNIMPLEMENTED answers complete later, once") {
  // A name that is no control method is answered by the base class, on the process's
  // completion thread; so is a stream where the transport has none.
  auto transport = std::make_unique<BareTransport>();
  Calls calls;
  for (const char* name : {"NoSuchMethod", "ModelInfer", "modelready"}) {
    initiate(
        [&] { transport->call_async(name, "", soon(), calls.add(name).callback<std::string>()); });
  }
  std::atomic<int> responses{0}, responses_inside{0};
  stream_call(*transport, calls, "open_stream", nullptr, responses_inside, responses);
  calls.check_each_ran_outside();
  for (auto& c : calls.all) CHECK(c->code() == StatusCode::Unimplemented);
  transport.reset();
  calls.check_each_ran_once();

  // Destroyed at once: the answers have run when the destructor returns.
  for (int round = 0; round < 20; ++round) {
    auto bare = std::make_unique<BareTransport>();
    Completion unknown("an unknown method, transport destroyed at once");
    initiate(
        [&] { bare->call_async("NoSuchMethod", "", soon(), unknown.callback<std::string>()); });
    bare.reset();
    unknown.check_ran_once();
    if (unknown.runs() != 1) break;
  }

  // Destroyed by an answer of its own, with another still queued behind it on the thread that
  // runs them: the destructor must not wait for that thread (itself).
  auto owned = std::make_shared<std::unique_ptr<BareTransport>>(std::make_unique<BareTransport>());
  std::promise<void> gate;
  auto opened = gate.get_future().share();
  Completion holding("the first answer, holding the others back");
  Completion destroying("the second, whose answer destroys the transport");
  Completion queued("the third, queued behind it");
  initiate([&] {
    (*owned)->call_async(
        "First", "", soon(),
        [opened, inner = holding.callback<std::string>()](Result<std::string> r) mutable {
          (void)opened.wait_for(15s);  // bounded, should it run inside
          inner(std::move(r));
        });
  });
  initiate([&] {
    (*owned)->call_async(
        "Second", "", soon(),
        [owned, inner = destroying.callback<std::string>()](Result<std::string> r) mutable {
          owned->reset();
          inner(std::move(r));
        });
  });
  REQUIRE(*owned != nullptr);  // the second answer has not run yet
  initiate([&] { (*owned)->call_async("Third", "", soon(), queued.callback<std::string>()); });
  gate.set_value();
  holding.check_ran_outside();
  destroying.check_ran_outside();
  queued.check_ran_outside();
  CHECK(*owned == nullptr);
  holding.check_ran_once();
  destroying.check_ran_once();
  queued.check_ran_once();
}

}  // namespace transport_contract
