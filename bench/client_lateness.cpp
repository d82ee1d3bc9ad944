// sonic-client-lateness-bench: how late a client's outcomes reach their callbacks when the client
// itself is overloaded, against running sonic-servers (bench/client_lateness.sh starts two, and
// kills and restarts them in some scenarios).
//
//   sonic-client-lateness-bench --url URL [--url URL...] [--rate 40000] [--seconds 8]
//                               [--deadline-ms 400] [--rounds 3] [--model identity_fp32]
//                               [--label TEXT] [--by-code true]
//                               [--callbacks network|pool|inline]
//
// Open loop: one client with every --url as an endpoint and the default options is sent --rate
// requests per second (FP32 [1, 16], owned inputs, each with a --deadline-ms timeout) for
// --seconds, whatever it completes; past what the machine can complete, requests pile up in the
// client. For every outcome the callback notes how long after its request's deadline it came
// (an outcome before the deadline counts 0). Per round, then the medians over --rounds, each
// round with a fresh client:
//   outcomes    callbacks run (every request sent has one);
//   ok          the share that were answers;
//   worst ms    the latest outcome, in ms past its deadline;
//   >20ms >100ms  the shares of outcomes more than 20 and 100 ms past their deadline;
//   peak        the most requests in flight at once;
//   refused     outcomes that were RESOURCE_EXHAUSTED.
// --callbacks sets ClientOptions::callbacks (default: network, the default). --by-code true adds,
// after each round, the outcomes of each status code, how many came more than 20 ms late and the
// latest.
#include <sonic/sonic.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "timing.hpp"

namespace {

using sonic::bench::Clock;
using sonic::bench::median;
using namespace std::chrono_literals;

struct Options {
  std::vector<std::string> urls;
  std::string model = "identity_fp32", label;
  double rate = 40000, seconds = 8;
  int deadline_ms = 400, rounds = 3;
  bool by_code = false;
  sonic::CallbackThread callbacks = sonic::CallbackThread::Network;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--url") {
      o.urls.push_back(value);
    } else if (flag == "--model") {
      o.model = value;
    } else if (flag == "--label") {
      o.label = value;
    } else if (flag == "--rate") {
      o.rate = std::max(1.0, std::atof(value.c_str()));
    } else if (flag == "--seconds") {
      o.seconds = std::max(0.5, std::atof(value.c_str()));
    } else if (flag == "--deadline-ms") {
      o.deadline_ms = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "--callbacks") {
      o.callbacks = value == "pool"     ? sonic::CallbackThread::Pool
                    : value == "inline" ? sonic::CallbackThread::Inline
                                        : sonic::CallbackThread::Network;
    } else if (flag == "--by-code") {
      o.by_code = value == "true";
    } else if (flag == "--rounds") {
      o.rounds = std::max(1, std::atoi(value.c_str()));
    } else {
      std::fprintf(stderr, "sonic-client-lateness-bench: unknown option %s\n", flag.c_str());
      std::exit(2);
    }
  }
  if (o.urls.empty()) {
    std::fprintf(stderr,
                 "usage: sonic-client-lateness-bench --url URL [--url URL...] [--rate R]"
                 " [--seconds S] [--deadline-ms D] [--rounds N]\n");
    std::exit(2);
  }
  return o;
}

struct Round {
  double outcomes = 0, ok = 0, worst_ms = 0, over20 = 0, over100 = 0, peak = 0, refused = 0;
};

// What the callbacks count: atomics, since callbacks run on several threads at once.
struct Tally {
  static constexpr std::size_t kWatch = 17;
  std::atomic<long> outcomes{0}, ok{0}, over20{0}, over100{0}, refused{0}, in_flight{0}, peak{0};
  std::atomic<long> worst_us{0};
  // By status code: outcomes, those later than 20 ms, the worst (--by-code).
  std::array<std::atomic<long>, 18> by_code{}, late_by_code{}, worst_by_code{};
  std::mutex mutex;
  std::condition_variable all_done;

