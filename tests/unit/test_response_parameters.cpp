// Response parameters a model attaches to its responses (sonic::set_response_parameters), as
// the executor carries them into each InferResult: one request's, a merged batch's (every
// request's), a compute_batch's (each its own), a decoupled model's (each response its own), a
// stateful model's; the names a model may not set, the bounds, and calls made where no
// response is being computed.
#include "sonic/model.hpp"

#include <doctest/doctest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "sonic/executor.hpp"

using sonic::DataType;
using sonic::InferRequest;
using sonic::InferResult;
using sonic::Model;
using sonic::NamedTensor;
using sonic::Parameters;
using sonic::Result;
using sonic::StatusCode;
using sonic::Tensor;

namespace {

// "echo": INT64 [-1, 1] -> OUTPUT = INPUT; `attach` says what it attaches to the request.
Model echo(std::function<Result<void>(const InferRequest&)> attach, int max_batch_size = 0) {
  Model m;
  m.name = "echo";
  m.max_batch_size = max_batch_size;
  const sonic::Shape shape = max_batch_size > 0 ? sonic::Shape{-1, 1} : sonic::Shape{1};
  m.inputs = {{"INPUT", DataType::Int64, shape}};
  m.outputs = {{"OUTPUT", DataType::Int64, shape}};
  m.compute = [attach](const InferRequest& r) -> Result<std::vector<NamedTensor>> {
    if (auto ok = attach(r); !ok) return ok.error();
    return std::vector<NamedTensor>{{"OUTPUT", r.find_input("INPUT")->tensor.to_owned(), {}}};
  };
  return m;
}

InferRequest one(std::int64_t value, sonic::Shape shape = {1}, std::string model = "echo") {
  return InferRequest(std::move(model))
      .input("INPUT", Tensor::from_vector(std::vector<std::int64_t>{value}, std::move(shape)));
}

std::int64_t first_of(const Tensor& tensor) { return tensor.as<std::int64_t>()[0]; }

}  // namespace

TEST_CASE("a model's response parameters reach its result, with their types") {
  auto executor = sonic::CpuExecutor::with_models(
      {echo([](const InferRequest& r) {
        if (auto ok = sonic::set_response_parameters(
                r, {{"flag", true}, {"count", std::int64_t{-5}}, {"name", std::string("x")}});
            !ok) {
          return ok;
        }
        // Calls add up, a name given again taking its new value.
        return sonic::set_response_parameters(r, {{"count", std::int64_t{7}}});
      })},
      1);
  auto result = executor->infer(one(3));
  REQUIRE_MESSAGE(result, result.error().message());
  CHECK(result->parameters() ==
        Parameters{{"flag", true}, {"count", std::int64_t{7}}, {"name", std::string("x")}});
}

TEST_CASE("a model cannot set the names the servers set themselves") {
  auto executor = sonic::CpuExecutor::with_models(
      {echo([](const InferRequest& r) {
        return sonic::set_response_parameters(r, {{"triton_final_response", false},
                                                  {"sonic_server_queue_ns", std::int64_t{1}},
                                                  {"kept", true}});
      })},
      1);
  auto result = executor->infer(one(3));
  REQUIRE_MESSAGE(result, result.error().message());
  CHECK(result->parameters() == Parameters{{"kept", true}});
}

TEST_CASE("a model attaches only within bounds, and UTF-8 only") {
  Result<void> too_many, too_large, not_utf8;
  auto executor = sonic::CpuExecutor::with_models(
      {echo([&](const InferRequest& r) {
        Parameters many;
        for (std::size_t i = 0; i <= sonic::kMaxResponseParameters; ++i) {
          many["p" + std::to_string(i)] = std::int64_t{1};
        }
        too_many = sonic::set_response_parameters(r, many);
        too_large = sonic::set_response_parameters(
            r, {{"big", std::string(sonic::kMaxResponseParameterBytes, 'x')}});
        not_utf8 = sonic::set_response_parameters(r, {{"bytes", std::string("\xff\xfe")}});
        return sonic::set_response_parameters(r, {{"small", true}});
      })},
      1);
  auto result = executor->infer(one(3));
  REQUIRE_MESSAGE(result, result.error().message());
  CHECK(too_many.code() == StatusCode::ResourceExhausted);
  CHECK(too_large.code() == StatusCode::ResourceExhausted);
  CHECK(not_utf8.code() == StatusCode::InvalidArgument);
  CHECK(result->parameters() == Parameters{{"small", true}});  // the refused left nothing
}

