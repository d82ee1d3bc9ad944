#include "sonic/executor.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "sonic/builtin_models.hpp"

namespace {
sonic::InferRequest simple_request(const std::vector<std::int32_t>& a,
                                   const std::vector<std::int32_t>& b) {
  return sonic::InferRequest("simple")
      .input("INPUT0", sonic::Tensor::view(a, {1, 16}))
      .input("INPUT1", sonic::Tensor::view(b, {1, 16}));
}
}  // namespace

TEST_CASE("the simple model adds and subtracts") {
  sonic::CpuExecutor executor(2);
  executor.add_model(sonic::models::simple());
  std::vector<std::int32_t> a(16), b(16);
  for (int i = 0; i < 16; ++i) {
    a[i] = i;
    b[i] = 100 - i;
  }
  auto result = executor.infer(simple_request(a, b)).value();
  auto sum = result.output("OUTPUT0").as<std::int32_t>();
  auto difference = result.output("OUTPUT1").as<std::int32_t>();
  for (int i = 0; i < 16; ++i) {
    CHECK(sum[i] == 100);
    CHECK(difference[i] == 2 * i - 100);
  }
  CHECK(result.executed_on() == sonic::ExecutedOn::Remote);  // the executor does not claim a place
}

TEST_CASE("requested outputs filter the result") {
  auto executor = sonic::CpuExecutor::with_models(sonic::models::builtin(), 1);
  std::vector<std::int32_t> a(16, 3), b(16, 1);
  auto result = executor->infer(simple_request(a, b).output("OUTPUT1")).value();
  REQUIRE(result.outputs().size() == 1);
  CHECK(result.outputs()[0].name == "OUTPUT1");
  CHECK(result.output("OUTPUT1").as<std::int32_t>()[0] == 2);
}

TEST_CASE("unknown models, versions and bad inputs are errors, not crashes") {
  auto executor = sonic::CpuExecutor::with_models(sonic::models::builtin(), 1);
  std::vector<std::int32_t> a(16), b(16);
  auto unknown = executor->infer(sonic::InferRequest("nope"));
  CHECK(unknown.code() == sonic::StatusCode::NotFound);
  // Triton's words, then what the executor has instead.
  CHECK(unknown.error().message().rfind("Request for unknown model: 'nope' is not found", 0) == 0);
  CHECK(unknown.error().message().find("simple") != std::string::npos);
  CHECK(executor->infer(sonic::InferRequest("simple", "7")).code() == sonic::StatusCode::NotFound);
  auto missing = executor->infer(
      sonic::InferRequest("simple").input("INPUT0", sonic::Tensor::view(a, {1, 16})));
  CHECK(missing.code() == sonic::StatusCode::InvalidArgument);
  CHECK(missing.error().message().find("INPUT1") != std::string::npos);
  CHECK_THROWS_AS(executor->add_model(sonic::models::simple()), sonic::Error);
  sonic::Model no_function;
  no_function.name = "x";
  CHECK_THROWS_AS(executor->add_model(no_function), sonic::Error);
}

TEST_CASE("a throwing model becomes an INTERNAL error") {
  sonic::CpuExecutor executor(1);
  sonic::Model m = sonic::models::identity("throws", sonic::DataType::Fp32);
  m.compute = [](const sonic::InferRequest&) -> sonic::Result<std::vector<sonic::NamedTensor>> {
    throw std::runtime_error("model exploded");
  };
  executor.add_model(m);
  std::vector<float> x(4);
  auto r =
      executor.infer(sonic::InferRequest("throws").input("INPUT0", sonic::Tensor::view(x, {2, 2})));
  CHECK(r.code() == sonic::StatusCode::Internal);
  CHECK(r.error().message().find("model exploded") != std::string::npos);
  CHECK(executor.statistics("throws")->fail.count == 1);
}

TEST_CASE("statistics count requests and their durations") {
  auto executor = sonic::CpuExecutor::with_models(sonic::models::builtin(), 1);
  std::vector<std::int32_t> a(16), b(16);
  for (int i = 0; i < 5; ++i) REQUIRE(executor->infer(simple_request(a, b)).ok());
  auto stats = executor->statistics("simple").value();
  CHECK(stats.inference_count == 5);
  CHECK(stats.execution_count == 5);
  CHECK(stats.success.count == 5);
  CHECK(stats.success.ns > 0);
  CHECK(stats.compute_infer.count == 5);
  CHECK(stats.last_inference_ms > 0);
  CHECK(executor->all_statistics().size() == sonic::models::builtin().size());
}

TEST_CASE("infer_async completes every request exactly once from many threads") {
  auto executor = sonic::CpuExecutor::with_models(sonic::models::builtin(), 2);
  constexpr int kThreads = 4, kPerThread = 250;
  std::atomic<int> completed{0}, wrong{0};
  std::vector<std::thread> threads;
  std::vector<std::int32_t> b(16, 1);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::vector<std::int32_t> a(16, t * 1000 + i);
        auto request = sonic::InferRequest("simple")
                           .input("INPUT0", sonic::Tensor::from_vector(std::move(a), {1, 16}))
                           .input("INPUT1", sonic::Tensor::view(b, {1, 16}));
        executor->infer_async(std::move(request), [&, expected = t * 1000 + i + 1](
                                                      sonic::Result<sonic::InferResult> r) {
          if (!r || r->output("OUTPUT0").as<std::int32_t>()[0] != expected) ++wrong;
          ++completed;
        });
      }
    });
  }
  for (auto& t : threads) t.join();
  executor.reset();  // drains the pool
  CHECK(completed == kThreads * kPerThread);
  CHECK(wrong == 0);
}
