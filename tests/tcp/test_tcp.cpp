// tcp:// and tcp+zstd:// end to end against sonic::Server's TCP port: every datatype, empty, tiny
// and 256 MiB tensors, out-of-order answers on one connection, control calls, hostile peers on both
// sides, the fault proxy, deadlines and cancellation.
#include <doctest/doctest.h>

#include <sonic/builtin_models.hpp>
#include <sonic/server.hpp>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "expect_error.hpp"
#include "fault_proxy.hpp"
#include "identity_models.hpp"
#include "loopback_socket.hpp"
#include "request_option_checks.hpp"
#include "sanitizers.hpp"
#include "thread_probe.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

// Sanitizers slow everything several times; intervals in these tests scale with them.
#if defined(SONIC_TEST_SANITIZED)
constexpr int kSlowdown = 4;
#else
constexpr int kSlowdown = 1;
#endif

std::shared_ptr<CpuExecutor> tcp_executor() {
  auto executor = identity_executor();
  executor->add_model(models::identity("slow_fp32", DataType::Fp32, 300ms));
  return executor;
}

class TcpServer {
 public:
  explicit TcpServer(bool inline_models = false,
                     std::shared_ptr<CpuExecutor> executor = tcp_executor())
      : server_(std::move(executor), options(inline_models)) {
    server_.start();
  }
  std::uint16_t port() const { return server_.tcp_port(); }
  std::string url(const char* scheme) const {
    return std::string(scheme) + "://127.0.0.1:" + std::to_string(port());
  }

 private:
  static ServerOptions options(bool inline_models) {
    ServerOptions o;
    o.port = 0;
    o.tcp_port = 0;
    o.inline_models = inline_models;
    return o;
  }
  Server server_;
};

InferResult identity(Client& client, DataType type, const Tensor& input) {
  return client.infer(InferRequest(identity_name(type)).input("INPUT0", input));
}

}  // namespace

TEST_CASE("every datatype, and empty and tiny tensors, round-trip over tcp and tcp+zstd") {
  TcpServer server;
  for (const char* scheme : {"tcp", "tcp+zstd"}) {
    CAPTURE(scheme);
    Client client(server.url(scheme));
    for (DataType type : kAllDataTypes) {
      CAPTURE(to_string(type));
      for (std::size_t n : {std::size_t{1}, std::size_t{1000}}) {
        Tensor input = sample(type, n, static_cast<unsigned>(n));
        CHECK(same_bytes(identity(client, type, input).output("OUTPUT0"), input));
      }
    }
    Tensor empty = Tensor::from_vector(std::vector<float>{}, {1, 0});
    CHECK(identity(client, DataType::Fp32, empty).output("OUTPUT0").byte_size() == 0);
  }
}

TEST_CASE("a server running models on its network thread answers over tcp and tcp+zstd") {
  ThreadProbe probe;
  auto executor = tcp_executor();
  executor->add_model(probe.model("thread_probe", DataType::Fp32));
  TcpServer server(/*inline_models=*/true, executor);
  for (const char* scheme : {"tcp", "tcp+zstd"}) {
    CAPTURE(scheme);
    Client client(server.url(scheme));
    std::vector<std::future<InferResult>> answers;
    std::vector<Tensor> inputs;
    for (int i = 0; i < 100; ++i) {
      inputs.push_back(sample(DataType::Fp32, 10 + static_cast<std::size_t>(i), 7u + i));
      answers.push_back(
          client.infer_future(InferRequest("thread_probe").input("INPUT0", inputs.back())));
    }
    for (int i = 0; i < 100; ++i) CHECK(same_bytes(answers[i].get().output("OUTPUT0"), inputs[i]));
    auto unknown = expect_error(
        [&] { client.infer(InferRequest("no_such_model").input("INPUT0", inputs[0])); });
    CHECK(unknown.code() == StatusCode::NotFound);
  }
  CHECK(probe.threads() == 1);  // the network thread, never the executor's
}

TEST_CASE("256 MiB each way over tcp and tcp+zstd") {
  TcpServer server;
  std::vector<float> big((256u << 20) / 4, 0.0f);
  for (std::size_t i = 0; i < big.size(); i += 4099) big[i] = static_cast<float>(i);
  Tensor input = Tensor::view(big, {1, static_cast<std::int64_t>(big.size())});
  for (const char* scheme : {"tcp", "tcp+zstd"}) {
    CAPTURE(scheme);
    Client client(server.url(scheme));
    CHECK(same_bytes(identity(client, DataType::Fp32, input).output("OUTPUT0"), input));
  }
}

