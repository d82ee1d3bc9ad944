// The server half of the shared memory extension, fed hostile region parameters by a plain
// gRPC client; the removal of regions that dead processes left behind; whether CUDA shared memory
// is advertised (its use, across processes, is test_cuda_shm.cpp's).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "shm_fixture.hpp"
#include "sonic/shm/region.hpp"
#include "system_region.hpp"

using namespace sonic;
using namespace sonic::test;

namespace {

Parameters region_parameters(const std::string& name, std::int64_t bytes, std::int64_t offset = 0) {
  Parameters p;
  p["shared_memory_region"] = name;
  p["shared_memory_byte_size"] = bytes;
  if (offset) p["shared_memory_offset"] = offset;
  return p;
}

StatusCode code_of(Client& client, InferRequest request) {
  try {
    (void)client.infer(std::move(request));
    return StatusCode::Ok;
  } catch (const Error& e) {
    MESSAGE(std::string(e.what()));
    return e.code();
  }
}

bool exists(const std::string& name) {
  int fd = ::shm_open(("/" + name).c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

void create(const std::string& name) {
  int fd = ::shm_open(("/" + name).c_str(), O_RDWR | O_CREAT, 0600);
  REQUIRE(fd >= 0);
  ::close(fd);
}

}  // namespace

TEST_CASE(
    "malformed region parameters are INVALID_ARGUMENT (an unknown region NOT_FOUND, a small "
    "output INTERNAL: Triton's codes), and the server carries on") {
  ShmServer server;
  // A region the server knows: registered by a grpc+shm:// client using a user buffer.
  shm::SharedBuffer buffer(4096);
  Client shm_client(server.shm_url());
  Tensor four = buffer.tensor(DataType::Fp32, {1, 4});
  CHECK(shm_client.infer(InferRequest(identity_name(DataType::Fp32)).input("INPUT0", four))
            .output("OUTPUT0")
            .byte_size() == 16);

  Client client(server.grpc_url());
  const std::string model = identity_name(DataType::Fp32);
  auto described = [&](Parameters p) {
    return InferRequest(model).input("INPUT0", Tensor::descriptor(DataType::Fp32, {1, 4}),
                                     std::move(p));
  };
  const std::string name = buffer.name();
  CHECK(code_of(client, described(region_parameters("no-such-region", 16))) ==
        StatusCode::NotFound);  // Triton's code: a registration lost in a restart
  Parameters region_only;
  region_only["shared_memory_region"] = name;
  CHECK(code_of(client, described(region_only)) == StatusCode::InvalidArgument);
  Parameters size_only;
  size_only["shared_memory_byte_size"] = std::int64_t{16};
  CHECK(code_of(client, InferRequest(model).input("INPUT0", sample(DataType::Fp32, 4, 1),
                                                  size_only)) == StatusCode::InvalidArgument);
  CHECK(code_of(client, described(region_parameters(name, 16, 4096))) ==
        StatusCode::InvalidArgument);  // offset at the end: 16 bytes do not fit
  CHECK(code_of(client, described(region_parameters(name, 16, 1LL << 62))) ==
        StatusCode::InvalidArgument);  // an offset that would overflow
  CHECK(code_of(client, described(region_parameters(name, 12))) ==
        StatusCode::InvalidArgument);  // 12 bytes are not 4 FP32
  CHECK(code_of(client, described(region_parameters(name, 16, -8))) ==
        StatusCode::InvalidArgument);  // negative offset
  Parameters wrong_type = region_parameters(name, 16);
  wrong_type["shared_memory_region"] = std::int64_t{3};
  CHECK(code_of(client, described(wrong_type)) == StatusCode::InvalidArgument);
  // An output bound for a region too small for it: INTERNAL, as Triton answers.
  auto small_output = InferRequest(model)
                          .input("INPUT0", sample(DataType::Fp32, 8, 1))
                          .output("OUTPUT0", region_parameters(name, 8));
  CHECK(code_of(client, std::move(small_output)) == StatusCode::Internal);

  // Correct parameters from a plain client work: the region holds the four floats.
  float* x = buffer.as<float>();
  for (int i = 0; i < 4; ++i) x[i] = static_cast<float>(i + 1);
  auto ok = client.infer(described(region_parameters(name, 16)));
  CHECK(ok.output("OUTPUT0").as<float>()[3] == 4.0f);
}

TEST_CASE("regions left by dead processes are removed; those of live ones stay") {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  ::waitpid(child, nullptr, 0);  // now a pid with no process
  std::string dead = shm::region_prefix_of(child) + "0badc0de-0";
  std::string live = shm::region_prefix_of(::getppid()) + "0badc0de-0";
  create(dead);
  create(live);
  shm::remove_stale_regions();
  CHECK_FALSE(exists(dead));
  CHECK(exists(live));
  ::shm_unlink(("/" + live).c_str());
}

TEST_CASE("cuda_shared_memory is advertised only where a CUDA device is usable") {
  ShmServer server;
  Client client(server.grpc_url());
  const auto extensions = client.server_metadata().extensions;
  const bool advertised =
      std::find(extensions.begin(), extensions.end(), "cuda_shared_memory") != extensions.end();
  CHECK(advertised == shm::CudaBuffer::available());
  CHECK(std::find(extensions.begin(), extensions.end(), "system_shared_memory") !=
        extensions.end());
}
