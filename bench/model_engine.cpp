// The model engine against ONNX Runtime's own run, in one process, one thread each, interleaved:
//   ort        ONNX Runtime's Run on the model, called directly (inputs made once): the floor;
//   ort_kernel the same, each call after one kernel entry (a getppid system call): what a
//              thread that must read a socket or be woken finds. Under page-table isolation
//              without PCID (the development VM: pti=on, no pcid flag) every kernel entry
//              empties the TLB of the process's pages;
//   ort_cold   the same, each call after 8 MiB of other memory traffic (caches as a server's
//              model thread finds them between requests);
//   ort_served the same after both: the state a server's thread runs the model in;
//   fallback   a client's fallback: a CpuExecutor over the repository, in-process;
//   server     sonic-server's compute time for the request (its statistics' compute_infer: the
//              model's run, as Triton reports it, read around each call), asked over gRPC on
//              loopback: the default server, whose model threads run the model;
//   server_inline  the same with inline_models: the model runs on the network thread that
//              read the request. The code timed is the same; only the thread differs.
// TorchScript models have no `ort` column; the report compares them with the ONNX file of the
// same network.
//
//   sonic-engine-bench REPOSITORY ROUNDS MODEL... (each MODEL as NAME:BATCH)
//
// Prints one JSON line per model, batch and path: the median over rounds of each round's
// median, in microseconds.
#include <sonic/executor.hpp>
#include <sonic/repository/repository.hpp>
#include <sonic/server.hpp>
#include <sonic/sonic.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ort_session.hpp"
#include "ort_tensors.hpp"
#include "timing.hpp"

