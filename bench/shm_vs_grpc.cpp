// Round trips of identity_fp32 through grpc:// and grpc+shm:// to the same server in the same
// run, from 64 KiB to 256 MiB, with a single-thread memcpy of each payload for scale. Every time
// is the median over --repeats runs; a run makes enough calls to move at least 64 MiB.
//
//   sonic-shm-bench [--port P] [--repeats 5] [--max-mib 256]
//
// Without --port it serves identity_fp32 itself (an in-process sonic::Server on
// 127.0.0.1, shared memory extension on); with --port it uses a server already listening on
// 127.0.0.1:P, such as sonic-server or Triton started with shared memory allowed.
//
// Columns: time per round trip; GB/s = payload both ways (2 x size) / time; memcpy GB/s =
// size / time of one memcpy of it; speedup = grpc time / shm time.
#include <sonic/builtin_models.hpp>
#include <sonic/executor.hpp>
#include <sonic/server.hpp>
#include <sonic/sonic.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "payload_sweep_args.hpp"
#include "timing.hpp"

namespace {

using sonic::bench::Clock;
using sonic::bench::median;
using sonic::bench::ms_between;

// Milliseconds per round trip of `calls` identity requests of `payload`.
double time_calls(sonic::Client& client, const std::vector<float>& payload, int calls) {
  auto request = [&] {
    return sonic::InferRequest("identity_fp32")
        .input("INPUT0",
               sonic::Tensor::view(payload, {1, static_cast<std::int64_t>(payload.size())}));
  };
  auto start = Clock::now();
  for (int i = 0; i < calls; ++i) {
    auto result = client.infer(request());
    const auto& out = result.output("OUTPUT0");
    if (out.byte_size() != payload.size() * 4 || out.as<float>()[payload.size() - 1] != 0.5f) {
      throw std::runtime_error("wrong output");
    }
  }
  return ms_between(start, Clock::now()) / calls;
}

double time_memcpy(std::vector<float>& from, std::vector<float>& to, int copies) {
  auto start = Clock::now();
  for (int i = 0; i < copies; ++i) {
    std::memcpy(to.data(), from.data(), from.size() * 4);
    from[static_cast<std::size_t>(i) % from.size()] = to[0];  // keep every copy observable
  }
  return ms_between(start, Clock::now()) / copies;
}

int run(int argc, char** argv) {
  auto args = sonic::bench::parse_payload_sweep(
      "sonic-shm-bench",
      "usage: sonic-shm-bench [--port P] [--repeats 5] [--max-mib 256]\n"
      "identity_fp32 round trips over grpc:// and grpc+shm://, next to memcpy; without --port\n"
      "against a server of its own.",
      argc, argv);
  std::unique_ptr<sonic::Server> server;
  int port = args.port;
  if (port == 0) {
    sonic::ServerOptions options;
    options.port = 0;
    server = std::make_unique<sonic::Server>(
        sonic::CpuExecutor::with_models(sonic::models::builtin()), options);
    server->start();
    port = server->port();
  }
  std::string address = "127.0.0.1:" + std::to_string(port);
  sonic::Client grpc("grpc://" + address);
  sonic::Client shm("grpc+shm://" + address);

  std::printf("%9s %10s %9s %10s %9s %8s %12s %11s\n", "size", "grpc ms", "grpc GB/s", "shm ms",
              "shm GB/s", "speedup", "memcpy GB/s", "shm/memcpy");
  for (std::size_t kib = 64; kib <= args.max_mib * 1024; kib *= 4) {
    std::size_t bytes = kib * 1024;
    std::vector<float> payload(bytes / 4, 0.5f), target(bytes / 4);
    int calls = static_cast<int>(std::max<std::size_t>(3, (std::size_t{64} << 20) / bytes));
    calls = std::min(calls, 200);
    for (int i = 0; i < 2; ++i) {  // warm up: connections, metadata, output sizes, regions
      (void)time_calls(grpc, payload, 1);
      (void)time_calls(shm, payload, 1);
    }
    std::vector<double> grpc_ms, shm_ms, memcpy_ms;
    for (int run = 0; run < args.repeats; ++run) {
      grpc_ms.push_back(time_calls(grpc, payload, calls));
      shm_ms.push_back(time_calls(shm, payload, calls));
      memcpy_ms.push_back(time_memcpy(payload, target, calls));
    }
    double g = median(grpc_ms), s = median(shm_ms), m = median(memcpy_ms);
    auto gbps = [](double moved, double ms) { return moved / 1e9 / (ms / 1000); };
    double both = 2.0 * static_cast<double>(bytes);
    std::string size =
        kib >= 1024 ? std::to_string(kib / 1024) + " MiB" : std::to_string(kib) + " KiB";
    std::printf("%9s %10.3f %9.2f %10.3f %9.2f %7.1fx %12.2f %10.0f%%\n", size.c_str(), g,
                gbps(both, g), s, gbps(both, s), g / s, gbps(static_cast<double>(bytes), m),
                100 * gbps(both, s) / gbps(static_cast<double>(bytes), m));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return sonic::tools::CommandLine::run("sonic-shm-bench", [&] { return run(argc, argv); });
}
