// Test support for hostile peers: a real sonic-server in a child process (so that its memory
// and its life can be watched from outside, as an operator would), and a well-behaved client
// that keeps sending `simple` while the attacks run and records what it saw.
#pragma once

#include <sonic/sonic.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "child_server.hpp"
#include "sanitizers.hpp"

namespace sonic::test {

// Sanitizers keep freed memory in quarantine and add shadow memory: memory bounds scale with
// them, and their checks make everything slower. ThreadSanitizer's shadow is the larger (2000
// half-open connections: +290 MiB under it, +33 MiB without).
#if defined(SONIC_TEST_TSAN)
inline constexpr long kSanitizerSlack = 8;
#elif defined(SONIC_TEST_SANITIZED)
inline constexpr long kSanitizerSlack = 4;
#else
inline constexpr long kSanitizerSlack = 1;
#endif

/// A sonic-server child on ephemeral gRPC and TCP ports with `options` added to its command
/// line, under `limits`.
class HostileTarget {
 public:
  explicit HostileTarget(std::vector<std::string> options = {}, ChildLimits limits = {})
      : server_(command(std::move(options)), "sonic-server listening on 127.0.0.1:", limits),
        tcp_port_(server_.next_port("sonic-server tcp listening on 127.0.0.1:")),
        metrics_port_(server_.next_port("sonic-server metrics listening on 127.0.0.1:")),
        http_port_(server_.next_port("sonic-server http listening on 127.0.0.1:")) {}

  int grpc_port() const { return server_.port(); }
  int tcp_port() const { return tcp_port_; }
  int metrics_port() const { return metrics_port_; }
  int http_port() const { return http_port_; }
  std::string grpc_url() const { return "grpc://127.0.0.1:" + std::to_string(grpc_port()); }
  pid_t pid() const { return server_.pid(); }

  /// Empty while the server runs; how it ended otherwise.
  std::string ended() { return server_.ended(); }

  /// The server's resident memory (VmRSS) in KiB; -1 once it is gone.
  long resident_kib() const {
    std::ifstream status("/proc/" + std::to_string(server_.pid()) + "/status");
    std::string key;
    long value = -1;
    while (status >> key) {
      if (key == "VmRSS:") {
        status >> value;
        break;
      }
      status.ignore(256, '\n');
    }
    return value;
  }

 private:
  static std::vector<std::string> command(std::vector<std::string> options) {
    std::vector<std::string> args = {SONIC_SERVER_BINARY, "--port", "0", "--tcp-port", "0"};
    args.insert(args.end(), options.begin(), options.end());
    return args;
  }

  ChildServer server_;
  int tcp_port_;
  int metrics_port_;
  int http_port_;
};

/// The server's peak growth of resident memory (KiB) while `attack` runs, sampled every 5 ms
/// and once more after it.
inline long peak_growth_kib(const HostileTarget& target, const std::function<void()>& attack) {
  const long before = target.resident_kib();
  long peak = before;
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done) {
      peak = std::max(peak, target.resident_kib());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  attack();
  done = true;
  watcher.join();
  return std::max(peak, target.resident_kib()) - before;
}

/// What a well-behaved client saw.
struct ProbeReport {
  std::size_t requests = 0;
  std::size_t failures = 0;
  std::string first_failure;
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

/// Sends one `simple` request every `period` on a thread of its own, each with a 5 s
/// deadline, until stop().
class Probe {
 public:
  explicit Probe(const std::string& url,
                 std::chrono::milliseconds period = std::chrono::milliseconds(50),
                 ClientOptions options = {})
      : client_(url, std::move(options)), thread_([this, period] { run(period); }) {}
  ~Probe() { stop(); }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;

  /// Stops sending and reports (idempotent).
  ProbeReport stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(mutex_);
    ProbeReport report = report_;
    std::vector<double> all;
    all.reserve(samples_.size());
    for (const auto& [when, ms] : samples_) all.push_back(ms);
    summarize(std::move(all), report);
    return report;
  }

  /// Latencies (ms) of the requests sent within [from, to).
  std::vector<double> latencies(std::chrono::steady_clock::time_point from,
                                std::chrono::steady_clock::time_point to) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<double> out;
    for (const auto& [when, ms] : samples_) {
      if (when >= from && when < to) out.push_back(ms);
    }
    return out;
  }

  /// p50, p99 and max of `latencies` into `report`.
  static void summarize(std::vector<double> latencies, ProbeReport& report) {
    if (latencies.empty()) return;
    std::sort(latencies.begin(), latencies.end());
    auto at = [&](double q) {
      return latencies[std::min(latencies.size() - 1,
                                static_cast<std::size_t>(q * latencies.size()))];
    };
    report.p50_ms = at(0.50);
    report.p99_ms = at(0.99);
    report.max_ms = latencies.back();
  }

 private:
  void run(std::chrono::milliseconds period) {
    std::vector<std::int32_t> a(16, 1), b(16, 2);
    auto next = std::chrono::steady_clock::now();
    while (!stopping_) {
      auto start = std::chrono::steady_clock::now();
      std::string failure;
      try {
        auto result = client_.infer(InferRequest("simple")
                                        .input("INPUT0", Tensor::view(a, {1, 16}))
                                        .input("INPUT1", Tensor::view(b, {1, 16}))
                                        .timeout(std::chrono::seconds(5)));
        if (result.output("OUTPUT0").as<std::int32_t>()[0] != 3) failure = "wrong answer";
      } catch (const Error& e) {
        failure = e.what();
      }
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++report_.requests;
        samples_.emplace_back(start, ms);
        if (!failure.empty() && report_.failures++ == 0) report_.first_failure = failure;
      }
      next += period;
      std::this_thread::sleep_until(next);
    }
  }

  Client client_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  ProbeReport report_;
  std::vector<std::pair<std::chrono::steady_clock::time_point, double>> samples_;  // start, ms
  std::thread thread_;
};

}  // namespace sonic::test
