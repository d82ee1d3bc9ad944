// Compares grpc://, tcp:// and tcp+zstd:// against one running sonic-server on payloads shaped
// like the seeds' workloads: bytes on the wire, client and server CPU per request, throughput.
// Run by bench/transports.sh, which starts the server (on loopback, then behind a 1 Gbit link
// between two network namespaces) and passes its addresses and process id.
//
//   sonic-transport-bench --grpc HOST:PORT --tcp HOST:PORT --server-pid PID --interface IF
//                         [--concurrency 4] [--seconds 3] [--repeats 3]
//
// Bytes are those the interface IF sent and received per request (TCP/IP headers included; on
// loopback each byte is counted once). CPU is user+system time of this process and of the server
// process. Every figure is the median over --repeats runs.

#include <sonic/sonic.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "system_counters.hpp"
#include "timing.hpp"

namespace {

using sonic::bench::Clock;
using sonic::bench::interface_bytes;
using sonic::bench::median;
using sonic::bench::ms_between;
using sonic::bench::process_cpu_seconds;

struct Args {
  std::string grpc, tcp, interface = "lo";
  long server_pid = 0;
  int concurrency = 4;
  double seconds = 3;
  int repeats = 3;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--grpc")
      a.grpc = value;
    else if (flag == "--tcp")
      a.tcp = value;
    else if (flag == "--interface")
      a.interface = value;
    else if (flag == "--server-pid")
      a.server_pid = std::atol(value.c_str());
    else if (flag == "--concurrency")
      a.concurrency = std::max(1, std::atoi(value.c_str()));
    else if (flag == "--seconds")
      a.seconds = std::max(0.2, std::atof(value.c_str()));
    else if (flag == "--repeats")
      a.repeats = std::max(1, std::atoi(value.c_str()));
    else {
      std::cerr << "sonic-transport-bench: unknown option " << flag << '\n';
      std::exit(2);
    }
  }
  if (a.grpc.empty() || a.tcp.empty() || a.server_pid == 0) {
    std::cerr << "usage: sonic-transport-bench --grpc HOST:PORT --tcp HOST:PORT --server-pid PID"
                 " [--interface lo]\n";
    std::exit(2);
  }
  return a;
}

// ---- Payloads ----

struct Payload {
  std::string name;
  std::vector<float> values;
  std::int64_t rows, cols;
};

// 64 ProtoDUNE-like 48x48 patches: zeros but for a track or two of ADC-like smooth values.
Payload sparse_patches(std::mt19937& random) {
  Payload p{"sparse 64x48x48 patches", std::vector<float>(64 * 48 * 48, 0.0f), 64, 48 * 48};
  std::uniform_int_distribution<int> start(0, 47), tracks(1, 2);
  std::normal_distribution<float> charge(40, 10);
  for (int patch = 0; patch < 64; ++patch) {
    for (int t = tracks(random); t > 0; --t) {
      int row = start(random);
      for (int col = 0; col < 48; ++col) {
        row = std::clamp(row + (col % 7 == 0 ? 1 : 0), 0, 47);
        float q = std::round(std::max(0.0f, charge(random)) * 4) / 4;  // ADC steps
        p.values[static_cast<std::size_t>(patch * 2304 + row * 48 + col)] = q;
      }
    }
  }
  return p;
}

Payload dense_noise(std::mt19937& random) {
  Payload p{"dense noise 64x2304", std::vector<float>(64 * 2304), 64, 2304};
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : p.values) v = u(random);
  return p;
}

// 20 jets x 30 constituents x 10 features, zero-padded past each jet's constituent count.
Payload jet_constituents(std::mt19937& random) {
  Payload p{"jets 20x30x10", std::vector<float>(20 * 30 * 10, 0.0f), 20, 300};
  std::uniform_int_distribution<int> count(5, 30);
  std::exponential_distribution<float> pt(0.05f);
  std::uniform_real_distribution<float> angle(-2.5f, 2.5f);
  for (int jet = 0; jet < 20; ++jet) {
    int n = count(random);
    for (int c = 0; c < n; ++c) {
      float* f = &p.values[static_cast<std::size_t>((jet * 30 + c) * 10)];
      f[0] = pt(random);
      f[1] = angle(random);
      f[2] = angle(random);
      for (int k = 3; k < 10; ++k) f[k] = static_cast<float>((c + k) % 3);  // particle id bits
    }
  }
  return p;
}