TEST_CASE("many requests interleave on one connection and complete out of order") {
  TcpServer server;
  Client client(server.url("tcp+zstd"));
  std::vector<float> data{1, 2, 3, 4};
  auto slow =
      client.infer_future(InferRequest("slow_fp32").input("INPUT0", Tensor::view(data, {1, 4})));
  std::vector<std::future<InferResult>> fast;
  std::vector<Tensor> inputs;
  for (int i = 0; i < 200; ++i) {
    inputs.push_back(
        sample(DataType::Int32, 100 + static_cast<std::size_t>(i), static_cast<unsigned>(i)));
    fast.push_back(client.infer_future(
        InferRequest(identity_name(DataType::Int32)).input("INPUT0", inputs.back())));
  }
  for (int i = 0; i < 200; ++i) CHECK(same_bytes(fast[i].get().output("OUTPUT0"), inputs[i]));
  CHECK(slow.wait_for(0s) == std::future_status::timeout);  // answered after the fast ones
  CHECK(slow.get().output("OUTPUT0").as<float>()[3] == 4.0f);
}

TEST_CASE("a stream on tcp:// is UNIMPLEMENTED, said when it is opened") {
  TcpServer server;
  Client client(server.url("tcp"));
  try {
    (void)client.open_stream([](StreamResponse) {});
    FAIL("tcp:// has no streams");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unimplemented);
  }
}

TEST_CASE("control calls over tcp: health, metadata, config, statistics, unknown model") {
  TcpServer server;
  Client client(server.url("tcp"));
  CHECK(client.server_live());
  CHECK(client.server_ready());
  CHECK(client.model_ready("identity_fp32"));
  CHECK_FALSE(client.model_ready("nope"));
  CHECK(client.server_metadata().name == "sonic-server");
  CHECK(client.model_metadata("identity_fp32").inputs.at(0).name == "INPUT0");
  CHECK(client.model_config("identity_fp32").find("identity_fp32") != std::string::npos);
  CHECK_FALSE(client.model_statistics().empty());
  try {
    (void)client.infer(InferRequest("nope").input("INPUT0", sample(DataType::Fp32, 4, 1)));
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::NotFound);
  }
}

TEST_CASE("Triton's request options over tcp: checked as over gRPC") {
  TcpServer server;
  Client client(server.url("tcp"));
  Tensor input = sample(DataType::Fp32, 4, 1);
  check_request_options(
      client, [&] { return InferRequest(identity_name(DataType::Fp32)).input("INPUT0", input); });
}

