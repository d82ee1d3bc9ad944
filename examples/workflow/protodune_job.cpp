// A ProtoDUNE-like reconstruction job in miniature, with synthetic events: per event a CPU
// stage (hit finding, say: --cpu-ms of work that also makes the event's 48x48 wire-time
// patches) and a CNN stage (the EmTrkMichelId-shaped model over every patch). The CNN runs
//   --mode local     in the job, on its own CPU (the model file loaded directly), or
//   --mode service   on an inference server, the event's patches sent in chunks
//                    (Client::infer_chunked_async) while the job goes on with the next event's
//                    CPU stage; with --fallback the same model file runs in the job when the
//                    server goes away.
// It prints one RESULT line: events/s and where an event's time went (preprocess, send, wait,
// infer). examples/workflow/run.sh runs it every way and studies how many jobs one server takes.
//
//   protodune_job --mode service --url grpc://127.0.0.1:8001 --repository DIR [--events 30]
//                 [--patches 1000] [--cpu-ms 30] [--cpu-stage spin|sleep] [--fallback]
//                 [--progress FILE]
//   protodune_job --plot SCALING.csv OUT.svg      (the scaling study's plot, from run.sh)
#include <sonic/repository/repository.hpp>
#include <sonic/sonic.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <future>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "line_plot.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Settings {
  std::string mode;
  std::string url = "grpc://127.0.0.1:8001";
  std::string repository;
  std::string model = "emtrk_cnn_onnx";
  int events = 30;
  int patches = 1000;
  double cpu_ms = 30;
  // The CPU stage computes (spin), or stands for a job on another node, whose CPU work costs
  // this machine nothing (sleep): for studying how many jobs one server takes on a machine
  // with few cores.
  bool cpu_stage_sleeps = false;
  bool fallback = false;
  std::string progress;  // a file that gets the number of events done after each
};

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// What the job's events took, summed.
struct Split {
  double preprocess = 0, send = 0, wait = 0, infer = 0;
  int remote = 0, local = 0;
};

// The CPU stage: work for cpu_ms that fills the event's patches (a stand-in for hit finding
// and patch making).
std::vector<float> cpu_stage(int event, const Settings& s) {
  std::mt19937 random(static_cast<unsigned>(event) + 1);
  std::uniform_real_distribution<float> adc(0, 1);
  std::vector<float> patches(static_cast<std::size_t>(s.patches) * 48 * 48);
  const auto until = Clock::now() + std::chrono::microseconds(static_cast<long>(s.cpu_ms * 1000));
  if (s.cpu_stage_sleeps) {
    for (auto& value : patches) value = adc(random);
    std::this_thread::sleep_until(until);
    return patches;
  }
  std::size_t i = 0;
  do {
    for (int k = 0; k < 512; ++k, ++i) patches[i % patches.size()] = adc(random);
  } while (Clock::now() < until || i < patches.size());
  return patches;
}

sonic::InferRequest cnn_request(const Settings& s, const std::vector<float>& patches) {
  return sonic::InferRequest(s.model).input(
      "patch", sonic::Tensor::view(patches, {static_cast<std::int64_t>(s.patches), 1, 48, 48}));
}

void report_progress(const Settings& s, int done) {
  if (s.progress.empty()) return;
  std::ofstream(s.progress) << done << '\n';
}

// The CNN in the job itself: the model file loaded once, run over the patches as many at a
// time as the model takes.
Split run_local(const Settings& s) {
  auto model = sonic::repository::Repository({s.repository}).load(s.model);
  if (!model) throw model.error();
  Split split;
  for (int event = 0; event < s.events; ++event) {
    auto started = Clock::now();
    const auto patches = cpu_stage(event, s);
    split.preprocess += ms(Clock::now() - started);
    started = Clock::now();
    const int step = model->max_batch_size > 0 ? model->max_batch_size : s.patches;
    for (int first = 0; first < s.patches; first += step) {
      const int count = std::min(step, s.patches - first);
      auto chunk = sonic::InferRequest(s.model).input(
          "patch",
          sonic::Tensor::view(patches.data() + static_cast<std::size_t>(first) * 48 * 48,
                              static_cast<std::size_t>(count) * 48 * 48, {count, 1, 48, 48}));
      model->compute(chunk).value();
    }
    split.infer += ms(Clock::now() - started);
    ++split.local;
    report_progress(s, event + 1);
  }
  return split;
}

