// CUDA shared memory between two processes, as it is used: this test's client allocates device
// memory (CudaBuffer), sonic-server runs as a child process and opens the client's IPC handles
// (CUDA cannot open an IPC handle in the process that exported it). Every datatype through
// device memory both ways, offsets, several regions, a restarted server, and the errors a
// client can cause. Built when the CUDA toolkit is found; skipped, said so, without a device.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "child_server.hpp"
#include "identity_models.hpp"
#include "protocol/control_codec.hpp"
#include "sonic/shm/region.hpp"

using namespace sonic;
using namespace sonic::test;

namespace {

// A device to test on, or a message saying why there is none.
bool have_device() {
  if (shm::CudaBuffer::available()) return true;
  MESSAGE("no usable CUDA device here: the CUDA shared-memory tests are skipped");
  return false;
}

constexpr const char* kListening = "sonic-server listening on 127.0.0.1:";

// sonic-server on 127.0.0.1, on `port` (0: one it picks).
std::vector<std::string> server_command(int port = 0) {
  return {SONIC_SERVER_BINARY, "--host", "127.0.0.1",    "--port", std::to_string(port),
          "--allow-metrics",   "false",  "--allow-http", "false"};
}

std::string shm_url(const ChildServer& server) {
  return "grpc+shm://127.0.0.1:" + std::to_string(server.port());
}

// Writes `tensor` into the buffer and waits until the bytes are there: from pageable memory,
// cudaMemcpy returns before its DMA is done, and the server, another process, reads at once.
void to_device(shm::CudaBuffer& buffer, std::size_t offset, const Tensor& tensor) {
  auto* at = static_cast<std::uint8_t*>(buffer.device_pointer()) + offset;
  REQUIRE(cudaMemcpy(at, tensor.data(), tensor.byte_size(), cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

std::vector<std::uint8_t> from_device(const shm::CudaBuffer& buffer, std::size_t offset,
                                      std::size_t bytes) {
  std::vector<std::uint8_t> host(bytes);
  const auto* at = static_cast<const std::uint8_t*>(buffer.device_pointer()) + offset;
  REQUIRE(cudaMemcpy(host.data(), at, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
  return host;
}

bool same(const std::vector<std::uint8_t>& bytes, const Tensor& tensor) {
  return bytes.size() == tensor.byte_size() &&
         std::equal(bytes.begin(), bytes.end(), tensor.data());
}

// identity_<type>: `input` from `in` at `in_offset`, its copy to `out` at `out_offset`.
InferResult identity_on_device(Client& client, DataType type, const Tensor& input,
                               const shm::CudaBuffer& in, std::size_t in_offset,
                               const shm::CudaBuffer& out, std::size_t out_offset) {
  return client.infer(InferRequest(identity_name(type))
                          .input("INPUT0", Tensor::descriptor(type, input.shape()),
                                 in.parameters(in_offset, input.byte_size()))
                          .output("OUTPUT0", out.parameters(out_offset, input.byte_size())));
}

}  // namespace

TEST_CASE("cuda: every fixed-size datatype through device memory, both ways, another process") {
  if (!have_device()) return;
  ChildServer server(server_command(), kListening);
  ClientOptions options;
  options.endpoints = {shm_url(server)};
  options.log = [](LogLevel, const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
  };
  Client client(options);
  const auto extensions = client.server_metadata().extensions;
  REQUIRE(std::find(extensions.begin(), extensions.end(), "cuda_shared_memory") !=
          extensions.end());
  shm::CudaBuffer buffer(1 << 20);
  for (DataType type : kAllDataTypes) {
    if (type == DataType::Bytes) continue;  // variable-size: not a device-memory tensor
    CAPTURE(to_string(type));
    Tensor input = sample(type, 1000, static_cast<unsigned>(type));
    to_device(buffer, 0, input);
    auto result = identity_on_device(client, type, input, buffer, 0, buffer, 1 << 19);
    CHECK(result.output("OUTPUT0").shape() == input.shape());
    // Written to the device region, not sent back: the answer carries no bytes of it.
    CHECK(result.output("OUTPUT0").byte_size() == 0);
    auto written = from_device(buffer, 1 << 19, input.byte_size());
    CHECK_MESSAGE(same(written, input), "first bytes written ", int(written[0]), " ",
                  int(written[1]), ", input's ", int(input.data()[0]), " ", int(input.data()[1]),
                  "; the answer's OUTPUT0 has ", result.output("OUTPUT0").byte_size(),
                  " bytes and ", result.find_output("OUTPUT0")->parameters.size(), " parameters");
  }
  CHECK(client.stats().failed == 0);
}

TEST_CASE("cuda: offsets and several regions") {
  if (!have_device()) return;
  ChildServer server(server_command(), kListening);
  Client client(shm_url(server));
  shm::CudaBuffer inputs(1 << 20), outputs(1 << 20);
  for (std::size_t offset : {std::size_t{0}, std::size_t{256}, std::size_t{4096 + 512}}) {
    CAPTURE(offset);
    Tensor input = sample(DataType::Fp32, 4096, static_cast<unsigned>(offset));
    to_device(inputs, offset, input);
    identity_on_device(client, DataType::Fp32, input, inputs, offset, outputs, 2 * offset + 64);
    CHECK(same(from_device(outputs, 2 * offset + 64, input.byte_size()), input));
  }
  // The input's bytes are read from the device, not sent: the first region is untouched.
  Tensor kept = sample(DataType::Fp32, 16, 99);
  to_device(inputs, 0, kept);
  identity_on_device(client, DataType::Fp32, kept, inputs, 0, inputs, 1 << 19);
  CHECK(same(from_device(inputs, 0, kept.byte_size()), kept));
}

TEST_CASE("cuda: a restarted server lost its registrations: the client registers again") {
  if (!have_device()) return;
  auto first = std::make_unique<ChildServer>(server_command(), kListening);
  const int port = first->port();
  Client client(shm_url(*first));
  shm::CudaBuffer buffer(1 << 16);
  Tensor input = sample(DataType::Int32, 1024, 5);
  to_device(buffer, 0, input);
  identity_on_device(client, DataType::Int32, input, buffer, 0, buffer, 1 << 15);
  first.reset();
  ChildServer second(server_command(port), kListening);
  Tensor next = sample(DataType::Int32, 1024, 6);
  to_device(buffer, 0, next);
  identity_on_device(client, DataType::Int32, next, buffer, 0, buffer, 1 << 15);
  CHECK(same(from_device(buffer, 1 << 15, next.byte_size()), next));
}

TEST_CASE("cuda: a region too small or an offset past its end is refused, naming the region") {
  if (!have_device()) return;
  ChildServer server(server_command(), kListening);
  Client client(shm_url(server));
  shm::CudaBuffer buffer(4096);
  Tensor input = sample(DataType::Fp32, 512, 7);  // 2048 bytes
  to_device(buffer, 0, input);
  identity_on_device(client, DataType::Fp32, input, buffer, 0, buffer, 2048);  // registers it
  // Parameters written by hand, as a client that does not check them would send them.
  Parameters past_end = buffer.parameters(0, 16);
  past_end["shared_memory_offset"] = std::int64_t{4096 - 8};
  try {
    client.infer(InferRequest(identity_name(DataType::Fp32))
                     .input("INPUT0", Tensor::descriptor(DataType::Fp32, {1, 4}), past_end));
    FAIL("an input past the region's end must be refused");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::InvalidArgument);
    CHECK_MESSAGE(e.message().find(buffer.name()) != std::string::npos, e.message());
  }
  CHECK_THROWS_AS(buffer.parameters(4000, 200), Error);  // the client's own check
}

TEST_CASE("cuda: a handle to less memory than declared, or no handle at all, is refused") {
  // Triton's RegisterCUDASharedMemory checks the allocation's size (cuMemGetAddressRange):
  // a region declaring more would have the server read and write past it.
  if (!have_device()) return;
  ChildServer server(server_command(), kListening);
  Client client("grpc://127.0.0.1:" + std::to_string(server.port()));
  void* memory = nullptr;
  REQUIRE(cudaMalloc(&memory, 4096) == cudaSuccess);
  cudaIpcMemHandle_t handle;
  REQUIRE(cudaIpcGetMemHandle(&handle, memory) == cudaSuccess);
  const std::string raw(reinterpret_cast<const char*>(&handle), sizeof handle);
  auto registration = [&](const std::string& name, const std::string& bytes, std::uint64_t size) {
    return protocol::encode_cuda_shm_registration({name, bytes, 0, size});
  };
  try {
    (void)client.call("CudaSharedMemoryRegister", registration("too-big", raw, 1ull << 30));
    FAIL("a region larger than its allocation must be refused");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::InvalidArgument);
    CHECK_MESSAGE(e.message().find("not the 1073741824 declared") != std::string::npos,
                  e.message());
    CHECK_MESSAGE(e.message().find("too-big") != std::string::npos, e.message());
  }
  CHECK_NOTHROW((void)client.call("CudaSharedMemoryRegister", registration("fits", raw, 4096)));
  // Status as Triton's GetStatus answers it: name, device_id and byte_size; NOT_FOUND for a name
  // asked as the other kind, in its words; gone once unregistered.
  auto regions =
      protocol::decode_cuda_shm_status(client.call("CudaSharedMemoryStatus", std::string()));
  REQUIRE(regions);
  REQUIRE(regions->size() == 1);
  CHECK(regions->front().name == "fits");
  CHECK(regions->front().device_id == 0);
  CHECK(regions->front().byte_size == 4096);
  try {
    (void)client.call("SystemSharedMemoryStatus", protocol::encode_region_name("fits"));
    FAIL("a CUDA region is not a system one");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::NotFound);
    CHECK_MESSAGE(
        e.message().find("registered as CUDA shared memory, not system") != std::string::npos,
        e.message());
  }
  (void)client.call("CudaSharedMemoryUnregister", protocol::encode_region_name("fits"));
  CHECK_THROWS_AS((void)client.call("CudaSharedMemoryStatus", protocol::encode_region_name("fits")),
                  Error);
  try {
    (void)client.call("CudaSharedMemoryRegister",
                      registration("garbage", std::string(sizeof handle, '\x5a'), 4096));
    FAIL("a handle that opens nothing must be refused");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::InvalidArgument);
  }
  CHECK(cudaFree(memory) == cudaSuccess);
}

TEST_CASE("cuda: a server with no usable GPU refuses the region as Triton does; so does the call") {
  // Triton built without GPUs: INVALID_ARGUMENT "failed to register CUDA shared memory region:
  // 'NAME', GPUs not supported". The client must fail the request with that refusal: its
  // tensors are only on the device, and a NOT_FOUND for the region would hide why.
  if (!have_device()) return;
  std::vector<std::string> command = server_command();
  command.insert(command.begin(), {"/usr/bin/env", "CUDA_VISIBLE_DEVICES="});
  ChildServer server(command, kListening);
  Client client(shm_url(server));
  const auto extensions = client.server_metadata().extensions;
  CHECK(std::find(extensions.begin(), extensions.end(), "cuda_shared_memory") == extensions.end());
  shm::CudaBuffer buffer(4096);
  Tensor input = sample(DataType::Fp32, 16, 1);
  to_device(buffer, 0, input);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      (void)identity_on_device(client, DataType::Fp32, input, buffer, 0, buffer, 1024);
      FAIL("a server without a GPU cannot have answered from device memory");
    } catch (const Error& e) {
      CHECK(e.code() == StatusCode::InvalidArgument);
      CHECK_MESSAGE(e.message().find("GPUs not supported") != std::string::npos, e.message());
      CHECK_MESSAGE(e.message().find(buffer.name()) != std::string::npos, e.message());
    }
  }
}

