// sonic-scale-bench: what scale costs, against a running sonic-server (bench/scale.sh starts it).
//
//   sonic-scale-bench in-flight --url URL --server-pid PID [--sweep 1000,2000,5000,10000,20000]
//                               [--plot FILE.svg]
//     One client holds N requests of identity_fp32 (64 B) in flight at once: the server is
//     paused (SIGSTOP) while they are sent, so none is answered, then resumed. Reports the
//     client's heap in use (glibc's mallinfo2, exact to the byte) and resident memory per request
//     in flight, beyond its 64 B payload, and checks every request is then answered.
//
//   sonic-scale-bench connections --url URL --server-pid PID [--sweep 10,100,500,1000,1500]
//                                 [--requests 20000] [--concurrency 16] [--plot FILE.svg]
//     Opens connections to the server one client each (share_connections off), adding to reach
//     each count of the sweep; at each count the connections are idle first (the server's
//     resident memory per connection), then carry 64 B requests, CONCURRENCY in flight spread
//     over all of them (throughput, p50, p99, and p99 as a ratio to the first count's).
//
// Exits 1 when a request fails.
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sonic/sonic.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "line_plot.hpp"
#include "system_counters.hpp"
#include "timing.hpp"

namespace {

using sonic::bench::Clock;
using namespace std::chrono_literals;

struct Options {
  std::string mode;
  std::string url;
  pid_t server_pid = 0;
  std::vector<long> sweep;
  long requests = 20000;
  int concurrency = 16;
  std::string plot;
};

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "sonic-scale-bench: %s (see the file's header)\n", why.c_str());
  std::exit(2);
}

std::vector<long> parse_list(const std::string& text) {
  std::vector<long> values;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const long value = std::atol(item.c_str());
    if (value <= 0) usage_error("bad count '" + item + "'");
    values.push_back(value);
  }
  return values;
}

Options parse(int argc, char** argv) {
  Options o;
  if (argc < 2) usage_error("say in-flight or connections");
  o.mode = argv[1];
  if (o.mode != "in-flight" && o.mode != "connections") usage_error("unknown mode " + o.mode);
  o.sweep = o.mode == "in-flight" ? std::vector<long>{1000, 2000, 5000, 10000, 20000}
                                  : std::vector<long>{10, 100, 500, 1000, 1500};
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage_error(flag + " needs a value");
    const std::string value = argv[i + 1];
    if (flag == "--url") {
      o.url = value;
    } else if (flag == "--server-pid") {
      o.server_pid = static_cast<pid_t>(std::atol(value.c_str()));
    } else if (flag == "--sweep") {
      o.sweep = parse_list(value);
    } else if (flag == "--requests") {
      o.requests = std::max(1L, std::atol(value.c_str()));
    } else if (flag == "--concurrency") {
      o.concurrency = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "--plot") {
      o.plot = value;
    } else {
      usage_error("unknown option " + flag);
    }
  }
  if (o.url.empty() || o.server_pid <= 0) usage_error("--url and --server-pid are required");
  return o;
}

sonic::InferRequest small_request() {
  return sonic::InferRequest("identity_fp32")
      .input("INPUT0", sonic::Tensor::from_vector(std::vector<float>(16, 1.0f), {1, 16}));
}
constexpr long kPayloadBytes = 64;

// Bytes the heap hands out now: small blocks and mmap'd large ones.
long heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<long>(info.uordblks + info.hblkhd);
}

long server_rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

// Counts completions and wakes whoever waits for a number of them.
class Completions {
 public:
  void done(bool ok) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++count_;
    if (!ok) ++failures_;
    changed_.notify_all();
  }
  bool wait_for(long count, std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return count_ >= count; });
  }
  long failures() {
    std::lock_guard<std::mutex> lock(mutex_);
    return failures_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  long count_ = 0, failures_ = 0;
};

// The server stays paused only while this lives, whatever throws.
class PausedServer {
 public:
  explicit PausedServer(pid_t pid) : pid_(pid) { kill(pid_, SIGSTOP); }
  ~PausedServer() { kill(pid_, SIGCONT); }
  PausedServer(const PausedServer&) = delete;
  PausedServer& operator=(const PausedServer&) = delete;

 private:
  pid_t pid_;
};

