// A framework's event loop on oneTBB with inference as a service, the way CMSSW's
// "ExternalWork" modules use it: a module's acquire() prepares its inputs on a framework
// thread, sends them with infer_async and returns at once; the framework runs other events'
// work meanwhile; when the answer arrives, sonic's callback hands the event back to the
// framework, whose produce() reads the outputs. No framework thread ever waits for the server.
//
//   event_loop --url grpc://127.0.0.1:8001 [--events 200] [--in-flight 8] [--threads 2]
//              [--patches 64] [--preprocess-ms 2] [--other-ms 0] [--fail-every K] [--blocking]
//              [--fallback REPOSITORY]
//
// --blocking runs the same module with a blocking call inside acquire(), for comparison:
// the framework threads then sit idle while the server works. At the end it prints events per
// second and how the framework threads spent the run: CPU work, and (--blocking) waiting.
// --fallback gives the client a CPU fallback, the models of that repository run in the job when
// no server answers, on the framework's own threads: its executor hands every task to the TBB
// arena (CpuExecutorOptions::scheduler), so that a server's outage never runs more threads than
// the job was given.
#include <sonic/executor.hpp>
#include <sonic/repository/repository.hpp>
#include <sonic/sonic.hpp>

#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Settings {
  std::string url = "grpc://127.0.0.1:8001";
  std::string model = "emtrk_cnn_onnx";
  int events = 200;
  int in_flight = 8;  // events the loop works on at once
  int threads = 2;    // framework (TBB) threads
  int patches = 64;   // 48x48 patches per event
  double preprocess_ms = 2;
  double other_ms = 0;  // CPU work of the event's other modules, which need no inference
  int fail_every = 0;   // every K-th event sends a request the server refuses
  bool blocking = false;
  std::string fallback;  // a model repository for the client's CPU fallback; empty: none
};

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// What the framework threads did, summed over tasks.
struct ThreadTime {
  std::atomic<long long> cpu_us{0}, task_us{0};
  // Runs a task body, counting its CPU time and its wall time.
  template <typename Body>
  void account(Body&& body) {
    const double cpu = thread_cpu_seconds();
    const auto wall = Clock::now();
    body();
    cpu_us += static_cast<long long>((thread_cpu_seconds() - cpu) * 1e6);
    task_us += std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - wall).count();
  }
};

// CPU work for `ms` milliseconds (a stand-in for reconstruction code).
void busy_for(double ms) {
  const auto until = Clock::now() + std::chrono::microseconds(static_cast<long>(ms * 1000));
  volatile double x = 1;
  while (Clock::now() < until) {
    for (int k = 0; k < 1000; ++k) x = x * 1.0000001 + 1e-9;
  }
}

// CMSSW's WaitingTaskWithArenaHolder in miniature: the framework's continuation of one event,
// resumed exactly once from any thread (sonic's), with the error that ended the wait, if any.
class WaitingTask {
 public:
  WaitingTask(tbb::task_arena& arena, tbb::task_handle continuation)
      : arena_(arena), continuation_(std::move(continuation)) {}
  // The continuation and the error were written under the mutex on sonic's thread; the lock
  // orders that before what the framework's threads do next (ThreadSanitizer cannot see the
  // ordering TBB's own enqueue gives).
  ~WaitingTask() { std::lock_guard<std::mutex> lock(mutex_); }
  WaitingTask(const WaitingTask&) = delete;
  WaitingTask& operator=(const WaitingTask&) = delete;
  void done_waiting(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!continuation_) return;  // resumed already
    error_ = std::move(error);
    arena_.enqueue(std::move(continuation_));
  }
  std::exception_ptr error() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

 private:
  mutable std::mutex mutex_;
  tbb::task_arena& arena_;
  tbb::task_handle continuation_;
  std::exception_ptr error_;
};

// One event: its patches, and what the module made of the answer.
struct Event {
  int id = 0;
  std::atomic<int> unfinished{2};  // the tagger and the other modules
  std::vector<float> patches;
  double michel_sum = 0;
  std::shared_ptr<WaitingTask> waiting;
};

// The module: acquire() before the wait, produce() after.
class MichelTagger {
 public:
  MichelTagger(sonic::Client& client, const Settings& settings)
      : client_(client), settings_(settings) {}

