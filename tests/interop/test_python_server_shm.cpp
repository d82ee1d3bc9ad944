// Interop: the grpc+shm:// client against python_server.py, whose shared memory behaves as
// Triton's (triton_shm.py): one empty raw_output_contents entry per output written to shared
// memory and no parameters on outputs, INTERNAL for an output that outgrows its space,
// NOT_FOUND for a region the server no longer knows. A fault proxy between the two counts
// the bytes on the wire, which shows whether tensors really went through shared memory.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include <sonic/sonic.hpp>

#include "fault_proxy.hpp"
#include "python_server.hpp"

namespace {

using namespace std::chrono_literals;

int python_server_port() {
  std::string address = sonic::test::python_server_address();
  return std::stoi(address.substr(address.rfind(':') + 1));
}

// A client whose log is kept: the transport logs once when it gives up on shared memory.
struct LoggedClient {
  std::shared_ptr<std::vector<std::string>> warnings = std::make_shared<std::vector<std::string>>();
  std::shared_ptr<std::mutex> mutex = std::make_shared<std::mutex>();
  sonic::Client client;

  explicit LoggedClient(const std::string& url)
      : client(url, [this] {
          sonic::ClientOptions options;
          options.default_timeout = 30s;
          options.log = [warnings = warnings, mutex = mutex](sonic::LogLevel level,
                                                             const std::string& message) {
            std::lock_guard<std::mutex> lock(*mutex);
            if (level >= sonic::LogLevel::Warning) warnings->push_back(message);
          };
          return options;
        }()) {}

  std::vector<std::string> logged() const {
    std::lock_guard<std::mutex> lock(*mutex);
    return *warnings;
  }
};

// A raw control call to the server, as another process (or a restart) would make it.
std::string control_call(const std::string& method, const std::string& request) {
  auto endpoint = sonic::parse_endpoint(sonic::test::server_url()).value();
  auto transport = sonic::transport_registry().create(endpoint, {}).value();
  std::promise<sonic::Result<std::string>> answer;
  transport->call_async(method, request, sonic::deadline_after(10s),
                        [&](sonic::Result<std::string> r) { answer.set_value(std::move(r)); });
  return answer.get_future().get().value();
}

// Regions the server holds: entries of SystemSharedMemoryStatusResponse.regions (field 1).
int registered_regions() {
  std::string status = control_call("SystemSharedMemoryStatus", "");
  int count = 0;
  for (std::size_t at = 0; at < status.size();) {
    REQUIRE(static_cast<unsigned char>(status[at]) == 0x0a);  // field 1, length-delimited
    std::size_t length = 0, shift = 0;
    for (++at; at < status.size(); shift += 7) {
      auto byte = static_cast<unsigned char>(status[at++]);
      length |= static_cast<std::size_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) break;
    }
    at += length;
    ++count;
  }
  return count;
}

std::vector<float> ramp(std::size_t count, float scale) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<float>(i) * scale;
  return values;
}

bool same_values(const sonic::Tensor& tensor, const std::vector<float>& expected) {
  return tensor.byte_size() == expected.size() * sizeof(float) &&
         std::memcmp(tensor.data(), expected.data(), tensor.byte_size()) == 0;
}

sonic::InferResult identity(sonic::Client& client, const std::vector<float>& values) {
  return client.infer(
      sonic::InferRequest("identity_fp32")
          .input("INPUT0",
                 sonic::Tensor::view(values, {1, static_cast<std::int64_t>(values.size())})));
}

}  // namespace

TEST_SUITE("interop: grpc+shm:// client vs a server with Triton's shared memory") {
  TEST_CASE("simple: both inputs and both outputs in shared memory, only a message on the wire") {
    sonic::test::FaultProxy proxy(python_server_port());
    LoggedClient logged("grpc+shm://127.0.0.1:" + std::to_string(proxy.port()));
    std::vector<std::int32_t> a(16), b(16);
    for (int i = 0; i < 16; ++i) {
      a[i] = 1000 * i;
      b[i] = 3 - i;
    }
    auto request = [&] {
      return sonic::InferRequest("simple")
          .input("INPUT0", sonic::Tensor::view(a, {1, 16}))
          .input("INPUT1", sonic::Tensor::view(b, {1, 16}));
    };
    auto check = [&](const sonic::InferResult& result) {
      auto sum = result.output("OUTPUT0").as<std::int32_t>();
      auto difference = result.output("OUTPUT1").as<std::int32_t>();
      REQUIRE(sum.size() == 16);
      REQUIRE(difference.size() == 16);
      for (int i = 0; i < 16; ++i) {
        CHECK(sum[i] == a[i] + b[i]);
        CHECK(difference[i] == a[i] - b[i]);
      }
    };
    // The bytes 3 responses take over plain gRPC, and over grpc+shm://.
    auto bytes_of_three = [&](sonic::Client& client) {
      check(client.infer(request()));  // the first fetches the metadata, which sizes the outputs
      std::size_t received = proxy.bytes_to_client();
      for (int round = 0; round < 3; ++round) {
        a[round] = -7 * round;
        check(client.infer(request()));
      }
      return proxy.bytes_to_client() - received;
    };
    sonic::Client plain("grpc://127.0.0.1:" + std::to_string(proxy.port()));
    std::size_t inline_bytes = bytes_of_three(plain);
    std::size_t shm_bytes = bytes_of_three(logged.client);
    // Each response's 128 bytes of outputs travel in shared memory, not on the wire (the
    // framing around them varies by some tens of bytes: HPACK, window updates).
    MESSAGE("3 responses: " << inline_bytes << " bytes inline, " << shm_bytes
                            << " with shared memory");
    CHECK(shm_bytes + 3 * 64 <= inline_bytes);
    CHECK(registered_regions() > 0);
    CHECK(logged.logged().empty());
  }

  TEST_CASE(
      "identity: an output of unknown size comes inline, then in shared memory, then "
      "outgrows its space (INTERNAL) and comes once over gRPC") {
    LoggedClient logged("grpc+shm://" + sonic::test::python_server_address());
    auto first = ramp(4096, 0.5f);
    CHECK(same_values(identity(logged.client, first).output("OUTPUT0"), first));  // inline out
    auto same_size = ramp(4096, -2.0f);
    CHECK(same_values(identity(logged.client, same_size).output("OUTPUT0"), same_size));
    auto larger = ramp(16384, 3.0f);  // the server answers INTERNAL "... should be at least ..."
    CHECK(same_values(identity(logged.client, larger).output("OUTPUT0"), larger));
    auto larger_again = ramp(16384, 0.25f);  // learned: in shared memory again
    CHECK(same_values(identity(logged.client, larger_again).output("OUTPUT0"), larger_again));
    CHECK(logged.logged().empty());
  }

  TEST_CASE("registrations lost by the server (NOT_FOUND) are made again, unseen") {
    LoggedClient logged("grpc+shm://" + sonic::test::python_server_address());
    auto values = ramp(1024, 1.5f);
    CHECK(same_values(identity(logged.client, values).output("OUTPUT0"), values));
    CHECK(same_values(identity(logged.client, values).output("OUTPUT0"), values));
    // As after a restart of Triton: an empty name unregisters every region.
    control_call("SystemSharedMemoryUnregister", "");
    REQUIRE(registered_regions() == 0);
    auto next = ramp(1024, -1.0f);
    CHECK(same_values(identity(logged.client, next).output("OUTPUT0"), next));
    CHECK(registered_regions() > 0);
    CHECK(logged.logged().empty());
  }
}
