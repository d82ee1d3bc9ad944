// identity_fp32 round trips from 64 KiB to 256 MiB over grpc://, grpc+shm:// (system shared
// memory) and CUDA shared memory (input and output in device memory, IPC handles on the wire),
// to a sonic-server in another process (CUDA cannot open an IPC handle in the process that
// exported it), next to cudaMemcpy device-to-device and host-to-device of the same payload in
// the same run. Every time is the median over --repeats runs of enough calls to move 64 MiB.
//
//   sonic-server --port 8001 &  sonic-cuda-shm-bench --port 8001 [--repeats 5] [--max-mib 256]
//
// Columns: ms per round trip of each path; GB/s = payload both ways (2 x size) / time; D2D and
// H2D GB/s = size / time of one cudaMemcpy of it (pinned host memory for H2D).
#include <sonic/shm/region.hpp>
#include <sonic/sonic.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "payload_sweep_args.hpp"
#include "timing.hpp"

namespace {

using sonic::bench::Clock;
using sonic::bench::median;
using sonic::bench::ms_between;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

sonic::Shape row_of(std::size_t bytes) { return {1, static_cast<std::int64_t>(bytes / 4)}; }

// Milliseconds per round trip of `calls` requests carrying `payload` from host memory.
double time_host(sonic::Client& client, const std::vector<float>& payload, int calls) {
  auto start = Clock::now();
  for (int i = 0; i < calls; ++i) {
    auto result = client.infer(
        sonic::InferRequest("identity_fp32")
            .input("INPUT0", sonic::Tensor::view(payload, row_of(payload.size() * 4))));
    if (result.as<float>("OUTPUT0")[payload.size() - 1] != 0.5f)
      throw std::runtime_error("wrong output");
  }
  return ms_between(start, Clock::now()) / calls;
}

// Milliseconds per round trip whose input is read from, and output written to, `device`.
double time_device(sonic::Client& client, const sonic::shm::CudaBuffer& device, std::size_t bytes,
                   int calls) {
  auto start = Clock::now();
  for (int i = 0; i < calls; ++i) {
    (void)client.infer(sonic::InferRequest("identity_fp32")
                           .input("INPUT0",
                                  sonic::Tensor::descriptor(sonic::DataType::Fp32, row_of(bytes)),
                                  device.parameters(0, bytes))
                           .output("OUTPUT0", device.parameters(bytes, bytes)));
  }
  return ms_between(start, Clock::now()) / calls;
}

// Milliseconds per cudaMemcpy of `bytes` of `kind`.
double time_copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind, int copies) {
  check(cudaDeviceSynchronize(), "synchronize");
  auto start = Clock::now();
  for (int i = 0; i < copies; ++i) check(cudaMemcpy(to, from, bytes, kind), "cudaMemcpy");
  check(cudaDeviceSynchronize(), "synchronize");
  return ms_between(start, Clock::now()) / copies;
}

int run(int argc, char** argv) {
  sonic::bench::PayloadSweepArgs defaults;
  defaults.port = 8001;
  auto args = sonic::bench::parse_payload_sweep(
      "sonic-cuda-shm-bench",
      "usage: sonic-cuda-shm-bench [--port 8001] [--repeats 5] [--max-mib 256]\n"
      "identity_fp32 round trips over grpc://, system and CUDA shared memory, next to cudaMemcpy.",
      argc, argv, defaults);
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  std::printf("device: %s\n", properties.name);
  std::string address = "127.0.0.1:" + std::to_string(args.port);
  sonic::Client grpc("grpc://" + address), shm("grpc+shm://" + address);
  std::printf("%9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "size", "grpc ms", "GB/s", "shm ms", "GB/s",
              "cuda ms", "GB/s", "D2D GB/s", "H2D GB/s");
  for (std::size_t kib = 64; kib <= args.max_mib * 1024; kib *= 4) {
    const std::size_t bytes = kib * 1024;
    std::vector<float> payload(bytes / 4, 0.5f);
    sonic::shm::CudaBuffer device(2 * bytes);
    check(cudaMemcpy(device.device_pointer(), payload.data(), bytes, cudaMemcpyHostToDevice),
          "stage the input");
    check(cudaDeviceSynchronize(), "finish staging the input");  // the server reads it next
    void* pinned = nullptr;
    check(cudaMallocHost(&pinned, bytes), "cudaMallocHost");
    std::memcpy(pinned, payload.data(), bytes);  // the H2D copies rewrite the input unchanged
    int calls = static_cast<int>(std::max<std::size_t>(3, (std::size_t{64} << 20) / bytes));
    calls = std::min(calls, 200);
    for (int i = 0; i < 2; ++i) {  // warm up: connections, metadata, registrations
      (void)time_host(grpc, payload, 1);
      (void)time_host(shm, payload, 1);
      (void)time_device(shm, device, bytes, 1);
    }
    std::vector<double> grpc_ms, shm_ms, cuda_ms, d2d_ms, h2d_ms;
    for (int run = 0; run < args.repeats; ++run) {
      grpc_ms.push_back(time_host(grpc, payload, calls));
      shm_ms.push_back(time_host(shm, payload, calls));
      cuda_ms.push_back(time_device(shm, device, bytes, calls));
      auto* base = static_cast<std::uint8_t*>(device.device_pointer());
      d2d_ms.push_back(time_copy(base + bytes, base, bytes, cudaMemcpyDeviceToDevice, calls));
      h2d_ms.push_back(time_copy(base, pinned, bytes, cudaMemcpyHostToDevice, calls));
    }
    // The output region holds the input's copy: the CUDA path moved the right bytes.
    std::vector<float> back(bytes / 4);
    check(cudaMemcpy(back.data(), static_cast<std::uint8_t*>(device.device_pointer()) + bytes,
                     bytes, cudaMemcpyDeviceToHost),
          "read the output back");
    if (back != payload) throw std::runtime_error("the CUDA output differs from its input");
    check(cudaFreeHost(pinned), "cudaFreeHost");
    auto gbps = [](double moved, double ms) { return moved / 1e9 / (ms / 1000); };
    const double both = 2.0 * static_cast<double>(bytes), one = static_cast<double>(bytes);
    double g = median(grpc_ms), s = median(shm_ms), c = median(cuda_ms);
    std::string size =
        kib >= 1024 ? std::to_string(kib / 1024) + " MiB" : std::to_string(kib) + " KiB";
    std::printf("%9s %9.3f %9.2f %9.3f %9.2f %9.3f %9.2f %9.1f %9.1f\n", size.c_str(), g,
                gbps(both, g), s, gbps(both, s), c, gbps(both, c), gbps(one, median(d2d_ms)),
                gbps(one, median(h2d_ms)));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return sonic::tools::CommandLine::run("sonic-cuda-shm-bench", [&] { return run(argc, argv); });
}
