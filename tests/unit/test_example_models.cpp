// Triton's example models as sonic-server hosts them: the values Triton's example clients
// expect; simple_sequence's sequences: begun by START, freed by END,
// dropped when idle, bounded in number; repeat_int32's responses, and its bounds.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "sonic/builtin_models.hpp"

namespace {

using namespace std::chrono_literals;

sonic::InferRequest step(std::int32_t value, sonic::Parameter id, bool start = false,
                         bool end = false) {
  sonic::InferRequest request("simple_sequence");
  request.input("INPUT", sonic::Tensor::from_vector(std::vector<std::int32_t>{value}, {1, 1}));
  if (const auto* number = std::get_if<std::int64_t>(&id)) {
    request.sequence(static_cast<std::uint64_t>(*number), start, end);
  } else {
    request.sequence(std::get<std::string>(id), start, end);
  }
  return request;
}

std::int32_t output_of(sonic::Result<sonic::InferResult> result) {
  return result.value().output("OUTPUT").as<std::int32_t>()[0];
}

}  // namespace

TEST_CASE("simple_string: decimal strings in, their sum and difference out") {
  auto executor = sonic::CpuExecutor::with_models(sonic::models::builtin(), 1);
  std::vector<std::string> a, b;
  for (int i = 0; i < 16; ++i) {
    a.push_back(std::to_string(i));
    b.push_back(std::to_string(1 - i * 3));
  }
  auto result = executor
                    ->infer(sonic::InferRequest("simple_string")
                                .input("INPUT0", sonic::Tensor::from_strings(a, {1, 16}))
                                .input("INPUT1", sonic::Tensor::from_strings(b, {1, 16})))
                    .value();
  auto sum = result.output("OUTPUT0").to_strings();
  auto difference = result.output("OUTPUT1").to_strings();
  REQUIRE(sum.size() == 16);
  for (int i = 0; i < 16; ++i) {
    CHECK(sum[i] == std::to_string(i + 1 - i * 3));
    CHECK(difference[i] == std::to_string(i - (1 - i * 3)));
  }
  b[3] = "three";
  auto bad = executor->infer(sonic::InferRequest("simple_string")
                                 .input("INPUT0", sonic::Tensor::from_strings(a, {1, 16}))
                                 .input("INPUT1", sonic::Tensor::from_strings(b, {1, 16})));
  CHECK(bad.code() == sonic::StatusCode::InvalidArgument);
}

TEST_CASE("simple_identity: strings of any length come back as they went") {
  auto executor = sonic::CpuExecutor::with_models(sonic::models::builtin(), 1);
  std::vector<std::string> strings{"", "a", std::string(1000, 'x'), std::string("\0\1\2", 3)};
  auto result = executor
                    ->infer(sonic::InferRequest("simple_identity")
                                .input("INPUT0", sonic::Tensor::from_strings(strings, {2, 2})))
                    .value();
  CHECK(result.output("OUTPUT0").to_strings() == strings);
  CHECK(result.output("OUTPUT0").shape() == sonic::Shape{2, 2});
}

TEST_CASE("simple_sequence: answers as Triton's published model, (INPUT + START) * READY") {
  auto executor = sonic::CpuExecutor::with_models({sonic::models::simple_sequence()}, 2);
  // Triton's example client (simple_grpc_sequence_sync_infer_client): sequences started with
  // 0, 100 and 20, then given the values (or their negatives), interleaved, with numeric and
  // string ids; it expects "1 : 101 : 21", then each request's own input.
  const std::vector<std::int32_t> values{11, 7, 5, 3, 2, 0, 1};
  CHECK(output_of(executor->infer(step(0, std::int64_t{1000}, true))) == 1);
  CHECK(output_of(executor->infer(step(100, std::int64_t{1001}, true))) == 101);
  CHECK(output_of(executor->infer(step(20, std::string("seq-c"), true))) == 21);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const bool last = i + 1 == values.size();
    CHECK(output_of(executor->infer(step(values[i], std::int64_t{1000}, false, last))) ==
          values[i]);
    CHECK(output_of(executor->infer(step(-values[i], std::int64_t{1001}, false, last))) ==
          -values[i]);
    CHECK(output_of(executor->infer(step(-values[i], std::string("seq-c"), false, last))) ==
          -values[i]);
  }
  // Ended: a further request without START is refused, as Triton's sequence batcher does.
  CHECK(executor->infer(step(1, std::int64_t{1000})).code() == sonic::StatusCode::InvalidArgument);
  // START restarts a sequence in progress.
  CHECK(output_of(executor->infer(step(5, std::int64_t{7}, true))) == 6);
  CHECK(output_of(executor->infer(step(5, std::int64_t{7}, true))) == 6);
  // The metadata is the published config's: max_batch_size 8, dims [1].
  auto metadata = executor->metadata("simple_sequence").value();
  CHECK(metadata.inputs.at(0).shape == sonic::Shape{-1, 1});
  // No id at all.
  sonic::InferRequest anonymous("simple_sequence");
  anonymous.input("INPUT", sonic::Tensor::from_vector(std::vector<std::int32_t>{1}, {1, 1}));
  CHECK(executor->infer(anonymous).code() == sonic::StatusCode::InvalidArgument);
}