  void note(const sonic::Result<sonic::InferResult>& result, Clock::time_point deadline) {
    const auto late =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - deadline);
    const long us = std::max<long>(0, static_cast<long>(late.count()));
    if (result.ok()) ok.fetch_add(1, std::memory_order_relaxed);
    if (!result.ok() && result.code() == sonic::StatusCode::ResourceExhausted) {
      refused.fetch_add(1, std::memory_order_relaxed);
    }
    if (us > 20'000) over20.fetch_add(1, std::memory_order_relaxed);
    if (us > 100'000) over100.fetch_add(1, std::memory_order_relaxed);
    long worst = worst_us.load(std::memory_order_relaxed);
    while (us > worst && !worst_us.compare_exchange_weak(worst, us, std::memory_order_relaxed)) {
    }
    // DEADLINE_EXCEEDED decided by the client's deadline watch (its message says so) apart.
    const bool watch = !result.ok() && result.code() == sonic::StatusCode::DeadlineExceeded &&
                       result.error().message().rfind("no outcome by the deadline", 0) == 0;
    const auto code = watch ? kWatch : static_cast<std::size_t>(result.code()) % kWatch;
    by_code[code].fetch_add(1, std::memory_order_relaxed);
    if (us > 20'000) late_by_code[code].fetch_add(1, std::memory_order_relaxed);
    worst = worst_by_code[code].load(std::memory_order_relaxed);
    while (us > worst &&
           !worst_by_code[code].compare_exchange_weak(worst, us, std::memory_order_relaxed)) {
    }
    outcomes.fetch_add(1, std::memory_order_relaxed);
    if (in_flight.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex);
      all_done.notify_all();
    }
  }

  void sent() {
    const long now = in_flight.fetch_add(1, std::memory_order_acq_rel) + 1;
    long seen = peak.load(std::memory_order_relaxed);
    while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
  }
};

Round run_round(const Options& o, const sonic::Tensor& input) {
  sonic::ClientOptions options;
  options.endpoints = o.urls;
  options.callbacks = o.callbacks;
  Tally tally;
  {
    sonic::Client client(options);
    const auto timeout = std::chrono::milliseconds(o.deadline_ms);
    const auto start = Clock::now();
    const auto until = start + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(o.seconds));
    long sent = 0;
    // Open loop: every millisecond, the requests due by now, whatever came back.
    for (auto now = start; now < until; now = Clock::now()) {
      const auto due =
          static_cast<long>(std::chrono::duration<double>(now - start).count() * o.rate);
      for (; sent < due; ++sent) {
        tally.sent();
        const auto deadline = Clock::now() + timeout;
        client.infer_async(sonic::InferRequest(o.model).input("INPUT0", input).timeout(timeout),
                           [&tally, deadline](sonic::Result<sonic::InferResult> result) {
                             tally.note(result, deadline);
                           });
      }
      std::this_thread::sleep_for(1ms);
    }
    std::unique_lock<std::mutex> lock(tally.mutex);
    tally.all_done.wait(lock, [&] { return tally.in_flight.load() == 0; });
  }
  Round r;
  r.outcomes = static_cast<double>(tally.outcomes.load());
  const double n = std::max(1.0, r.outcomes);
  r.ok = static_cast<double>(tally.ok.load()) / n;
  r.worst_ms = static_cast<double>(tally.worst_us.load()) / 1000;
  r.over20 = static_cast<double>(tally.over20.load()) / n;
  r.over100 = static_cast<double>(tally.over100.load()) / n;
  r.peak = static_cast<double>(tally.peak.load());
  r.refused = static_cast<double>(tally.refused.load());
  if (o.by_code) {
    for (std::size_t code = 0; code < tally.by_code.size(); ++code) {
      if (tally.by_code[code] == 0) continue;
      std::printf("  %-18s %9ld outcomes, %8ld later than 20 ms, worst %7.1f ms\n",
                  code == Tally::kWatch ? "DEADLINE (watch)"
                                        : sonic::to_string(static_cast<sonic::StatusCode>(code)),
                  tally.by_code[code].load(), tally.late_by_code[code].load(),
                  static_cast<double>(tally.worst_by_code[code].load()) / 1000);
    }
  }
  return r;
}

void print(const char* what, const Round& r) {
  std::printf("%-8s %9.0f %6.1f%% %9.1f %7.2f%% %7.2f%% %7.0f %8.0f\n", what, r.outcomes,
              100 * r.ok, r.worst_ms, 100 * r.over20, 100 * r.over100, r.peak, r.refused);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const sonic::Tensor input = sonic::Tensor::from_vector(std::vector<float>(16, 1.0f), {1, 16});
  std::printf("%s: %.0f requests/s for %.1f s, %d ms deadlines, %zu endpoints\n",
              o.label.empty() ? "client lateness" : o.label.c_str(), o.rate, o.seconds,
              o.deadline_ms, o.urls.size());
  std::printf("%-8s %9s %7s %9s %8s %8s %7s %8s\n", "round", "outcomes", "ok", "worst ms", ">20ms",
              ">100ms", "peak", "refused");
  std::vector<Round> rounds;
  for (int i = 0; i < o.rounds; ++i) {
    rounds.push_back(run_round(o, input));
    print(std::to_string(i + 1).c_str(), rounds.back());
  }
  auto med = [&](double Round::*field) {
    std::vector<double> values;
    for (const auto& r : rounds) values.push_back(r.*field);
    return median(values);
  };
  Round m;
  for (auto field : {&Round::outcomes, &Round::ok, &Round::worst_ms, &Round::over20,
                     &Round::over100, &Round::peak, &Round::refused}) {
    m.*field = med(field);
  }
  print("median", m);
  return 0;
}
