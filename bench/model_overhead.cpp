// A real model's cost on each path, at batch 1, in one process: the backend's own function
// (the floor: what a job would pay running the model itself), the CPU executor (validation and
// statistics around it), and a client whose server is gone running it through its fallback
// (the path a job takes when its servers are lost). bench/models.sh adds the server's path.
//
//   sonic-model-overhead REPOSITORY MODEL [CALLS=2000]
//
// Prints one JSON line per path: {"path": ..., "p50_us": ..., "mean_us": ...}.
#include <sonic/executor.hpp>
#include <sonic/repository/repository.hpp>
#include <sonic/sonic.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "timing.hpp"

namespace {

using sonic::bench::Clock;

// Inputs of ones at batch 1 (-1 dimensions as 1), owned by the request.
sonic::InferRequest ones(const sonic::Model& model) {
  sonic::InferRequest request(model.name);
  for (const auto& input : model.inputs) {
    sonic::Shape shape = input.shape;
    std::size_t count = 1;
    for (auto& d : shape) {
      if (d < 0) d = 1;
      count *= static_cast<std::size_t>(d);
    }
    request.input(input.name, sonic::Tensor::from_vector(std::vector<float>(count, 1.0f), shape));
  }
  return request;
}

void measure(const char* path, int calls, const std::function<void()>& call) {
  for (int i = 0; i < calls / 10 + 1; ++i) call();  // warm-up: caches, allocator, thread pools
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(calls));
  for (int i = 0; i < calls; ++i) {
    auto t0 = Clock::now();
    call();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  double sum = 0;
  for (double v : us) sum += v;
  std::printf("{\"path\": \"%s\", \"p50_us\": %.2f, \"mean_us\": %.2f}\n", path,
              sonic::bench::median(us), sum / static_cast<double>(us.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: sonic-model-overhead REPOSITORY MODEL [CALLS=2000]\n");
    return 2;
  }
  const std::string repository = argv[1], name = argv[2];
  const int calls = argc > 3 ? std::atoi(argv[3]) : 2000;
  auto model = sonic::repository::Repository({repository}).load(name);
  if (!model) {
    std::fprintf(stderr, "sonic-model-overhead: %s\n", model.error().message().c_str());
    return 1;
  }
  const sonic::InferRequest request = ones(*model);
  measure("backend", calls, [&] { model->compute(request).value(); });

  auto executor = sonic::CpuExecutor::with_models({*model}, 1);
  measure("executor", calls, [&] { executor->infer(request).value(); });

  // A server that is gone (port 1 on loopback refuses at once): the breaker ejects it after
  // the first failures, and every request then runs on the fallback.
  sonic::ClientOptions options;
  options.fallback = sonic::repository::executor_from_repository({repository}, 1);
  sonic::Client client("grpc://127.0.0.1:1", options);
  measure("client_fallback", calls, [&] { client.infer(request); });
  return 0;
}