TEST_CASE("simple_sequence: idle sequences are dropped and their number is bounded") {
  sonic::SequenceLimits limits;
  limits.idle = 100ms;
  limits.max_sequences = 3;
  auto executor = sonic::CpuExecutor::with_models({sonic::models::simple_sequence(limits)}, 1);
  for (std::int64_t id = 1; id <= 3; ++id) {
    CHECK(output_of(executor->infer(step(1, id, true))) == 2);
  }
  CHECK(executor->infer(step(1, std::int64_t{4}, true)).code() ==
        sonic::StatusCode::ResourceExhausted);
  std::this_thread::sleep_for(250ms);  // all three idle past the limit: dropped
  CHECK(executor->infer(step(1, std::int64_t{2})).code() == sonic::StatusCode::InvalidArgument);
  CHECK(output_of(executor->infer(step(1, std::int64_t{4}, true))) == 2);
  // Each sequence's key is bounded too: a long string id would make 3 sequences hold megabytes.
  CHECK(executor->infer(step(1, std::string(limits.max_id_bytes + 1, 'x'), true)).code() ==
        sonic::StatusCode::InvalidArgument);
  CHECK(output_of(executor->infer(step(1, std::string(limits.max_id_bytes, 'x'), true))) == 2);
}

namespace {

sonic::InferRequest repeat(std::vector<std::int32_t> values, std::vector<std::uint32_t> delays) {
  const auto n = static_cast<std::int64_t>(values.size());
  return std::move(
      sonic::InferRequest("repeat_int32")
          .input("IN", sonic::Tensor::from_vector(std::move(values), {n}))
          .input("DELAY", sonic::Tensor::from_vector(std::move(delays), {n}))
          .input("WAIT", sonic::Tensor::from_vector(std::vector<std::uint32_t>{0}, {1})));
}

}  // namespace

TEST_CASE("repeat_int32: a response per element of IN, in order, each after its delay") {
  auto executor = sonic::CpuExecutor::with_models({sonic::models::repeat_int32()}, 1);
  std::vector<std::pair<std::int32_t, std::uint32_t>> got;
  std::vector<std::chrono::steady_clock::time_point> when;
  const auto start = std::chrono::steady_clock::now();
  auto outcome =
      executor->infer_responses(repeat({5, -6, 7}, {0, 30, 0}), [&](sonic::InferResult r) {
        got.emplace_back(r.output("OUT").as<std::int32_t>()[0],
                         r.output("IDX").as<std::uint32_t>()[0]);
        when.push_back(std::chrono::steady_clock::now());
      });
  REQUIRE(outcome.ok());
  CHECK(got == std::vector<std::pair<std::int32_t, std::uint32_t>>{{5, 0}, {-6, 1}, {7, 2}});
  CHECK(when[1] - start >= 30ms);

  // IN of shape [0]: no response at all.
  got.clear();
  REQUIRE(executor->infer_responses(repeat({}, {}), [&](sonic::InferResult) { got.push_back({}); })
              .ok());
  CHECK(got.empty());

  // A decoupled model has no single answer: infer() refuses it, with Triton's words.
  auto unary = executor->infer(repeat({1}, {0}));
  CHECK(unary.code() == sonic::StatusCode::Unimplemented);
  CHECK(unary.error().message().find("decoupled") != std::string::npos);
}

TEST_CASE("repeat_int32: requests that would hold a model thread or the network are refused") {
  sonic::models::RepeatLimits limits;
  limits.max_responses = 4;
  limits.max_total_delay = 50ms;
  auto executor = sonic::CpuExecutor::with_models({sonic::models::repeat_int32(limits)}, 1);
  auto none = [](sonic::InferResult) { FAIL("no response to a refused request"); };
  CHECK(executor->infer_responses(repeat({1, 2, 3, 4, 5}, {0, 0, 0, 0, 0}), none).code() ==
        sonic::StatusCode::InvalidArgument);
  CHECK(executor->infer_responses(repeat({1, 2}, {30, 30}), none).code() ==
        sonic::StatusCode::InvalidArgument);
  // IN and DELAY of different lengths, as Triton's backend refuses them.
  auto mismatched =
      sonic::InferRequest("repeat_int32")
          .input("IN", sonic::Tensor::from_vector(std::vector<std::int32_t>{1}, {1}))
          .input("DELAY", sonic::Tensor::from_vector(std::vector<std::uint32_t>{0, 0}, {2}))
          .input("WAIT", sonic::Tensor::from_vector(std::vector<std::uint32_t>{0}, {1}));
  CHECK(executor->infer_responses(mismatched, none).code() == sonic::StatusCode::InvalidArgument);
}