TEST_CASE("a peer that is not a sonic TCP server: an error, not a crash or a hang") {
  LoopbackSocket listener(true);
  int fd = listener.fd();
  std::thread peer([fd] {
    int c = ::accept(fd, nullptr, nullptr);
    char buffer[4096];
    (void)::recv(c, buffer, sizeof buffer, 0);
    const char reply[] = "HTTP/1.1 400 Bad Request\r\n\r\n0123456789012345678901234567890123";
    (void)::send(c, reply, sizeof reply - 1, MSG_NOSIGNAL);
    std::this_thread::sleep_for(200ms);
    ::close(c);
  });
  std::string url = listener.url();
  url.replace(0, 4, "tcp");  // grpc:// -> tcp://
  ClientOptions options;
  options.validate_inputs = false;
  options.retry.max_attempts = 1;
  Client client(url, options);
  auto start = std::chrono::steady_clock::now();
  try {
    (void)client.infer(InferRequest("m").input("INPUT0", sample(DataType::Fp32, 4, 1)));
    FAIL("must throw");
  } catch (const Error& e) {
    MESSAGE(std::string(e.what()));
    CHECK(std::string(e.what()).find("bad magic") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  peer.join();
}

TEST_CASE("a hostile client gets an error frame and a closed connection; the server carries on") {
  TcpServer server;
  for (std::string garbage : {std::string("GET / HTTP/1.1\r\n\r\n") + std::string(32, 'x'),
                              std::string("SNCT\x09\x01", 6) + std::string(26, '\0')}) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(server.port());
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    (void)::send(fd, garbage.data(), garbage.size(), MSG_NOSIGNAL);
    std::string answer;
    char buffer[4096];
    ssize_t n;
    while ((n = ::recv(fd, buffer, sizeof buffer, 0)) > 0)
      answer.append(buffer, static_cast<std::size_t>(n));
    ::close(fd);
    CHECK(answer.rfind("SNCT", 0) == 0);  // an error frame, then EOF
    CHECK(answer.size() > 36);
  }
  Client client(server.url("tcp"));
  Tensor input = sample(DataType::Int8, 10, 1);
  CHECK(same_bytes(identity(client, DataType::Int8, input).output("OUTPUT0"), input));
}

TEST_CASE("connections reset by the fault proxy: requests retried, none lost") {
  TcpServer server;
  FaultProxy proxy(server.port());
  ClientOptions options;
  options.retry.max_attempts = 5;
  Client client("tcp+zstd://127.0.0.1:" + std::to_string(proxy.port()), options);
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> threads;
  std::atomic<bool> stop{false};
  std::thread chaos([&] {
    while (!stop) {
      std::this_thread::sleep_for(20ms * kSlowdown);  // a request must fit between two resets
      proxy.reset_all();
    }
  });
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 150; ++i) {
        Tensor input = sample(DataType::Fp32, 2000, static_cast<unsigned>(t * 1000 + i));
        try {
          if (same_bytes(identity(client, DataType::Fp32, input).output("OUTPUT0"), input)) ++ok;
        } catch (const Error& e) {
          ++failed;
          MESSAGE(std::string(e.what()));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  stop = true;
  chaos.join();
  CHECK(ok == 600);
  CHECK(failed == 0);
  MESSAGE("600 requests through resets every " << 20 * kSlowdown
                                               << " ms: " << client.stats().retries << " retries");
}

TEST_CASE("deadline and cancellation over tcp") {
  TcpServer server;
  Client client(server.url("tcp"));
  std::vector<float> data{1, 2, 3, 4};
  auto start = std::chrono::steady_clock::now();
  try {
    (void)client.infer(
        InferRequest("slow_fp32").input("INPUT0", Tensor::view(data, {1, 4})).timeout(100ms));
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::DeadlineExceeded);
  }
  CHECK(std::chrono::steady_clock::now() - start < 250ms);
  std::promise<StatusCode> code;
  auto handle =
      client.infer_async(InferRequest("slow_fp32").input("INPUT0", Tensor::view(data, {1, 4})),
                         [&](Result<InferResult> r) { code.set_value(r.code()); });
  CHECK(handle.cancel());
  CHECK(code.get_future().get() == StatusCode::Cancelled);
  CHECK(
      identity(client, DataType::Fp32, Tensor::view(data, {1, 4})).output("OUTPUT0").byte_size() ==
      16);
}

TEST_CASE("nothing listening: UNAVAILABLE at once") {
  std::string url = unused_url();
  url.replace(0, 4, "tcp");
  Client client(url);
  auto start = std::chrono::steady_clock::now();
  try {
    (void)client.infer(InferRequest("m").input("INPUT0", sample(DataType::Fp32, 4, 1)));
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
  }
  CHECK(std::chrono::steady_clock::now() - start < 1s);
}

TEST_CASE("timing over tcp: encode, wait, decode and the server's compute") {
  TcpServer server;
  Client client(server.url("tcp+zstd"));
  std::vector<float> data(4096, 2.0f);
  auto result =
      client.infer(InferRequest("slow_fp32").input("INPUT0", Tensor::view(data, {1, 4096})));
  const auto& t = result.timing();
  CHECK(t.serialize.count() > 0);
  CHECK(t.deserialize.count() > 0);
  CHECK(t.server_compute >= 300ms);
  CHECK(t.wait >= t.server_compute);
  CHECK(t.serialize + t.wait + t.deserialize <= t.total);
}

TEST_CASE("keepalive pings over tcp notice a peer that accepted the connection and went silent") {
  SilentPeer peer;
  std::string url = peer.url();
  url.replace(0, 4, "tcp");
  ClientOptions options;
  options.keepalive_interval = 50ms;
  options.keepalive_timeout = 100ms;
  options.validate_inputs = false;  // straight to the silent peer
  Client client(url, options);
  auto start = std::chrono::steady_clock::now();
  auto future = client.infer_future(  // no deadline: only keepalive helps
      InferRequest("m").input("INPUT0", sample(DataType::Fp32, 4, 1)));
  REQUIRE(future.wait_for(5s) == std::future_status::ready);
  auto e = expect_error([&] { future.get(); });
  CHECK(e.code() == StatusCode::Unavailable);
  CHECK(e.message().find("keepalive") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < 1s);
}

TEST_CASE("tcp+zstd compresses both directions: sparse tensors cross the wire small") {
  TcpServer server;
  FaultProxy proxy(server.port());
  std::vector<float> sparse(1 << 18, 0.0f);  // 1 MiB, mostly zeros
  for (std::size_t i = 0; i < sparse.size(); i += 1000) sparse[i] = 1.0f;
  Tensor input = Tensor::view(sparse, {1, static_cast<std::int64_t>(sparse.size())});
  for (const char* scheme : {"tcp", "tcp+zstd"}) {
    CAPTURE(scheme);
    Client client(std::string(scheme) + "://127.0.0.1:" + std::to_string(proxy.port()));
    (void)client.model_metadata(identity_name(DataType::Fp32));
    std::size_t sent = proxy.bytes_to_server(), received = proxy.bytes_to_client();
    CHECK(same_bytes(identity(client, DataType::Fp32, input).output("OUTPUT0"), input));
    bool compressed = std::string(scheme) == "tcp+zstd";
    // 1 MiB each way raw; the response is compressed only because the request asked for it.
    CHECK((proxy.bytes_to_server() - sent < (64u << 10)) == compressed);
    CHECK((proxy.bytes_to_client() - received < (64u << 10)) == compressed);
  }
}