// The CNN as a service: event i's patches travel and run while the job does event i+1's CPU
// stage; the job waits only for what is not back by then.
Split run_service(const Settings& s) {
  struct InFlight {
    std::vector<float> patches;  // borrowed by the request until its answer
    std::future<sonic::Result<sonic::InferResult>> answer;
  };
  // Declared before the client, so that the client goes first when an error ends the job:
  // destroying it cancels the requests in flight, which read these patches until then.
  std::deque<InFlight> flights;
  sonic::ClientOptions options;
  options.default_timeout = std::chrono::seconds(60);
  if (s.fallback) options.fallback = sonic::repository::executor_from_repository({s.repository});
  sonic::Client client(s.url, options);
  Split split;
  auto collect_oldest = [&](int event) {
    const auto started = Clock::now();
    auto result = flights.front().answer.get();
    split.wait += ms(Clock::now() - started);
    const sonic::InferResult& answer = result.value();  // throws the request's error
    split.infer += ms(answer.timing().server_compute);
    (answer.executed_on() == sonic::ExecutedOn::Local ? split.local : split.remote) += 1;
    flights.pop_front();
    report_progress(s, event + 1);
  };
  for (int event = 0; event < s.events; ++event) {
    auto started = Clock::now();
    InFlight& flight = flights.emplace_back(InFlight{cpu_stage(event, s), {}});
    split.preprocess += ms(Clock::now() - started);
    auto promise = std::make_shared<std::promise<sonic::Result<sonic::InferResult>>>();
    flight.answer = promise->get_future();
    started = Clock::now();
    client.infer_chunked_async(
        cnn_request(s, flight.patches), sonic::ChunkOptions{},
        [promise](sonic::Result<sonic::InferResult> r) { promise->set_value(std::move(r)); });
    split.send += ms(Clock::now() - started);
    if (flights.size() > 1) collect_oldest(event - 1);
  }
  while (!flights.empty()) collect_oldest(s.events - 1);
  return split;
}

// The scaling study's plot: lines "jobs,events_per_s" after a header.
int plot(const std::string& csv, const std::string& svg) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  sonic::bench::PlotSeries total{"all jobs together", "#2471a3", {}, {}};
  sonic::bench::PlotSeries each{"per job", "#c0392b", {}, {}};
  while (std::getline(in, line)) {
    double jobs = 0, rate = 0;
    char comma = 0;
    std::istringstream fields(line);
    if (!(fields >> jobs >> comma >> rate)) continue;
    total.points.emplace_back(jobs, rate);
    each.points.emplace_back(jobs, rate / jobs);
  }
  if (!sonic::bench::write_line_plot(svg, "ProtoDUNE-like jobs against one sonic-server",
                                     "client jobs", "events/s", {total, each})) {
    std::cerr << "protodune_job: cannot write " << svg << '\n';
    return 1;
  }
  return 0;
}

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--fallback") {
      s.fallback = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "protodune_job: " << flag << " needs a value (see the top of "
                << "examples/workflow/protodune_job.cpp)\n";
      std::exit(2);
    }
    const std::string value = argv[++i];
    if (flag == "--mode")
      s.mode = value;
    else if (flag == "--url")
      s.url = value;
    else if (flag == "--repository")
      s.repository = value;
    else if (flag == "--model")
      s.model = value;
    else if (flag == "--events")
      s.events = std::stoi(value);
    else if (flag == "--patches")
      s.patches = std::stoi(value);
    else if (flag == "--cpu-ms")
      s.cpu_ms = std::stod(value);
    else if (flag == "--cpu-stage")
      s.cpu_stage_sleeps = value == "sleep";
    else if (flag == "--progress")
      s.progress = value;
    else {
      std::cerr << "protodune_job: unknown option " << flag << '\n';
      std::exit(2);
    }
  }
  const bool needs_repository = s.mode == "local" || s.fallback;
  if ((s.mode != "local" && s.mode != "service") || (needs_repository && s.repository.empty())) {
    std::cerr << "protodune_job: --mode local or --mode service (--repository DIR for local "
                 "and --fallback)\n";
    std::exit(2);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc == 4 && std::string(argv[1]) == "--plot") return plot(argv[2], argv[3]);
  const Settings s = parse(argc, argv);
  const auto started = Clock::now();
  const Split split = s.mode == "local" ? run_local(s) : run_service(s);
  const double seconds = ms(Clock::now() - started) / 1000;
  const double n = s.events;
  std::printf(
      "RESULT mode=%s events=%d seconds=%.2f events_per_s=%.2f preprocess_ms=%.1f "
      "send_ms=%.1f wait_ms=%.1f infer_ms=%.1f remote=%d local=%d\n",
      s.mode.c_str(), s.events, seconds, n / seconds, split.preprocess / n, split.send / n,
      split.wait / n, split.infer / n, split.remote, split.local);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "protodune_job: " << e.what() << '\n';
  return 1;
}
