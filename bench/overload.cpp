// sonic-overload-bench: what a server and its clients do past the server's capacity, against a
// running sonic-server (bench/overload.sh starts it). Each round measures the capacity first, in
// the same run, then offers multiples of it, open loop, every request with a deadline.
//
//   sonic-overload-bench --url URL --model NAME [--input INPUT0] [--shape 1,16]
//                        [--loads 1,2,4,8] [--rounds 3] [--seconds 6] [--deadline-ms 100:500]
//                        [--fallback-repository DIR --fallback-threads N] [--label TEXT]
//                        [--plot FILE.svg --plot-data FILE.tsv] [--unloaded-only]
//
// Capacity: 16 requests kept in flight, no deadlines, for half of --seconds: answers per second.
// With a fallback, its capacity too, alone (16 requests in flight on the fallback executor).
// Then, for each load L: requests sent at L times the capacity (the server's, plus the
// fallback's when there is one), evenly spaced, for --seconds, each with a deadline drawn
// uniformly from --deadline-ms, through one client with the default options (and the
// fallback, when given). Per load, the medians over the rounds of:
//   goodput   answers that reached their caller by its deadline, per second, as a share of the
//             capacity (the server's, plus the fallback's when there is one);
//   useful    of the server's executions of the model in that time (its own statistics), the
//             share whose answer reached a caller in time;
//   p50, p99  of the answers in time, in ms;
//   local     the share of the requests answered in time by the fallback.
// The unloaded p50 (one request at a time, with a 1 s deadline) comes first. With --plot, the
// goodput of each load is added to --plot-data as the series --label (replacing one of that
// name), and every series there is drawn into the plot: runs of several models and setups make
// one plot. --unloaded-only measures the unloaded p50 alone (to compare servers' settings).
// Exits 1 when the capacity cannot be measured (no answer at all).
#include <sonic/repository/repository.hpp>
#include <sonic/sonic.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "line_plot.hpp"
#include "timing.hpp"

namespace {

using sonic::bench::Clock;
using namespace std::chrono_literals;

struct Options {
  std::string url, model, input = "INPUT0", label, plot, plot_data;
  std::vector<std::int64_t> shape{1, 16};
  std::vector<double> loads{1, 2, 4, 8};
  int rounds = 3;
  double seconds = 6;
  int deadline_lo_ms = 100, deadline_hi_ms = 500;
  std::string fallback_repository;
  std::size_t fallback_threads = 1;
  bool unloaded_only = false;
};

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "sonic-overload-bench: %s (see the file's header)\n", why.c_str());
  std::exit(2);
}

template <typename T>
std::vector<T> parse_list(const std::string& text) {
  std::vector<T> values;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const double value = std::atof(item.c_str());
    if (value <= 0) usage_error("bad value '" + item + "'");
    values.push_back(static_cast<T>(value));
  }
  return values;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--unloaded-only") {
      o.unloaded_only = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) usage_error(flag + " needs a value");
    const std::string value = argv[i + 1];
    if (flag == "--url") {
      o.url = value;
    } else if (flag == "--model") {
      o.model = value;
    } else if (flag == "--input") {
      o.input = value;
    } else if (flag == "--shape") {
      o.shape = parse_list<std::int64_t>(value);
    } else if (flag == "--loads") {
      o.loads = parse_list<double>(value);
    } else if (flag == "--rounds") {
      o.rounds = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "--seconds") {
      o.seconds = std::max(1.0, std::atof(value.c_str()));
    } else if (flag == "--deadline-ms") {
      const auto colon = value.find(':');
      o.deadline_lo_ms = std::atoi(value.substr(0, colon).c_str());
      o.deadline_hi_ms = colon == std::string::npos ? o.deadline_lo_ms
                                                    : std::atoi(value.substr(colon + 1).c_str());
      if (o.deadline_lo_ms <= 0 || o.deadline_hi_ms < o.deadline_lo_ms)
        usage_error("bad deadlines");
    } else if (flag == "--fallback-repository") {
      o.fallback_repository = value;
    } else if (flag == "--fallback-threads") {
      o.fallback_threads = static_cast<std::size_t>(std::max(1, std::atoi(value.c_str())));
    } else if (flag == "--plot") {
      o.plot = value;
    } else if (flag == "--plot-data") {
      o.plot_data = value;
    } else if (flag == "--label") {
      o.label = value;
    } else {
      usage_error("unknown option " + flag);
    }
  }
  if (o.url.empty() || o.model.empty()) usage_error("--url and --model are required");
  if (!o.plot.empty() && o.plot_data.empty()) usage_error("--plot needs --plot-data");
  return o;
}

