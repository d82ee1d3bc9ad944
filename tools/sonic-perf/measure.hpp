// sonic-perf — driving load (a number of requests in flight, or a request rate) through a Client
// and measuring windows of it: latency percentiles, throughput, client CPU, bytes through the
// network interfaces, and the server's queue and compute time from its statistics.
#pragma once

#include <sonic/sonic.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "system_counters.hpp"

namespace sonic::perf {

using Clock = std::chrono::steady_clock;

/// What one window (or a point: the windows that made it stable) measured.
struct Point {
  std::string load;  ///< "concurrency 4" or "rate 200/s"
  int concurrency = 0;
  double rate = 0;
  long requests = 0, failures = 0;
  long all_requests = 0;  ///< sent for the point, warm-up and unused windows included
  double seconds = 0;
  double throughput = 0;  ///< requests per second
  double p50_us = 0, p90_us = 0, p95_us = 0, p99_us = 0, max_us = 0;
  double chosen_us = 0;      ///< the --percentile latency, which stability and thresholds use
  double client_cpu_us = 0;  ///< user + system CPU of this process
  double wire_bytes = 0;     ///< per request, both directions, through the network interfaces
  double server_queue_us = 0, server_compute_us = 0;  ///< per request, from ModelStatistics
  bool stable = false;
  std::string first_error;  ///< of the first request that failed, when one did
  bool unanswered = false;  ///< its last window had no answer: the sweep stops there
};

/// A snapshot of the counters a window subtracts.
struct Counters {
  Clock::time_point at = Clock::now();
  double cpu_s = 0;
  double wire_bytes = 0;
  std::uint64_t server_count = 0, queue_ns = 0, compute_ns = 0;

  static Counters now(Client& client, const std::string& model) {
    Counters c;
    c.cpu_s = bench::process_cpu_seconds();
    // Bytes through this machine's network interfaces: the wire cost of the requests, headers
    // included, plus whatever else the machine sends meanwhile.
    c.wire_bytes = bench::interface_bytes();
    try {
      for (const auto& s : client.model_statistics(model)) {
        c.server_count += s.success.count;
        c.queue_ns += s.queue.ns;
        c.compute_ns += s.compute_input.ns + s.compute_infer.ns + s.compute_output.ns;
      }
    } catch (const Error&) {
      // A server without statistics: the split stays empty.
    }
    return c;
  }
};

/// Sends requests made by `make` and records each latency. Either keeps `concurrency` in
/// flight, or starts them at `rate` per second (Poisson gaps when asked).
///
/// With a concurrency, each completion sends its replacement from the callback itself, the way
/// a framework chains its next task: the load then costs no hand-off to a driving thread, so
/// the CPU measured is the client's, not this program's.
class LoadDriver {
 public:
  /// How a request goes out: Client::infer_async, or on a stream.
  using Send = std::function<void(InferRequest, Callback<InferResult>)>;

  template <typename Make>
  LoadDriver(Send send, Make make, int concurrency, double rate, bool poisson)
      : send_(std::move(send)),
        make_(std::move(make)),
        concurrency_(concurrency),
        rate_(rate),
        poisson_(poisson) {}

  /// Runs load until `until` (or `requests` completions when > 0); returns the latencies (µs)
  /// and failures of what completed meanwhile, and the first failure's error when one failed.
  /// Waits for the requests it started.
  std::vector<double> run(Clock::time_point until, long requests, long& failures,
                          std::string* first_error = nullptr) {
    Window window(until, requests);
    if (rate_ > 0) {
      paced(window);
    } else {
      for (int i = 0; i < concurrency_; ++i) {
        if (!window.admit()) break;
        send(window, /*chained=*/true);
      }
    }
    std::unique_lock<std::mutex> lock(window.mutex);
    window.changed.wait(lock, [&] { return window.in_flight == 0; });
    failures = window.failures;
    if (first_error) *first_error = window.first_error;
    return std::move(window.latencies);
  }

 private:
  // One run's bookkeeping, shared by the callbacks.
  struct Window {
    Window(Clock::time_point end, long limit) : until(end), requests(limit) {}
    Clock::time_point until;
    long requests;
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<double> latencies;
    long failures = 0, completed = 0;
    int in_flight = 0;
    std::string first_error;