TEST_CASE("cuda: over HTTP, an input read from device memory and its output written there") {
  // sonic-server's HTTP port binds CUDA regions with the gRPC port's registry; the http://
  // client carries the shared_memory_* parameters as tritonclient.http does, and registers the
  // handle with POST /v2/cudasharedmemory/region/NAME/register.
  if (!have_device()) return;
  std::vector<std::string> command = server_command();
  command.back() = "true";  // --allow-http true
  command.insert(command.end(), {"--http-port", "0"});
  ChildServer server(command, kListening);
  const int http_port = server.next_port("sonic-server http listening on 127.0.0.1:");
  Client client("http://127.0.0.1:" + std::to_string(http_port));
  void* memory = nullptr;
  REQUIRE(cudaMalloc(&memory, 1 << 16) == cudaSuccess);
  cudaIpcMemHandle_t handle;
  REQUIRE(cudaIpcGetMemHandle(&handle, memory) == cudaSuccess);
  const std::string raw(reinterpret_cast<const char*>(&handle), sizeof handle);
  (void)client.call("CudaSharedMemoryRegister",
                    protocol::encode_cuda_shm_registration({"gpu", raw, 0, 1 << 16}));
  Tensor input = sample(DataType::Fp32, 1024, 5);  // 4096 bytes at 0, written back at 8192
  REQUIRE(cudaMemcpy(memory, input.data(), input.byte_size(), cudaMemcpyHostToDevice) ==
          cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  auto placed = [](std::int64_t offset, std::int64_t bytes) {
    return Parameters{{"shared_memory_region", std::string("gpu")},
                      {"shared_memory_byte_size", bytes},
                      {"shared_memory_offset", offset}};
  };
  auto bytes = static_cast<std::int64_t>(input.byte_size());
  auto result = client.infer(
      InferRequest(identity_name(DataType::Fp32))
          .input("INPUT0", Tensor::descriptor(DataType::Fp32, input.shape()), placed(0, bytes))
          .output("OUTPUT0", placed(8192, bytes)));
  CHECK(result.output("OUTPUT0").byte_size() == 0);
  CHECK(result.output("OUTPUT0").shape() == input.shape());
  std::vector<std::uint8_t> written(input.byte_size());
  REQUIRE(cudaMemcpy(written.data(), static_cast<std::uint8_t*>(memory) + 8192, written.size(),
                     cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(same(written, input));
  (void)client.call("CudaSharedMemoryUnregister", protocol::encode_region_name("gpu"));
  CHECK(cudaFree(memory) == cudaSuccess);
}
