// sonic — Triton's example models (those its example clients call), as sonic-server hosts them
// (part of the sonic::server library): simple_string, simple_identity, simple_sequence and
// repeat_int32.
// Their behaviour is that of the models in Triton's docs/examples/model_repository and its
// example clients' expectations; shapes are those the clients send with batch size 1.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "sonic/executor.hpp"

namespace sonic::models {

namespace detail {

// int32 arithmetic that wraps as the hardware does (Triton's simple models), instead of the
// undefined behaviour of signed overflow.
inline std::int32_t wrapping_sum(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
}
inline std::int32_t wrapping_difference(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) - static_cast<std::uint32_t>(b));
}

inline Result<std::int32_t> parse_decimal(std::string_view text, const char* input) {
  std::int32_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Error(StatusCode::InvalidArgument, std::string(input) + " holds '" +
                                                  std::string(text.substr(0, 32)) +
                                                  "', not a decimal 32-bit integer");
  }
  return value;
}

}  // namespace detail

/// Triton's simple_string as its example repository publishes it (max_batch_size 8, BYTES
/// INPUT0, INPUT1 of dims [16]), each element a decimal integer as text → OUTPUT0 = INPUT0 +
/// INPUT1, OUTPUT1 = INPUT0 - INPUT1, as text, of the inputs' shape [batch, 16].
inline Model simple_string() {
  Model m;
  m.name = "simple_string";
  m.max_batch_size = 8;
  m.inputs = {{"INPUT0", DataType::Bytes, {-1, 16}}, {"INPUT1", DataType::Bytes, {-1, 16}}};
  m.outputs = {{"OUTPUT0", DataType::Bytes, {-1, 16}}, {"OUTPUT1", DataType::Bytes, {-1, 16}}};
  m.compute = [](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    const Tensor& first = request.find_input("INPUT0")->tensor;
    auto a = first.string_views();
    auto b = request.find_input("INPUT1")->tensor.string_views();
    std::vector<std::string> sum(a.size()), difference(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      auto x = detail::parse_decimal(a[i], "INPUT0");
      if (!x) return x.error();
      auto y = detail::parse_decimal(b[i], "INPUT1");
      if (!y) return y.error();
      sum[i] = std::to_string(detail::wrapping_sum(*x, *y));
      difference[i] = std::to_string(detail::wrapping_difference(*x, *y));
    }
    return std::vector<NamedTensor>{
        {"OUTPUT0", Tensor::from_strings(sum, first.shape()), {}},
        {"OUTPUT1", Tensor::from_strings(difference, first.shape()), {}}};
  };
  return m;
}

/// Triton's simple_identity as published (a Python model: max_batch_size 8, BYTES INPUT0 of
/// dims [-1]) → OUTPUT0, the same strings.
inline Model simple_identity() {
  Model m;
  m.name = "simple_identity";
  m.max_batch_size = 8;
  m.inputs = {{"INPUT0", DataType::Bytes, {-1, -1}}};
  m.outputs = {{"OUTPUT0", DataType::Bytes, {-1, -1}}};
  m.compute = [](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    return std::vector<NamedTensor>{
        {"OUTPUT0", request.find_input("INPUT0")->tensor.to_owned(), {}}};
  };
  return m;
}