  // CPU work on the framework thread, then the request; returns without waiting (or, with
  // --blocking, after the answer).
  void acquire(Event& event) {
    preprocess(event);
    const auto n = static_cast<std::int64_t>(settings_.patches);
    const bool spoil = settings_.fail_every > 0 && event.id % settings_.fail_every == 0;
    auto request = sonic::InferRequest(settings_.model)
                       .input(spoil ? "no_such_input" : "patch",
                              sonic::Tensor::view(event.patches, {n, 1, 48, 48}));
    // An event's patches may outnumber the model's max_batch_size: infer_chunked sends them
    // in chunks the model takes, a few in flight, and joins the answers.
    if (settings_.blocking) {
      try {
        unpack(event, client_.infer_chunked(std::move(request)));
        event.waiting->done_waiting(nullptr);
      } catch (...) {
        event.waiting->done_waiting(std::current_exception());
      }
      return;
    }
    // The callback runs on a sonic thread: it only unpacks and hands the event back. Whatever
    // it throws (a missing output, say) goes to the framework with the event, not to sonic.
    // The patches are borrowed: the event keeps them until the callback has run.
    Event* e = &event;
    client_.infer_chunked_async(
        std::move(request), sonic::ChunkOptions{},
        sonic::forward_exceptions<sonic::InferResult>(
            [e](sonic::Result<sonic::InferResult> result) {
              unpack(*e, result.value());  // throws sonic::Error on failure
              e->waiting->done_waiting(nullptr);
            },
            [e](std::exception_ptr error) { e->waiting->done_waiting(error); }));
  }