// ---- Measurements ----

struct Run {
  double requests_per_s, wire_bytes, client_us, server_us;
};

// Keeps `concurrency` requests in flight for `seconds`.
Run measure(sonic::Client& client, const Payload& payload, const Args& args) {
  auto request = [&] {
    return sonic::InferRequest("identity_fp32")
        .input("INPUT0", sonic::Tensor::view(payload.values, {payload.rows, payload.cols}));
  };
  std::mutex mutex;
  std::condition_variable idle;
  int in_flight = 0;
  std::atomic<long> done{0}, failed{0};
  double bytes0 = interface_bytes(args.interface), cpu0 = process_cpu_seconds(),
         server0 = process_cpu_seconds(args.server_pid);
  auto start = Clock::now();
  auto until = start + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(args.seconds));
  while (Clock::now() < until) {
    std::unique_lock<std::mutex> lock(mutex);
    idle.wait(lock, [&] { return in_flight < args.concurrency; });
    ++in_flight;
    lock.unlock();
    client.infer_async(request(), [&](sonic::Result<sonic::InferResult> r) {
      if (!r) ++failed;
      ++done;
      std::lock_guard<std::mutex> guard(mutex);
      --in_flight;
      idle.notify_one();
    });
  }
  std::unique_lock<std::mutex> lock(mutex);
  idle.wait(lock, [&] { return in_flight == 0; });
  double seconds = ms_between(start, Clock::now()) / 1000;
  if (failed) throw std::runtime_error(std::to_string(failed.load()) + " requests failed");
  double n = static_cast<double>(done.load());
  return {n / seconds, (interface_bytes(args.interface) - bytes0) / n,
          (process_cpu_seconds() - cpu0) / n * 1e6,
          (process_cpu_seconds(args.server_pid) - server0) / n * 1e6};
}

}  // namespace

int main(int argc, char** argv) try {
  Args args = parse(argc, argv);
  std::mt19937 random(2024);
  std::vector<Payload> payloads{sparse_patches(random), dense_noise(random),
                                jet_constituents(random)};
  struct Transport {
    const char* name;
    std::string url;
  };
  std::vector<Transport> transports{{"grpc://", "grpc://" + args.grpc},
                                    {"tcp://", "tcp://" + args.tcp},
                                    {"tcp+zstd://", "tcp+zstd://" + args.tcp}};
  std::printf("%-24s %-12s %11s %12s %10s %10s %9s %8s\n", "payload", "transport", "payload KB",
              "wire KB/req", "client us", "server us", "req/s", "MB/s");
  for (const auto& payload : payloads) {
    double kb = static_cast<double>(payload.values.size() * 4) / 1000;
    for (const auto& transport : transports) {
      sonic::Client client(transport.url);
      for (int i = 0; i < 5; ++i) {
        (void)client.infer(sonic::InferRequest("identity_fp32")
                               .input("INPUT0", sonic::Tensor::view(payload.values,
                                                                    {payload.rows, payload.cols})));
      }
      std::vector<double> rate, bytes, client_us, server_us;
      for (int r = 0; r < args.repeats; ++r) {
        Run run = measure(client, payload, args);
        rate.push_back(run.requests_per_s);
        bytes.push_back(run.wire_bytes);
        client_us.push_back(run.client_us);
        server_us.push_back(run.server_us);
      }
      double per_s = median(rate);
      std::printf("%-24s %-12s %11.1f %12.1f %10.0f %10.0f %9.1f %8.1f\n", payload.name.c_str(),
                  transport.name, kb, median(bytes) / 1000, median(client_us), median(server_us),
                  per_s, per_s * kb / 1000);
      std::fflush(stdout);
    }
  }
} catch (const std::exception& e) {
  std::cerr << "sonic-transport-bench: " << e.what() << '\n';
  return 1;
}