int in_flight(const Options& o) {
  sonic::Client client(o.url);  // no deadline by default: the pause cannot time requests out
  for (int i = 0; i < 1000; ++i) client.infer(small_request());  // connection, caches, pools
  std::printf("%10s %14s %14s %14s %10s\n", "in flight", "heap B/req", "beyond payload",
              "RSS B/req", "answered");
  sonic::bench::PlotSeries heap{"heap per request in flight (B)", "#2c7fb8", {}, {}};
  long failures = 0;
  for (const long n : o.sweep) {
    Completions completions;
    const long heap_before = heap_in_use();
    const long rss_before = sonic::bench::resident_kib();
    long heap_held = 0, rss_held = 0;
    {
      PausedServer paused(o.server_pid);
      for (long i = 0; i < n; ++i) {
        client.infer_async(small_request(), [&completions](sonic::Result<sonic::InferResult> r) {
          completions.done(r.ok());
        });
      }
      std::this_thread::sleep_for(300ms);  // the network thread writes what the socket takes
      heap_held = heap_in_use() - heap_before;
      rss_held = (sonic::bench::resident_kib() - rss_before) * 1024;
    }
    const bool answered = completions.wait_for(n, std::chrono::seconds(120));
    failures += completions.failures() + (answered ? 0 : 1);
    const double per_request = static_cast<double>(heap_held) / static_cast<double>(n);
    std::printf("%10ld %14.0f %14.0f %14.0f %10s\n", n, per_request, per_request - kPayloadBytes,
                static_cast<double>(rss_held) / static_cast<double>(n),
                answered && completions.failures() == 0 ? "all" : "NOT ALL");
    std::fflush(stdout);
    heap.points.emplace_back(static_cast<double>(n), per_request);
  }
  if (!o.plot.empty()) {
    sonic::bench::write_line_plot(o.plot, "one client, requests in flight (64 B each)",
                                  "requests in flight", "client heap per request (B)", {heap});
  }
  return failures == 0 ? 0 : 1;
}

struct LoadResult {
  double throughput = 0, p50_us = 0, p99_us = 0;
  long failures = 0;
};

// `requests` requests with `concurrency` in flight, request i on client i % clients.size().
LoadResult load(const std::vector<std::unique_ptr<sonic::Client>>& clients, long requests,
                int concurrency) {
  std::mutex mutex;
  std::condition_variable slot_free;
  int in_flight = 0;
  long failures = 0;
  std::vector<double> latencies_us;
  latencies_us.reserve(static_cast<std::size_t>(requests));
  const auto start = Clock::now();
  for (long i = 0; i < requests; ++i) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      slot_free.wait(lock, [&] { return in_flight < concurrency; });
      ++in_flight;
    }
    const auto sent = Clock::now();
    clients[static_cast<std::size_t>(i) % clients.size()]->infer_async(
        small_request(), [&, sent](sonic::Result<sonic::InferResult> r) {
          const double us = std::chrono::duration<double, std::micro>(Clock::now() - sent).count();
          std::lock_guard<std::mutex> lock(mutex);
          latencies_us.push_back(us);
          if (!r) ++failures;
          --in_flight;
          slot_free.notify_one();
        });
  }
  std::unique_lock<std::mutex> lock(mutex);
  slot_free.wait(lock, [&] { return in_flight == 0; });
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return LoadResult{static_cast<double>(requests) / seconds,
                    sonic::bench::percentile(latencies_us, 0.50),
                    sonic::bench::percentile(latencies_us, 0.99), failures};
}

int connections(const Options& o) {
  // Each connection is a socket here and one in the server.
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);

  sonic::ClientOptions options;
  options.share_connections = false;  // a connection per client
  std::vector<std::unique_ptr<sonic::Client>> clients;
  const long server_rss_start = server_rss_kib(o.server_pid);
  std::printf("%11s %15s %17s %10s %8s %8s %12s\n", "connections", "server RSS KiB",
              "server KiB/conn", "infer/s", "p50 us", "p99 us", "p99 vs first");
  sonic::bench::PlotSeries p99{"p99 (us)", "#c0392b", {}, {}};
  sonic::bench::PlotSeries p50{"p50 (us)", "#2c7fb8", {}, {}};
  double first_p99 = 0;
  long failures = 0;
  for (const long count : o.sweep) {
    while (static_cast<long>(clients.size()) < count) {
      clients.push_back(std::make_unique<sonic::Client>(o.url, options));
      clients.back()->infer(small_request());  // connected, with a call behind it
    }
    std::this_thread::sleep_for(300ms);
    const long rss = server_rss_kib(o.server_pid);
    const LoadResult result = load(clients, o.requests, o.concurrency);
    failures += result.failures;
    if (first_p99 == 0) first_p99 = result.p99_us;
    std::printf("%11ld %15ld %17.1f %10.0f %8.0f %8.0f %12.2f\n", count, rss,
                static_cast<double>(rss - server_rss_start) / static_cast<double>(count),
                result.throughput, result.p50_us, result.p99_us, result.p99_us / first_p99);
    std::fflush(stdout);
    p99.points.emplace_back(static_cast<double>(count), result.p99_us);
    p50.points.emplace_back(static_cast<double>(count), result.p50_us);
  }
  if (!o.plot.empty()) {
    sonic::bench::write_line_plot(
        o.plot, "64 B requests, " + std::to_string(o.concurrency) + " in flight over N connections",
        "connections", "latency (us)", {p99, p50});
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  return o.mode == "in-flight" ? in_flight(o) : connections(o);
} catch (const std::exception& e) {
  std::fprintf(stderr, "sonic-scale-bench: %s\n", e.what());
  return 2;
}