namespace {

using sonic::bench::Clock;

constexpr int kParticles = 32;  // the size of every variable dimension

// Random inputs (normal floats; int64 codes 0..7) for `model` at `batch`.
sonic::InferRequest random_request(const sonic::Model& model, std::int64_t batch,
                                   std::mt19937& random) {
  sonic::InferRequest request(model.name);
  for (const auto& input : model.inputs) {
    sonic::Shape shape = input.shape;
    shape.front() = batch;
    std::size_t count = 1;
    for (auto& d : shape) {
      if (d < 0) d = kParticles;
      count *= static_cast<std::size_t>(d);
    }
    if (input.dtype == sonic::DataType::Int64) {
      std::uniform_int_distribution<std::int64_t> codes(0, 7);
      std::vector<std::int64_t> values(count);
      for (auto& v : values) v = codes(random);
      request.input(input.name, sonic::Tensor::from_vector(std::move(values), shape));
    } else {
      std::normal_distribution<float> normal;
      std::vector<float> values(count);
      for (auto& v : values) v = normal(random);
      request.input(input.name, sonic::Tensor::from_vector(std::move(values), shape));
    }
  }
  return request;
}

// Calls `call` for about `seconds` (at least 5 times, after `warm_up` calls): their median, us.
// A session's first runs plan and allocate its memory, ten times slower than the next.
double median_us(const std::function<void()>& call, int warm_up = 2, double seconds = 0.4) {
  for (int i = 0; i < warm_up; ++i) call();
  std::vector<double> us;
  const auto start = Clock::now();
  while (us.size() < 5 || sonic::bench::ms_between(start, Clock::now()) < seconds * 1000) {
    const auto t0 = Clock::now();
    call();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return sonic::bench::median(us);
}

// ONNX Runtime's Run, called directly on a session made as sonic makes one (one intra-op
// thread, every graph optimization), on values made once from the request's tensors.
struct DirectRun {
  const sonic::onnx::ort::Runtime* runtime;
  std::optional<sonic::onnx::ort::Session> session;
  std::vector<sonic::onnx::ort::ValueHandle> values;
  std::vector<std::vector<std::uint64_t>> scratch;
  std::vector<const char*> input_names, output_names;
  std::vector<const sonic::onnx::ort::OrtValue*> inputs;

  DirectRun(const std::string& file, const sonic::InferRequest& request) {
    runtime = sonic::onnx::ort::Runtime::get().value();
    session.emplace(
        sonic::onnx::ort::Session::open(*runtime, file, sonic::onnx::ort::SessionSettings{})
            .value());
    scratch.resize(request.inputs().size());
    for (std::size_t i = 0; i < request.inputs().size(); ++i) {
      const auto& input = request.inputs()[i];
      values.push_back(sonic::onnx::ort::to_value(*runtime, input.tensor, scratch[i]).value());
      input_names.push_back(input.name.c_str());
      inputs.push_back(values.back().get());
    }
    for (const auto& output : session->outputs()) output_names.push_back(output.name.c_str());
  }

  void operator()() { session->run(input_names, inputs, output_names).value(); }
};

// The same, with `evict` run before each timed call and not timed: a call that finds the caches
// as a server's model thread does, after a request was decoded and an answer encoded.
double median_us_after(const std::function<void()>& evict, const std::function<void()>& call,
                       double seconds = 0.4) {
  call();
  std::vector<double> us;
  const auto start = Clock::now();
  while (us.size() < 5 || sonic::bench::ms_between(start, Clock::now()) < seconds * 1000) {
    evict();
    const auto t0 = Clock::now();
    call();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return sonic::bench::median(us);
}

// The server's compute time for `request`, read from its statistics around each call (they
// hold sums; the read is in-process and outside the timed run): the median over calls, so that
// it compares with the other columns' medians. A mean would count each preemption and page
// fault of the whole run against the server alone.
double server_compute_median_us(sonic::Client& client, const sonic::CpuExecutor& served,
                                const sonic::InferRequest& request, double seconds = 0.4) {
  for (int i = 0; i < 2; ++i) client.infer(request);  // warm-up, as median_us
  auto last = served.statistics(request.model_name()).value().compute_infer;
  std::vector<double> us;
  const auto start = Clock::now();
  while (us.size() < 5 || sonic::bench::ms_between(start, Clock::now()) < seconds * 1000) {
    client.infer(request);
    const auto now = served.statistics(request.model_name()).value().compute_infer;
    us.push_back(static_cast<double>(now.ns - last.ns) / 1000.0 /
                 static_cast<double>(now.count - last.count));
    last = now;
  }
  return sonic::bench::median(us);
}

struct Job {
  std::string model;
  std::int64_t batch;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: sonic-engine-bench REPOSITORY ROUNDS NAME:BATCH...\n");
    return 2;
  }
  const std::string repository = argv[1];
  const int rounds = std::atoi(argv[2]);
  std::vector<Job> jobs;
  for (int i = 3; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto colon = arg.find(':');
    jobs.push_back({arg.substr(0, colon), std::atoll(arg.c_str() + colon + 1)});
  }
  auto source =
      std::make_shared<sonic::repository::Repository>(std::vector<std::string>{repository});
  auto fallback = std::make_shared<sonic::CpuExecutor>(1);
  fallback->set_source(source, false);
  auto served = std::make_shared<sonic::CpuExecutor>(1);
  served->set_source(source, false);
  auto served_inline = std::make_shared<sonic::CpuExecutor>(1);
  served_inline->set_source(source, false);
  std::mt19937 random(7);
  std::vector<sonic::InferRequest> requests;
  std::vector<std::unique_ptr<DirectRun>> direct;
  for (const auto& job : jobs) {
    for (auto* executor : {fallback.get(), served.get(), served_inline.get()}) {
      if (!executor->model(job.model)) executor->load_model(job.model).value();
    }
    auto model = fallback->model(job.model).value();
    requests.push_back(random_request(*model, job.batch, random));
    const std::string file = repository + "/" + job.model + "/1/model.onnx";
    direct.push_back(model->platform == "onnxruntime_onnx"
                         ? std::make_unique<DirectRun>(file, requests.back())
                         : nullptr);
  }
  sonic::ServerOptions options;
  options.port = 0;
  sonic::Server server(served, options);
  server.start();
  sonic::Client client("grpc://127.0.0.1:" + std::to_string(server.port()));
  options.inline_models = true;
  sonic::Server inline_server(served_inline, options);
  inline_server.start();
  sonic::Client inline_client("grpc://127.0.0.1:" + std::to_string(inline_server.port()));

  // Memory traffic larger than this machine's caches, for `ort_cold`.
  std::vector<std::uint8_t> clutter(8 << 20);
  const auto clutter_caches = [&] {
    for (std::size_t i = 0; i < clutter.size(); i += 64) clutter[i] += 1;
  };
  // The cheapest system call that is not answered in user space (glibc caches no getppid).
  const auto enter_kernel = [] { ::syscall(SYS_getppid); };
  // rows[job][path]: one value per round.
  std::vector<std::map<std::string, std::vector<double>>> rows(jobs.size());
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const auto& request = requests[j];
      if (direct[j]) {
        const auto run = [&] { (*direct[j])(); };
        rows[j]["ort"].push_back(median_us(run));
        rows[j]["ort_kernel"].push_back(median_us_after(enter_kernel, run));
        rows[j]["ort_cold"].push_back(median_us_after(clutter_caches, run));
        rows[j]["ort_served"].push_back(median_us_after(
            [&] {
              clutter_caches();
              enter_kernel();
            },
            run));
      }
      rows[j]["fallback"].push_back(median_us([&] { fallback->infer(request).value(); }));
      rows[j]["server"].push_back(server_compute_median_us(client, *served, request));
      rows[j]["server_inline"].push_back(
          server_compute_median_us(inline_client, *served_inline, request));
    }
  }
  server.stop();
  inline_server.stop();
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    for (const auto& [path, values] : rows[j]) {
      std::printf("{\"model\": \"%s\", \"batch\": %lld, \"path\": \"%s\", \"us\": %.1f}\n",
                  jobs[j].model.c_str(), static_cast<long long>(jobs[j].batch), path.c_str(),
                  sonic::bench::median(values));
    }
  }
  return 0;
}