TEST_CASE("response parameters attach only on the model's thread, while it runs") {
  Result<void> elsewhere;
  auto executor = sonic::CpuExecutor::with_models(
      {echo([&](const InferRequest& r) {
        std::thread([&] { elsewhere = sonic::set_response_parameters(r, {{"a", true}}); }).join();
        InferRequest copy = r;  // another request than the one being computed
        return sonic::set_response_parameters(copy, {{"b", true}});
      })},
      1);
  auto result = executor->infer(one(3));
  CHECK(result.code() == StatusCode::FailedPrecondition);
  CHECK(elsewhere.code() == StatusCode::FailedPrecondition);
  auto outside = sonic::set_response_parameters(one(1), {{"c", true}});
  CHECK(outside.code() == StatusCode::FailedPrecondition);
}

TEST_CASE("a merged batch's parameters are each request's; compute_batch's each its own") {
  sonic::DynamicBatching batching;
  batching.preferred_batch_sizes = {3};
  batching.max_queue_delay = std::chrono::seconds(2);
  auto merged = echo(
      [](const InferRequest& r) {
        const auto rows = r.find_input("INPUT")->tensor.shape().front();
        return sonic::set_response_parameters(r, {{"rows", std::int64_t{rows}}});
      },
      8);
  merged.dynamic_batching = batching;
  auto separate = merged;
  separate.name = "separate";
  separate.compute_batch = [](const std::vector<const InferRequest*>& requests) {
    std::vector<Result<std::vector<NamedTensor>>> answers;
    for (const InferRequest* r : requests) {
      const Tensor& in = r->find_input("INPUT")->tensor;
      REQUIRE(sonic::set_response_parameters(*r, {{"value", first_of(in)}}));
      answers.emplace_back(std::vector<NamedTensor>{{"OUTPUT", in.to_owned(), {}}});
    }
    return answers;
  };
  auto executor = sonic::CpuExecutor::with_models({merged, separate}, 2);
  for (const char* model : {"echo", "separate"}) {
    std::vector<std::future<Result<InferResult>>> answers;
    for (std::int64_t v : {10, 20, 30}) {
      auto promise = std::make_shared<std::promise<Result<InferResult>>>();
      answers.push_back(promise->get_future());
      executor->infer_async(one(v, {1, 1}, model),
                            [promise](Result<InferResult> r) { promise->set_value(std::move(r)); });
    }
    for (std::size_t i = 0; i < answers.size(); ++i) {
      auto result = answers[i].get();
      REQUIRE_MESSAGE(result, result.error().message());
      const Parameters expected = std::string(model) == "echo"
                                      ? Parameters{{"rows", std::int64_t{3}}}
                                      : Parameters{{"value", first_of(result->output("OUTPUT"))}};
      CHECK(result->parameters() == expected);
    }
  }
}

TEST_CASE("each response of a decoupled model carries its own parameters") {
  Model m = echo([](const InferRequest&) { return Result<void>(); });
  m.compute = nullptr;
  m.inputs = {{"INPUT", DataType::Int64, {-1}}};
  m.decoupled = [](const InferRequest& r, const sonic::ResponseSink& respond) -> Result<void> {
    std::int64_t i = 0;
    for (std::int64_t v : r.find_input("INPUT")->tensor.as<std::int64_t>()) {
      if (i != 1) {  // the second response carries none: nothing is left from the first
        if (auto ok = sonic::set_response_parameters(r, {{"index", i}}); !ok) return ok;
      }
      respond({{"OUTPUT", Tensor::from_vector(std::vector<std::int64_t>{v}, {1}), {}}});
      ++i;
    }
    return {};
  };
  auto executor = sonic::CpuExecutor::with_models({m}, 1);
  std::vector<Parameters> got;
  auto done = executor->infer_responses(
      InferRequest("echo").input("INPUT",
                                 Tensor::from_vector(std::vector<std::int64_t>{4, 5, 6}, {3})),
      [&](InferResult r) { got.push_back(r.parameters()); });
  REQUIRE_MESSAGE(done, done.error().message());
  CHECK(got ==
        std::vector<Parameters>{{{"index", std::int64_t{0}}}, {}, {{"index", std::int64_t{2}}}});
}

TEST_CASE("a stateful model's parameters reach each request's result") {
  Model m = echo([](const InferRequest& r) {
    const bool start = r.find_input("START")->tensor.as<std::int32_t>()[0] != 0;
    return sonic::set_response_parameters(r, {{"start", start}});
  });
  sonic::SequenceBatching sequences;
  sequences.controls = {{sonic::SequenceControl::Kind::Start, "START", DataType::Int32, 0, 1}};
  m.sequence_batching = sequences;
  auto executor = sonic::CpuExecutor::with_models({m}, 1);
  auto first = executor->infer(one(1).sequence(std::uint64_t{9}, true));
  auto second = executor->infer(one(2).sequence(std::uint64_t{9}, false, true));
  REQUIRE_MESSAGE(first, first.error().message());
  REQUIRE_MESSAGE(second, second.error().message());
  CHECK(first->parameters() == Parameters{{"start", true}});
  CHECK(second->parameters() == Parameters{{"start", false}});
}