sonic::InferRequest make_request(const Options& o) {
  std::int64_t count = 1;
  for (auto d : o.shape) count *= d;
  std::vector<float> values(static_cast<std::size_t>(count), 0.5f);
  return sonic::InferRequest(o.model).input(o.input,
                                            sonic::Tensor::from_vector(std::move(values), o.shape));
}

std::uint64_t executions(sonic::Client& client, const std::string& model) {
  std::uint64_t total = 0;
  for (const auto& s : client.model_statistics(model)) total += s.execution_count;
  return total;
}

// Answers per second with `in_flight` requests kept going for `seconds`, no deadlines: `send`
// starts one and calls its argument with whether it succeeded.
template <typename Send>
double closed_loop(int in_flight, double seconds, Send send) {
  std::mutex mutex;
  std::condition_variable idle;
  int out = 0;
  std::uint64_t answered = 0;
  const auto start = Clock::now();
  const auto until =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::function<void()> one = [&] {
    send([&](bool ok) {
      std::lock_guard<std::mutex> lock(mutex);
      answered += ok ? 1 : 0;
      if (Clock::now() < until) return one();  // the next, in its place
      --out;
      idle.notify_all();
    });
  };
  {
    std::lock_guard<std::mutex> lock(mutex);
    out = in_flight;
  }
  for (int i = 0; i < in_flight; ++i) one();
  std::unique_lock<std::mutex> lock(mutex);
  idle.wait(lock, [&] { return out == 0; });
  return static_cast<double>(answered) / sonic::bench::ms_between(start, Clock::now()) * 1000;
}

struct LoadResult {
  double goodput = 0;  // answers in time per second
  double useful = 0;   // share of the server's executions answered in time
  double p50 = 0, p99 = 0;
  double local = 0;  // share of the requests answered in time by the fallback
  std::uint64_t sent = 0, in_time = 0, late = 0, failed = 0;
  std::map<std::string, std::uint64_t> failures;  // by code
};

LoadResult open_loop(const Options& o, const sonic::ClientOptions& client_options, double rate,
                     std::uint64_t seed) {
  sonic::Client client(client_options);
  const std::uint64_t executed_before = executions(client, o.model);
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<int> deadline_ms(o.deadline_lo_ms, o.deadline_hi_ms);
  std::mutex mutex;
  std::condition_variable done;
  LoadResult result;
  std::vector<double> latencies;
  std::uint64_t local = 0, pending = 0;
  const auto total = static_cast<std::uint64_t>(rate * o.seconds);
  const auto start = Clock::now();
  const auto request = make_request(o);
  for (std::uint64_t i = 0; i < total; ++i) {
    const auto at = start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(static_cast<double>(i) / rate));
    std::this_thread::sleep_until(at);
    const auto limit = std::chrono::milliseconds(deadline_ms(random));
    const auto sent = Clock::now();
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++pending;
    }
    client.infer_async(sonic::InferRequest(request).timeout(limit),
                       [&, sent, limit](sonic::Result<sonic::InferResult> r) {
                         const auto answered = Clock::now();
                         std::lock_guard<std::mutex> lock(mutex);
                         if (!r) {
                           ++result.failed;
                           ++result.failures[sonic::to_string(r.error().code())];
                         } else if (answered - sent <= limit) {
                           ++result.in_time;
                           latencies.push_back(sonic::bench::ms_between(sent, answered));
                           if (r->executed_on() == sonic::ExecutedOn::Local) ++local;
                         } else {
                           ++result.late;
                         }
                         if (--pending == 0) done.notify_all();
                       });
  }
  result.sent = total;
  {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return pending == 0; });
  }
  const double elapsed_s = o.seconds;
  const std::uint64_t executed = executions(client, o.model) - executed_before;
  const std::uint64_t remote_in_time = result.in_time - local;
  result.goodput = static_cast<double>(result.in_time) / elapsed_s;
  result.useful =
      executed == 0 ? 1.0 : static_cast<double>(remote_in_time) / static_cast<double>(executed);
  result.local = total == 0 ? 0 : static_cast<double>(local) / static_cast<double>(total);
  if (!latencies.empty()) {
    result.p50 = sonic::bench::percentile(latencies, 0.5);
    result.p99 = sonic::bench::percentile(latencies, 0.99);
  }
  return result;
}

