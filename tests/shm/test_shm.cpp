// The grpc+shm:// client: values through shared memory for every datatype, zero-copy user
// buffers, a pool shared by concurrent requests and exhausted, a restarted server, a server that
// refuses shared memory, and cleanup.
#include <dirent.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "fault_proxy.hpp"
#include "shm_fixture.hpp"
#include "sonic/shm/region.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

std::string shm_url_of(const FaultProxy& proxy) {
  return "grpc+shm://127.0.0.1:" + std::to_string(proxy.port());
}

// Objects in /dev/shm this process created.
int own_regions() {
  std::string prefix = "sonic-" + std::to_string(::getpid()) + "-";
  int n = 0;
  if (DIR* dir = ::opendir("/dev/shm")) {
    while (dirent* e = ::readdir(dir)) n += std::string(e->d_name).rfind(prefix, 0) == 0;
    ::closedir(dir);
  }
  return n;
}

InferResult identity(Client& client, DataType type, const Tensor& input) {
  return client.infer(InferRequest(identity_name(type)).input("INPUT0", input));
}

}  // namespace

TEST_CASE("every datatype round-trips through shared memory with only a message on the wire") {
  ShmServer server;
  FaultProxy proxy(server.port());
  Client client(shm_url_of(proxy));
  for (DataType type : kAllDataTypes) {
    CAPTURE(std::string(to_string(type)));
    // The first call learns the output's size; later ones receive it in shared memory. 8192
    // elements are 8 KiB at least: far more than the message that travels instead.
    Tensor first = sample(type, 8192, 1);
    CHECK(same_bytes(identity(client, type, first).output("OUTPUT0"), first));
    Tensor input = sample(type, 64 * 1024, 2);
    std::size_t sent = proxy.bytes_to_server(), received = proxy.bytes_to_client();
    Tensor again = sample(type, 8192, 3);
    CHECK(same_bytes(identity(client, type, again).output("OUTPUT0"), again));
    if (type != DataType::Bytes) {  // same size as before: both directions in shared memory
      CHECK(proxy.bytes_to_server() - sent < 2048);
      CHECK(proxy.bytes_to_client() - received < 2048);
    }
    // Larger than learned: the output comes once over gRPC, correctly.
    CHECK(same_bytes(identity(client, type, input).output("OUTPUT0"), input));
  }
  CHECK(server.server().shared_memory_regions() > 0);
}

TEST_CASE("4 MiB each way: the wire carries a few hundred bytes, the values are exact") {
  ShmServer server;
  FaultProxy proxy(server.port());
  Client client(shm_url_of(proxy));
  Tensor input = sample(DataType::Fp32, 1 << 20, 7);
  CHECK(same_bytes(identity(client, DataType::Fp32, input).output("OUTPUT0"), input));  // learns
  std::size_t sent = proxy.bytes_to_server(), received = proxy.bytes_to_client();
  for (int i = 0; i < 5; ++i) {
    Tensor next = sample(DataType::Fp32, 1 << 20, 8 + i);
    CHECK(same_bytes(identity(client, DataType::Fp32, next).output("OUTPUT0"), next));
  }
  MESSAGE("5 round trips of 4 MiB: " << proxy.bytes_to_server() - sent << " bytes to the server, "
                                     << proxy.bytes_to_client() - received << " back");
  CHECK(proxy.bytes_to_server() - sent < 5 * 1024);
  CHECK(proxy.bytes_to_client() - received < 5 * 1024);
}

TEST_CASE("a tensor built in a SharedBuffer is sent without a copy") {
  ShmServer server;
  FaultProxy proxy(server.port());
  Client client(shm_url_of(proxy));
  shm::SharedBuffer buffer(1 << 20);
  float* x = buffer.as<float>();
  for (int i = 0; i < 1 << 18; ++i) x[i] = static_cast<float>(i) * 0.5f;
  Tensor input = buffer.tensor(DataType::Fp32, {1, 1 << 18});
  CHECK(same_bytes(identity(client, DataType::Fp32, input).output("OUTPUT0"), input));
  std::size_t sent = proxy.bytes_to_server();
  x[7] = -1;  // the server reads the buffer itself: changes are seen without sending anything
  auto result = identity(client, DataType::Fp32, input);
  CHECK(result.output("OUTPUT0").as<float>()[7] == -1.0f);
  CHECK(proxy.bytes_to_server() - sent < 1024);
  CHECK_THROWS_AS(buffer.tensor(DataType::Fp32, {1, 1 << 19}), Error);  // does not fit
}

TEST_CASE("an output placed in the caller's region is registered first, with no input in it") {
  // The output's region is named by parameters alone (as CudaBuffer::parameters() names a
  // device region): the client must register it although no input lives there.
  ShmServer server;
  Client client(server.shm_url());
  shm::SharedBuffer outputs(4096);
  Tensor input = sample(DataType::Fp32, 16, 3);
  Parameters where{{"shared_memory_region", outputs.name()},
                   {"shared_memory_byte_size", std::int64_t{64}},
                   {"shared_memory_offset", std::int64_t{128}}};
  auto result = client.infer(
      InferRequest(identity_name(DataType::Fp32)).input("INPUT0", input).output("OUTPUT0", where));
  CHECK(std::memcmp(outputs.data() + 128, input.data(), 64) == 0);
  CHECK(client.stats().failed == 0);
}