    // Counts a request in when the window wants more; call with `mutex` held. A completing
    // request that is replaced keeps its count (`replacing`).
    bool wants_more(bool replacing) const {
      if (requests <= 0) return Clock::now() < until;
      return completed + in_flight - (replacing ? 1 : 0) < requests;
    }
    bool admit() {
      std::lock_guard<std::mutex> lock(mutex);
      if (!wants_more(false)) return false;
      ++in_flight;
      return true;
    }
  };

  // Sends one admitted request; a chained one sends its successor when it completes.
  void send(Window& window, bool chained) {
    auto start = Clock::now();
    send_(make_(), [this, &window, start, chained](Result<InferResult> r) {
      double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      {
        std::lock_guard<std::mutex> lock(window.mutex);
        if (r) {
          window.latencies.push_back(us);
        } else {
          if (window.failures++ == 0) window.first_error = r.error().what();
        }
        ++window.completed;
        if (!chained || !window.wants_more(true)) {
          // The last one out wakes run(), which may then end the window: touch nothing after.
          if (--window.in_flight == 0) window.changed.notify_all();
          return;
        }
      }
      send(window, true);  // the successor takes this request's place in flight
    });
  }

  // Starts requests at the rate, whatever is in flight.
  void paced(Window& window) {
    std::mt19937 random(42);
    std::exponential_distribution<double> gap(rate_);
    auto next_start = Clock::now();
    for (;;) {
      std::this_thread::sleep_until(next_start);
      double seconds = poisson_ ? gap(random) : 1.0 / rate_;
      next_start +=
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
      if (!window.admit()) break;
      send(window, /*chained=*/false);
    }
  }

 private:
  Send send_;
  std::function<InferRequest()> make_;
  int concurrency_;
  double rate_;
  bool poisson_;
};

inline double percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1,
                         static_cast<std::size_t>(p * static_cast<double>(sorted.size())))];
}

/// A window's point from its latencies and the counters around it.
/// `chosen` is the percentile (1 to 99) that stability and the latency threshold use.
inline Point summarize(std::vector<double> latencies, long failures, const Counters& before,
                       const Counters& after, int chosen) {
  Point p;
  std::sort(latencies.begin(), latencies.end());
  p.requests = static_cast<long>(latencies.size()) + failures;
  p.failures = failures;
  p.seconds = std::chrono::duration<double>(after.at - before.at).count();
  double n = std::max<double>(1, static_cast<double>(p.requests));
  p.throughput = static_cast<double>(latencies.size()) / p.seconds;
  p.p50_us = percentile(latencies, 0.50);
  p.p90_us = percentile(latencies, 0.90);
  p.p95_us = percentile(latencies, 0.95);
  p.p99_us = percentile(latencies, 0.99);
  p.chosen_us = percentile(latencies, chosen / 100.0);
  p.max_us = latencies.empty() ? 0 : latencies.back();
  p.client_cpu_us = (after.cpu_s - before.cpu_s) / n * 1e6;
  p.wire_bytes = (after.wire_bytes - before.wire_bytes) / n;
  double served = static_cast<double>(after.server_count - before.server_count);
  if (served > 0) {
    p.server_queue_us = static_cast<double>(after.queue_ns - before.queue_ns) / served / 1000;
    p.server_compute_us = static_cast<double>(after.compute_ns - before.compute_ns) / served / 1000;
  }
  return p;
}

/// Whether the last `count` windows agree within `tolerance` on throughput and the chosen
/// percentile's latency (and none had a failure: a rate of errors is not a measurement).
inline bool stable(const std::vector<Point>& windows, int count, double tolerance) {
  if (static_cast<int>(windows.size()) < count) return false;
  auto first = windows.end() - count;
  if (std::any_of(first, windows.end(), [](const Point& p) { return p.failures > 0; })) {
    return false;
  }
  auto within = [&](auto field) {
    auto [lo, hi] = std::minmax_element(
        first, windows.end(), [&](const Point& a, const Point& b) { return field(a) < field(b); });
    double mid = (field(*lo) + field(*hi)) / 2;
    return mid == 0 || (field(*hi) - field(*lo)) / mid <= 2 * tolerance;
  };
  return within([](const Point& p) { return p.throughput; }) &&
         within([](const Point& p) { return p.chosen_us; });
}

}  // namespace sonic::perf