// The series of `data` (lines "label<TAB>load<TAB>goodput %"), with `mine` in place of the one
// of its name, written back and drawn into `svg`.
void plot_all(const std::string& data, const std::string& svg,
              const sonic::bench::PlotSeries& mine) {
  std::vector<sonic::bench::PlotSeries> series;
  {
    std::ifstream in(data);
    for (std::string line; std::getline(in, line);) {
      std::stringstream fields(line);
      std::string label, load, value;
      if (!std::getline(fields, label, '\t') || !std::getline(fields, load, '\t') ||
          !std::getline(fields, value) || label == mine.name) {
        continue;
      }
      if (series.empty() || series.back().name != label) series.push_back({label, "", {}, {}});
      series.back().points.emplace_back(std::atof(load.c_str()), std::atof(value.c_str()));
    }
  }
  series.push_back(mine);
  static const char* kColors[] = {"#2c7fb8", "#c0392b", "#27ae60", "#8e44ad", "#d35400", "#7f8c8d"};
  std::ofstream out(data);
  for (std::size_t i = 0; i < series.size(); ++i) {
    series[i].color = kColors[i % (sizeof kColors / sizeof *kColors)];
    for (const auto& [x, y] : series[i].points)
      out << series[i].name << '\t' << x << '\t' << y << '\n';
  }
  sonic::bench::write_line_plot(svg, "goodput against offered load (deadlines 100-500 ms)",
                                "offered load (x capacity)", "answers in time (% of capacity)",
                                series);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  sonic::ClientOptions plain;
  plain.endpoints = {o.url};
  std::shared_ptr<sonic::CpuExecutor> fallback;
  if (!o.fallback_repository.empty()) {
    fallback =
        sonic::repository::executor_from_repository({o.fallback_repository}, o.fallback_threads);
  }
  sonic::ClientOptions with_fallback = plain;
  with_fallback.fallback = fallback;
  const auto request = make_request(o);

  // Unloaded: one request at a time, each with a deadline (so that admission looks at it).
  std::vector<double> quiet;
  {
    sonic::Client client(plain);
    for (int i = 0; i < 20; ++i) (void)client.infer(sonic::InferRequest(request));  // warm
    const auto until = Clock::now() + 2s;
    while (Clock::now() < until) {
      const auto t0 = Clock::now();
      (void)client.infer(sonic::InferRequest(request).timeout(1s));
      quiet.push_back(sonic::bench::ms_between(t0, Clock::now()));
    }
  }
  std::printf("%s unloaded p50 %.3f ms (%zu requests, one at a time)\n", o.label.c_str(),
              sonic::bench::percentile(quiet, 0.5), quiet.size());
  if (o.unloaded_only) return 0;
  if (fallback) {  // its model loads on the first request: not in the measurements
    auto warm = fallback->infer(sonic::InferRequest(request));
    if (!warm) {
      std::fprintf(stderr, "sonic-overload-bench: the fallback fails: %s\n", warm.error().what());
      return 1;
    }
  }

  std::vector<double> capacities, fallback_capacities;
  std::map<double, std::vector<LoadResult>> by_load;
  for (int round = 0; round < o.rounds; ++round) {
    double capacity = 0;
    {
      sonic::Client client(plain);
      capacity = closed_loop(16, o.seconds / 2, [&](std::function<void(bool)> done) {
        client.infer_async(sonic::InferRequest(request),
                           [done](sonic::Result<sonic::InferResult> r) { done(r.ok()); });
      });
    }
    if (capacity <= 0) {
      std::fprintf(stderr, "sonic-overload-bench: no answer at all from %s\n", o.url.c_str());
      return 1;
    }
    capacities.push_back(capacity);
    double fallback_capacity = 0;
    if (fallback) {
      fallback_capacity = closed_loop(16, o.seconds / 2, [&](std::function<void(bool)> done) {
        fallback->infer_async(sonic::InferRequest(request),
                              [done](sonic::Result<sonic::InferResult> r) { done(r.ok()); });
      });
      fallback_capacities.push_back(fallback_capacity);
    }
    std::printf(
        "round %d: capacity %.1f/s%s\n", round + 1, capacity,
        fallback ? (", fallback alone " + sonic::bench::detail::fixed(fallback_capacity, 1) + "/s")
                       .c_str()
                 : "");
    for (double load : o.loads) {
      // With a fallback, what the client can answer in time is both capacities together.
      auto result =
          open_loop(o, fallback ? with_fallback : plain, load * (capacity + fallback_capacity),
                    static_cast<std::uint64_t>(round * 1000 + load * 10));
      result.goodput /= capacity + fallback_capacity;
      std::printf("  %4.1fx: sent %llu, in time %llu, late %llu, failed %llu", load,
                  static_cast<unsigned long long>(result.sent),
                  static_cast<unsigned long long>(result.in_time),
                  static_cast<unsigned long long>(result.late),
                  static_cast<unsigned long long>(result.failed));
      for (const auto& [code, count] : result.failures) {
        std::printf(" %s:%llu", code.c_str(), static_cast<unsigned long long>(count));
      }
      std::printf("\n");
      by_load[load].push_back(std::move(result));
      std::this_thread::sleep_for(500ms);  // the queues empty between loads
    }
  }

  auto median_of = [](const std::vector<LoadResult>& results, double LoadResult::*field) {
    std::vector<double> values;
    for (const auto& r : results) values.push_back(r.*field);
    return sonic::bench::median(values);
  };
  std::printf("\n%s: capacity %.1f/s (median of %d)", o.label.c_str(),
              sonic::bench::median(capacities), o.rounds);
  if (fallback) {
    std::printf(", fallback alone %.1f/s (%zu threads)", sonic::bench::median(fallback_capacities),
                o.fallback_threads);
  }
  std::printf("; deadlines %d-%d ms\n", o.deadline_lo_ms, o.deadline_hi_ms);
  std::printf("%8s %9s %8s %9s %9s%s\n", "load", "goodput", "useful", "p50 ms", "p99 ms",
              fallback ? "    local" : "");
  sonic::bench::PlotSeries goodput{o.label.empty() ? "goodput" : o.label, "#2c7fb8", {}, {}};
  for (const auto& [load, results] : by_load) {
    const double share = median_of(results, &LoadResult::goodput);
    std::printf("%7.1fx %8.0f%% %7.0f%% %9.1f %9.1f", load, 100 * share,
                100 * median_of(results, &LoadResult::useful), median_of(results, &LoadResult::p50),
                median_of(results, &LoadResult::p99));
    if (fallback) std::printf(" %7.0f%%", 100 * median_of(results, &LoadResult::local));
    std::printf("\n");
    goodput.points.emplace_back(load, 100 * share);
  }
  if (!o.plot.empty()) plot_all(o.plot_data, o.plot, goodput);
  return 0;
}