TEST_CASE(
    "a region the caller names that the server refuses fails the request with the refusal, "
    "never answered elsewhere") {
  // The caller reads the output from its own region (as from a CudaBuffer on a server without
  // GPUs, which Triton refuses with INVALID_ARGUMENT): an answer sent inline instead, or a
  // NOT_FOUND for a region never registered, would hide why.
  ShmServer server(0, /*shared_memory=*/false);
  Client client(server.shm_url());
  shm::SharedBuffer outputs(4096);
  Tensor input = sample(DataType::Fp32, 16, 3);
  Parameters where{{"shared_memory_region", outputs.name()},
                   {"shared_memory_byte_size", std::int64_t{64}}};
  auto request =
      InferRequest(identity_name(DataType::Fp32)).input("INPUT0", input).output("OUTPUT0", where);
  auto refused = [&] {
    try {
      (void)client.infer(request);
      FAIL("the request succeeded although the server refused the caller's region");
    } catch (const Error& e) {
      const std::string message = e.what();
      MESSAGE(message);
      CHECK(e.code() == StatusCode::Unimplemented);  // the server's answer to the registration
      CHECK(message.find(outputs.name()) != std::string::npos);
      CHECK(message.find("SharedMemoryRegister") != std::string::npos);
    }
  };
  refused();
  // Requests that name no region of the caller's still go, plain; and once the client has
  // given up on shared memory with this server, a request naming a region is still refused.
  CHECK(same_bytes(identity(client, DataType::Fp32, input).output("OUTPUT0"), input));
  refused();
}

TEST_CASE("concurrent requests share a small pool: exhaustion goes plain, no data is mixed") {
  ShmServer server;
  ClientOptions options;
  options.shared_memory.pool_bytes = 1 << 20;  // room for a few requests at a time
  Client client(server.shm_url(), options);
  constexpr int kThreads = 6, kPerThread = 60;
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::size_t n = 1024u << (i % 6);  // 4 KiB .. 128 KiB of FP32
        Tensor input = sample(DataType::Fp32, n, static_cast<unsigned>(t * 1000 + i));
        try {
          auto result = identity(client, DataType::Fp32, input);
          if (!same_bytes(result.output("OUTPUT0"), input)) ++wrong;
        } catch (const Error& e) {
          ++failed;
          MESSAGE(std::string(e.what()));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(failed == 0);
}

TEST_CASE("a restarted server lost its registrations: the client registers again, unseen") {
  auto server = std::make_unique<ShmServer>();
  std::uint16_t port = server->port();
  Client client(server->shm_url());
  Tensor input = sample(DataType::Int32, 4096, 1);
  CHECK(same_bytes(identity(client, DataType::Int32, input).output("OUTPUT0"), input));
  CHECK(same_bytes(identity(client, DataType::Int32, input).output("OUTPUT0"), input));
  server.reset();
  server = std::make_unique<ShmServer>(port);
  CHECK(server->server().shared_memory_regions() == 0);
  for (int i = 0; i < 5; ++i) {
    Tensor next = sample(DataType::Int32, 4096, 10 + i);
    CHECK(same_bytes(identity(client, DataType::Int32, next).output("OUTPUT0"), next));
  }
  CHECK(server->server().shared_memory_regions() > 0);
  CHECK(client.stats().failed == 0);
}

TEST_CASE("a server that refuses shared memory gets plain gRPC and one log line") {
  ShmServer server(0, /*shared_memory=*/false);
  std::mutex mutex;
  std::vector<std::string> lines;
  ClientOptions options;
  options.log = [&](LogLevel, const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.push_back(line);
  };
  Client client(server.shm_url(), options);
  for (int i = 0; i < 20; ++i) {
    Tensor input = sample(DataType::Fp64, 1000, static_cast<unsigned>(i));
    CHECK(same_bytes(identity(client, DataType::Fp64, input).output("OUTPUT0"), input));
  }
  std::lock_guard<std::mutex> lock(mutex);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("plain gRPC") != std::string::npos);
  CHECK(server.server().shared_memory_regions() == 0);
}

TEST_CASE("a client's regions are unregistered and unlinked when it goes away") {
  ShmServer server;
  int before = own_regions();
  {
    Client client(server.shm_url());
    Tensor input = sample(DataType::UInt8, 300000, 1);
    CHECK(same_bytes(identity(client, DataType::UInt8, input).output("OUTPUT0"), input));
    CHECK(same_bytes(identity(client, DataType::UInt8, input).output("OUTPUT0"), input));
    CHECK(own_regions() > before);
    CHECK(server.server().shared_memory_regions() > 0);
  }
  CHECK(own_regions() == before);
  CHECK(server.server().shared_memory_regions() == 0);
}

TEST_CASE("outputs viewing a region stay valid after the client is gone") {
  ShmServer server;
  Tensor input = sample(DataType::Int64, 20000, 5);
  Tensor kept;
  {
    Client client(server.shm_url());
    (void)identity(client, DataType::Int64, input);
    kept = identity(client, DataType::Int64, input).output("OUTPUT0");
  }
  CHECK(same_bytes(kept, input));
}