  // Back on a framework thread with the answer, or with what went wrong.
  void produce(Event& event) {
    if (auto error = event.waiting->error()) {
      ++failed_;
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        if (failed_ <= 3) std::fprintf(stderr, "event %d failed: %s\n", event.id, e.what());
      }
      return;
    }
    ++produced_;
    std::lock_guard<std::mutex> lock(mutex_);
    total_ += event.michel_sum;
  }

  int produced() const { return produced_; }
  int failed() const { return failed_; }
  double total() const { return total_; }

 private:
  // Stand-in for hit finding and patch making: CPU work for --preprocess-ms, which also fills
  // the patches.
  void preprocess(Event& event) const {
    std::mt19937 random(static_cast<unsigned>(event.id));
    std::uniform_real_distribution<float> uniform(0, 1);
    event.patches.resize(static_cast<std::size_t>(settings_.patches) * 48 * 48);
    const auto until =
        Clock::now() + std::chrono::microseconds(static_cast<long>(settings_.preprocess_ms * 1000));
    std::size_t i = 0;
    do {
      for (int k = 0; k < 256; ++k, ++i) event.patches[i % event.patches.size()] = uniform(random);
    } while (Clock::now() < until || i < event.patches.size());
  }

  static void unpack(Event& event, const sonic::InferResult& result) {
    for (float score : result.output("michel").as<float>()) event.michel_sum += score;
  }

  sonic::Client& client_;
  const Settings& settings_;
  std::atomic<int> produced_{0}, failed_{0};
  std::mutex mutex_;
  double total_ = 0;
};

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--blocking") {
      s.blocking = true;
      continue;
    }
    if (flag == "-h" || flag == "--help" || i + 1 >= argc) {
      std::cerr << "usage: event_loop [--url URL] [--model NAME] [--events N] [--in-flight N]\n"
                   "                  [--threads N] [--patches N] [--preprocess-ms MS]\n"
                   "                  [--other-ms MS] [--fail-every K] [--blocking]\n"
                   "                  [--fallback REPOSITORY]\n";
      std::exit(flag == "-h" || flag == "--help" ? 0 : 2);
    }
    const std::string value = argv[++i];
    if (flag == "--url")
      s.url = value;
    else if (flag == "--model")
      s.model = value;
    else if (flag == "--events")
      s.events = std::stoi(value);
    else if (flag == "--in-flight")
      s.in_flight = std::stoi(value);
    else if (flag == "--threads")
      s.threads = std::stoi(value);
    else if (flag == "--patches")
      s.patches = std::stoi(value);
    else if (flag == "--preprocess-ms")
      s.preprocess_ms = std::stod(value);
    else if (flag == "--other-ms")
      s.other_ms = std::stod(value);
    else if (flag == "--fail-every")
      s.fail_every = std::stoi(value);
    else if (flag == "--fallback")
      s.fallback = value;
    else {
      std::cerr << "event_loop: unknown option " << flag << '\n';
      std::exit(2);
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) try {
  const Settings settings = parse(argc, argv);
  // The framework's threads. Made before the client, and so destroyed after it: the fallback
  // hands tasks to the arena for as long as the client lives.
  tbb::task_arena arena(settings.threads);
  std::atomic<long> fallback_tasks{0};  // handed to the arena
  sonic::ClientOptions options;
  options.endpoints = {settings.url};
  if (!settings.fallback.empty()) {
    // The fallback's tasks (a model's execution, then the request's answer) run on the arena's
    // threads, beside the framework's own tasks: the job keeps its --threads. A task holds its
    // thread while the model computes; it never waits on the framework. A blocking call is
    // another matter: it waits on a framework thread, and were every thread of the arena
    // waiting, the tasks queued behind them would never run. --blocking gives the fallback a
    // pool of its own instead, of as many threads.
    sonic::CpuExecutorOptions local;
    local.threads = static_cast<std::size_t>(settings.threads);  // what runs at once
    if (!settings.blocking) {
      local.scheduler = [&arena, &fallback_tasks](std::function<void()> task) {
        ++fallback_tasks;
        arena.enqueue(std::move(task));
      };
    }
    options.fallback =
        sonic::repository::executor_from_repository({settings.fallback}, std::move(local));
  }
  sonic::Client client(options);
  client.infer(
      sonic::InferRequest(settings.model)  // warm-up: connection and model
          .input("patch", sonic::Tensor::from_vector(std::vector<float>(48 * 48), {1, 1, 48, 48})));
  MichelTagger tagger(client, settings);
  ThreadTime time;
  tbb::task_group group;
  std::vector<Event> events(static_cast<std::size_t>(settings.events));
  std::atomic<int> next{0};

  // Starts the next event, if any: the tagger's acquire now and its produce once its wait is
  // over, and the event's other modules beside them; when both are done, the event's slot goes
  // to the next event. The continuation is created first (task_group::defer), so that the
  // group counts it and wait() returns only when every event is produced.
  std::function<void()> start_next;
  auto finish = [&](Event& event) {
    if (--event.unfinished == 0) start_next();
  };
  start_next = [&] {
    const int id = next++;
    if (id >= settings.events) return;
    Event& event = events[static_cast<std::size_t>(id)];
    event.id = id;
    event.waiting = std::make_shared<WaitingTask>(arena, group.defer([&] {
      time.account([&] { tagger.produce(event); });
      finish(event);
    }));
    group.run([&] { time.account([&] { tagger.acquire(event); }); });
    group.run([&] {
      time.account([&] { busy_for(settings.other_ms); });
      finish(event);
    });
  };

  const auto started = Clock::now();
  arena.execute([&] {
    for (int i = 0; i < settings.in_flight; ++i) start_next();
    group.wait();
  });
  const double wall = std::chrono::duration<double>(Clock::now() - started).count();

  const double capacity_us = wall * 1e6 * settings.threads;
  std::printf(
      "%s: %d events (%d failed) in %.2f s: %.1f events/s, %d in flight, %d framework "
      "threads\n",
      settings.blocking ? "blocking infer_chunked()" : "infer_chunked_async (ExternalWork)",
      tagger.produced() + tagger.failed(), tagger.failed(), wall, settings.events / wall,
      settings.in_flight, settings.threads);
  std::printf(
      "  framework threads: %.0f %% on CPU work, %.0f %% inside tasks off CPU "
      "(blocked, or preempted), %.0f %% free for other work\n",
      100.0 * static_cast<double>(time.cpu_us) / capacity_us,
      100.0 * static_cast<double>(time.task_us - time.cpu_us) / capacity_us,
      100.0 * (1 - static_cast<double>(time.task_us) / capacity_us));
  const auto stats = client.stats();
  std::printf(
      "  sum of Michel scores %.3f; client callbacks that threw: %llu; answered by the CPU "
      "fallback: %llu (its tasks run by the framework's threads: %ld)\n",
      tagger.total(), static_cast<unsigned long long>(stats.callback_exceptions),
      static_cast<unsigned long long>(stats.fallbacks), fallback_tasks.load());
  return tagger.failed() > 0 && settings.fail_every == 0 ? 1 : 0;
} catch (const std::exception& e) {
  std::cerr << "event_loop: " << e.what() << '\n';
  return 1;
}
