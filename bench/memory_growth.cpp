// sonic-memory-bench: does the client hold on to memory as requests go by? Sends N requests
// (1,000,000 by default) of identity_fp32 with a number in flight, each completion sending the
// next, and prints the client's resident memory at checkpoints. The growth counted is from the
// first checkpoint (caches, pools and allocator arenas are warm by then) to the end.
//
//   sonic-memory-bench --url grpc://127.0.0.1:8001 [--requests N] [--concurrency C]
//                      [--elements E] [--callbacks network|pool|inline]
//                      [--max-growth-kib K]
//
// Exits 1 when a request fails or the growth exceeds --max-growth-kib (1024 by default).
#include <sonic/sonic.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "callback_option.hpp"
#include "system_counters.hpp"

namespace {

struct Options {
  std::string url = "grpc://127.0.0.1:8001";
  long requests = 1'000'000;
  int concurrency = 16;
  std::int64_t elements = 16;  // 64 B of FP32
  sonic::CallbackThread callbacks = sonic::CallbackThread::Network;
  long max_growth_kib = 1024;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "sonic-memory-bench: %s needs a value (see the file's header)\n",
                   flag.c_str());
      std::exit(2);
    }
    const char* value = argv[++i];
    if (flag == "--url") {
      o.url = value;
    } else if (flag == "--requests") {
      o.requests = std::max(1L, std::atol(value));
    } else if (flag == "--concurrency") {
      o.concurrency = std::max(1, std::atoi(value));
    } else if (flag == "--elements") {
      o.elements = std::max<std::int64_t>(1, std::atoll(value));
    } else if (flag == "--callbacks") {
      auto where = sonic::bench::parse_callback_thread(value);
      if (!where) {
        std::fprintf(stderr, "sonic-memory-bench: --callbacks takes %s\n",
                     sonic::bench::kCallbackThreadNames);
        std::exit(2);
      }
      o.callbacks = *where;
    } else if (flag == "--max-growth-kib") {
      o.max_growth_kib = std::atol(value);
    } else {
      std::fprintf(stderr, "sonic-memory-bench: unknown option %s\n", flag.c_str());
      std::exit(2);
    }
  }
  return o;
}

// Keeps `concurrency` requests in flight until `total` were sent, recording resident memory
// every `checkpoint` completions.
class Run {
 public:
  Run(sonic::Client& client, const Options& o)
      : client_(client),
        total_(o.requests),
        checkpoint_(std::max(1L, o.requests / 10)),
        input_(sonic::Tensor::from_vector(
            std::vector<float>(static_cast<std::size_t>(o.elements), 1.5f), {1, o.elements})) {}

  void go(int concurrency) {
    for (int i = 0; i < concurrency && admit(); ++i) send();
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return in_flight_ == 0; });
  }

  long failures() const { return failures_; }
  const std::vector<std::pair<long, long>>& checkpoints() const { return checkpoints_; }

 private:
  bool admit() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (sent_ == total_) return false;
    ++sent_;
    ++in_flight_;
    return true;
  }

  void send() {
    client_.infer_async(sonic::InferRequest("identity_fp32").input("INPUT0", input_),
                        [this](sonic::Result<sonic::InferResult> r) {
                          {
                            std::lock_guard<std::mutex> lock(mutex_);
                            if (!r) ++failures_;
                            if (++completed_ % checkpoint_ == 0) {
                              checkpoints_.push_back({completed_, sonic::bench::resident_kib()});
                            }
                            if (sent_ == total_) {
                              if (--in_flight_ == 0) finished_.notify_all();
                              return;
                            }
                            ++sent_;
                          }
                          send();
                        });
  }

  sonic::Client& client_;
  long total_, checkpoint_;
  sonic::Tensor input_;
  std::mutex mutex_;
  std::condition_variable finished_;
  long sent_ = 0, completed_ = 0, failures_ = 0;
  int in_flight_ = 0;
  std::vector<std::pair<long, long>> checkpoints_;
};

}  // namespace

int main(int argc, char** argv) try {
  Options o = parse(argc, argv);
  sonic::ClientOptions options;
  options.callbacks = o.callbacks;
  sonic::Client client(o.url, options);
  long before = sonic::bench::resident_kib();
  Run run(client, o);
  run.go(o.concurrency);
  std::printf("%-10s %12s\n", "requests", "RSS KiB");
  std::printf("%-10d %12ld\n", 0, before);
  for (const auto& [count, kib] : run.checkpoints()) std::printf("%-10ld %12ld\n", count, kib);
  if (auto slow = client.stats().slow_callbacks; slow > 0) {
    std::fprintf(stderr,
                 "sonic-memory-bench: %llu callbacks held a network thread past its budget; the "
                 "client's callbacks moved to the callback threads\n",
                 static_cast<unsigned long long>(slow));
  }
  const auto& points = run.checkpoints();
  long growth = points.empty() ? 0 : points.back().second - points.front().second;
  std::printf("growth from %ld to %ld requests: %ld KiB (limit %ld KiB); failures: %ld\n",
              points.empty() ? 0 : points.front().first, points.empty() ? 0 : points.back().first,
              growth, o.max_growth_kib, run.failures());
  return run.failures() == 0 && growth <= o.max_growth_kib ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "sonic-memory-bench: %s\n", e.what());
  return 2;
}