/// Triton's simple_sequence as its example repository publishes it (server
/// docs/examples/model_repository/simple_sequence: max_batch_size 8, INT32 INPUT and OUTPUT of
/// dims [1], control inputs START and READY as int32 0/1), and as its model computes it (server
/// qa/common/gen_qa_sequence_models.py, the ONNX sequence model): OUTPUT = (INPUT + START) *
/// READY. So a sequence's first request answers its input plus one and the others their input,
/// which is what Triton's sequence examples check ("1 : 101 : 21", then the inputs). The
/// executor's sequence batcher does the bookkeeping, as Triton's does: the request's
/// `sequence_id` (int64, or a string of at most `limits.max_id_bytes`) names the sequence,
/// START begins it, END frees it. A request of a sequence that has not started (or was dropped
/// after `limits.idle`) is INVALID_ARGUMENT, with Triton's words; so is one without an id; a
/// START beyond `limits.max_sequences` is RESOURCE_EXHAUSTED.
inline Model simple_sequence(SequenceLimits limits = {}) {
  Model m;
  m.name = "simple_sequence";
  m.max_batch_size = 8;
  m.inputs = {{"INPUT", DataType::Int32, {-1, 1}}};
  m.outputs = {{"OUTPUT", DataType::Int32, {-1, 1}}};
  SequenceBatching sequences;
  sequences.controls = {{SequenceControl::Kind::Start, "START", DataType::Int32, 0, 1},
                        {SequenceControl::Kind::Ready, "READY", DataType::Int32, 0, 1}};
  sequences.limits = limits;
  m.sequence_batching = std::move(sequences);
  m.compute = [](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    auto input = request.find_input("INPUT")->tensor.as<std::int32_t>();
    auto start = request.find_input("START")->tensor.as<std::int32_t>();
    auto ready = request.find_input("READY")->tensor.as<std::int32_t>();
    std::vector<std::int32_t> output(input.size());
    for (std::size_t i = 0; i < output.size(); ++i) {
      // int32 arithmetic that wraps, as the ONNX model's Add and Mul do.
      const auto sum = detail::wrapping_sum(input[i], start[i]);
      output[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(sum) *
                                            static_cast<std::uint32_t>(ready[i]));
    }
    const auto rows = static_cast<std::int64_t>(output.size());
    return std::vector<NamedTensor>{
        {"OUTPUT", Tensor::from_vector(std::move(output), {rows, 1}), {}}};
  };
  return m;
}

/// What repeat_int32 takes from one request: each response is a message to write and each
/// delay holds a model thread, so a request may not ask for more of either.
struct RepeatLimits {
  std::size_t max_responses = 4096;
  std::chrono::milliseconds max_total_delay{10'000};
};

/// Triton's repeat_int32, a decoupled model (its repeat backend): INT32 IN and UINT32 DELAY of
/// the same shape [n], UINT32 WAIT of shape [1] → n responses, the i'th after waiting DELAY[i]
/// milliseconds, with OUT = [IN[i]] (INT32 [1]) and IDX = [i] (UINT32 [1]). IN of shape [0]
/// gives no response. WAIT is when Triton's backend releases the request; here a request holds
/// nothing that outlives its responses, so it is checked and not used.
inline Model repeat_int32(RepeatLimits limits = {}) {
  Model m;
  m.name = "repeat_int32";
  m.inputs = {{"IN", DataType::Int32, {-1}},
              {"DELAY", DataType::UInt32, {-1}},
              {"WAIT", DataType::UInt32, {1}}};
  m.outputs = {{"OUT", DataType::Int32, {1}}, {"IDX", DataType::UInt32, {1}}};
  m.decoupled = [limits](const InferRequest& request, const ResponseSink& respond) -> Result<void> {
    const Tensor& in = request.find_input("IN")->tensor;
    const Tensor& delay = request.find_input("DELAY")->tensor;
    if (in.shape() != delay.shape()) {
      return Error(StatusCode::InvalidArgument, "expected IN and DELAY shape to match, got " +
                                                    to_string(in.shape()) + " and " +
                                                    to_string(delay.shape()));
    }
    auto values = in.as<std::int32_t>();
    auto delays = delay.as<std::uint32_t>();
    if (values.size() > limits.max_responses) {
      return Error(StatusCode::InvalidArgument,
                   "repeat_int32 gives at most " + std::to_string(limits.max_responses) +
                       " responses to a request, IN has " + std::to_string(values.size()));
    }
    std::chrono::milliseconds total{0};
    for (std::uint32_t d : delays) total += std::chrono::milliseconds(d);
    if (total > limits.max_total_delay) {
      return Error(StatusCode::InvalidArgument,
                   "repeat_int32 waits at most " + std::to_string(limits.max_total_delay.count()) +
                       " ms in all for a request, DELAY asks for " + std::to_string(total.count()));
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (delays[i] > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delays[i]));
      respond({{"OUT", Tensor::from_vector(std::vector<std::int32_t>{values[i]}, {1}), {}},
               {"IDX",
                Tensor::from_vector(std::vector<std::uint32_t>{static_cast<std::uint32_t>(i)}, {1}),
                {}}});
    }
    return {};
  };
  return m;
}

}  // namespace sonic::models
