// Measures what issue-sized questions need answered about one client and one server:
// the round-trip latency of the tiny `simple` model (p50/p99) and the sync round-trip throughput
// of `identity_fp32` at a given payload, with a same-run memcpy of the payload for scale.
// Every figure is the median over --repeats runs, since a shared machine is noisy.
//
//   sonic-roundtrip [--url grpc://127.0.0.1:8001] [--requests 2000] [--payload-mib 4]
//                   [--transfers 50] [--repeats 5]
#include <sonic/sonic.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "timing.hpp"

namespace {

using sonic::bench::Clock;
using sonic::bench::median;
using sonic::bench::ms_between;
using sonic::bench::percentile;

struct Args {
  std::string url = "grpc://127.0.0.1:8001";
  int requests = 2000;
  double payload_mib = 4;
  int transfers = 50;
  int repeats = 5;
};

Args parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--url") {
      args.url = value;
    } else if (flag == "--requests") {
      args.requests = std::max(10, std::atoi(value));
    } else if (flag == "--payload-mib") {
      args.payload_mib = std::max(0.001, std::atof(value));
    } else if (flag == "--transfers") {
      args.transfers = std::max(1, std::atoi(value));
    } else if (flag == "--repeats") {
      args.repeats = std::max(1, std::atoi(value));
    } else {
      std::cerr << "sonic-roundtrip: unknown option " << flag << '\n';
      std::exit(2);
    }
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) try {
  Args args = parse(argc, argv);
  sonic::Client client(args.url);

  std::vector<std::int32_t> a(16, 1), b(16, 2);
  auto simple = [&] {
    return sonic::InferRequest("simple")
        .input("INPUT0", sonic::Tensor::view(a, {1, 16}))
        .input("INPUT1", sonic::Tensor::view(b, {1, 16}));
  };
  auto elements = static_cast<std::size_t>(args.payload_mib * (1 << 20) / 4);
  std::vector<float> payload(elements, 0.5f), copy(elements);
  auto identity = [&] {
    return sonic::InferRequest("identity_fp32")
        .input("INPUT0", sonic::Tensor::view(payload, {1, static_cast<std::int64_t>(elements)}));
  };
  for (int i = 0; i < 200; ++i) (void)client.infer(simple());  // warm up: connect, metadata
  for (int i = 0; i < 3; ++i) (void)client.infer(identity());

  std::vector<double> p50s, p99s, round_trips, memcpys;
  for (int run = 0; run < args.repeats; ++run) {
    std::vector<double> latencies;
    latencies.reserve(static_cast<std::size_t>(args.requests));
    for (int i = 0; i < args.requests; ++i) {
      auto start = Clock::now();
      (void)client.infer(simple());
      latencies.push_back(ms_between(start, Clock::now()) * 1000);
    }
    p50s.push_back(percentile(latencies, 0.50));
    p99s.push_back(percentile(latencies, 0.99));

    auto start = Clock::now();
    for (int i = 0; i < args.transfers; ++i) {
      auto result = client.infer(identity());
      if (result.output("OUTPUT0").byte_size() != elements * 4)
        throw std::runtime_error("short output");
    }
    round_trips.push_back(ms_between(start, Clock::now()) / args.transfers);

    start = Clock::now();
    for (int i = 0; i < args.transfers; ++i) {
      std::memcpy(copy.data(), payload.data(), elements * 4);
      payload[static_cast<std::size_t>(i) % elements] = copy[0];  // keep the copy observable
    }
    memcpys.push_back(ms_between(start, Clock::now()) / args.transfers);
  }

  double mib = static_cast<double>(elements * 4) / (1 << 20);
  double rtt = median(round_trips);
  std::cout << std::fixed << std::setprecision(1);
  std::cout << "simple latency (us, median of " << args.repeats << " runs of " << args.requests
            << "): p50 " << median(p50s) << "  p99 " << median(p99s) << '\n';
  std::cout << std::setprecision(3) << "identity_fp32 " << mib << " MiB sync round trip: " << rtt
            << " ms = " << 2 * mib / 1024 / (rtt / 1000) << " GiB/s of payload (both directions), "
            << 1000 / rtt << " req/s\n";
  std::cout << "memcpy of the same payload, same run: " << median(memcpys)
            << " ms = " << mib / 1024 / (median(memcpys) / 1000) << " GiB/s\n";
} catch (const std::exception& e) {
  std::cerr << "sonic-roundtrip: " << e.what() << '\n';
  return 1;
}
