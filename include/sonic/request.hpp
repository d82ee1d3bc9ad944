// sonic — an inference request, its result, and their parameters.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "sonic/compression.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/tensor.hpp"

namespace sonic {

class Caller;  // sonic/caller.hpp

/// A KServe v2 parameter value: bool, int64, uint64, double or string.
using Parameter = std::variant<bool, std::int64_t, std::uint64_t, double, std::string>;
/// Named parameters of a request, a tensor or a response.
using Parameters = std::map<std::string, Parameter, std::less<>>;

/// A tensor with its name and per-tensor parameters, as it travels in a request or response.
struct NamedTensor {
  std::string name;
  Tensor tensor;
  Parameters parameters;
};

/// An output the caller asks for; when a request names none, the server returns all outputs.
struct RequestedOutput {
  std::string name;
  Parameters parameters;  ///< e.g. {"classification", int64_t{3}}
};

/// One inference call: a model, its input tensors, and options. Built fluently:
///   InferRequest("simple").input("INPUT0", Tensor::view(a, {1, 16})).timeout(50ms)
/// A request holds its tensors by value; borrowed tensors must stay valid until it completes.
class SONIC_EXPORT InferRequest {
 public:
  explicit InferRequest(std::string model, std::string version = {})
      : model_(std::move(model)), version_(std::move(version)) {}

  /// Adds an input tensor.
  InferRequest& input(std::string name, Tensor tensor, Parameters parameters = {}) &;
  InferRequest&& input(std::string name, Tensor tensor, Parameters parameters = {}) && {
    return std::move(input(std::move(name), std::move(tensor), std::move(parameters)));
  }
  /// Asks for one output by name (repeat for several); without any, all outputs come back.
  InferRequest& output(std::string name, Parameters parameters = {}) &;
  InferRequest&& output(std::string name, Parameters parameters = {}) && {
    return std::move(output(std::move(name), std::move(parameters)));
  }
  /// The model version to run; empty (the default) lets the server choose (the highest).
  InferRequest& version(std::string model_version) & {
    version_ = std::move(model_version);
    return *this;
  }
  InferRequest&& version(std::string model_version) && {
    return std::move(version(std::move(model_version)));
  }
  /// A request id the server echoes back in its response.
  InferRequest& id(std::string request_id) & {
    id_ = std::move(request_id);
    return *this;
  }
  InferRequest&& id(std::string request_id) && { return std::move(id(std::move(request_id))); }
  /// A request parameter (priority, sequence_id, ... or model-specific ones).
  InferRequest& parameter(std::string name, Parameter value) &;
  InferRequest&& parameter(std::string name, Parameter value) && {
    return std::move(parameter(std::move(name), std::move(value)));
  }
  // Triton's request options, sent as the request parameters Triton reads, with the types it
  // requires (a parameter of another type is INVALID_ARGUMENT there and in sonic-server).

  /// A request of a sequence, for a stateful model: the sequence's id (a number, or a string
  /// for a model configured with string ids); its first request says `start`, its last `end`.
  InferRequest& sequence(std::uint64_t id, bool start = false, bool end = false) & {
    return sequence_flags(static_cast<std::int64_t>(id), start, end);  // Triton reads int64
  }
  InferRequest&& sequence(std::uint64_t id, bool start = false, bool end = false) && {
    return std::move(sequence(id, start, end));
  }
  InferRequest& sequence(std::string id, bool start = false, bool end = false) & {
    return sequence_flags(std::move(id), start, end);
  }
  InferRequest&& sequence(std::string id, bool start = false, bool end = false) && {
    return std::move(sequence(std::move(id), start, end));
  }
  /// Scheduling priority: 1 is the highest; 0 leaves the model's default.
  InferRequest& priority(std::uint64_t level) &;
  InferRequest&& priority(std::uint64_t level) && { return std::move(priority(level)); }
  /// How long the server may hold this request before running it (Triton's "timeout"
  /// parameter). Unlike timeout(), it does not bound the client's wait.
  InferRequest& server_timeout(std::chrono::microseconds limit) &;
  InferRequest&& server_timeout(std::chrono::microseconds limit) && {
    return std::move(server_timeout(limit));
  }

  /// The time this request may take from the call that sends it to its result; zero means the
  /// client's default (ClientOptions::default_timeout). Sent to the server as grpc-timeout.
  InferRequest& timeout(std::chrono::microseconds limit) & {
    timeout_ = limit;
    return *this;
  }
  InferRequest&& timeout(std::chrono::microseconds limit) && { return std::move(timeout(limit)); }
  /// Copies the bytes of borrowed inputs into the request (owned ones are shared, not copied),
  /// so that it no longer reads the caller's memory.
  InferRequest& own_inputs() &;
  InferRequest&& own_inputs() && { return std::move(own_inputs()); }
  /// How this request's message is compressed over gRPC, instead of ClientOptions::compression.
  InferRequest& compression(Compression how) & {
    compression_ = how;
    return *this;
  }
  InferRequest&& compression(Compression how) && { return std::move(compression(how)); }
  /// A metadata header sent with this request only (lower-case name; "-bin" names carry binary).
  InferRequest& header(std::string name, std::string value) &;
  InferRequest&& header(std::string name, std::string value) && {
    return std::move(header(std::move(name), std::move(value)));
  }

  /// Who waits for this request where it runs (a server, or the CPU executor of a fallback):
  /// its deadline there, and whether it went away (see sonic::Caller, <sonic/caller.hpp>).
  /// Copies of the request share it; null when nobody said, as in a client's own requests
  /// (their deadline is timeout()).
  InferRequest& caller(std::shared_ptr<Caller> who) & {
    caller_ = std::move(who);
    return *this;
  }
  InferRequest&& caller(std::shared_ptr<Caller> who) && {
    return std::move(caller(std::move(who)));
  }

  /// A copy of this request with other inputs; everything else (model, id, outputs,
  /// parameters, timeout, compression, headers, caller) stays. For requests made of parts of
  /// others: chunks of a large batch, requests merged into one.
  InferRequest with_inputs(std::vector<NamedTensor> inputs) const;

  const std::string& model_name() const noexcept { return model_; }
  const std::string& model_version() const noexcept { return version_; }
  const std::string& request_id() const noexcept { return id_; }
  const std::vector<NamedTensor>& inputs() const noexcept { return inputs_; }
  const std::vector<RequestedOutput>& outputs() const noexcept { return outputs_; }
  const Parameters& parameters() const noexcept { return parameters_; }
  std::chrono::microseconds timeout() const noexcept { return timeout_; }
  const std::shared_ptr<Caller>& caller() const noexcept { return caller_; }
  const std::optional<Compression>& compression() const noexcept { return compression_; }
  const std::vector<std::pair<std::string, std::string>>& headers() const noexcept {
    return headers_;
  }

  /// The input of that name, or nullptr.
  const NamedTensor* find_input(std::string_view name) const noexcept {
    for (const auto& in : inputs_) {
      if (in.name == name) return &in;
    }
    return nullptr;
  }

 private:
  InferRequest& sequence_flags(Parameter id, bool start, bool end);

  std::string model_;
  std::string version_;
  std::string id_;
  std::vector<NamedTensor> inputs_;
  std::vector<RequestedOutput> outputs_;
  Parameters parameters_;
  std::chrono::microseconds timeout_{0};
  std::shared_ptr<Caller> caller_;
  std::optional<Compression> compression_;
  std::vector<std::pair<std::string, std::string>> headers_;
};

/// Where the time of one request went. The client measures its part; the server's queue and
/// compute times are filled when the server reports them (sonic-server does, as response
/// parameters; the CPU executor does for local runs). A zero duration was not measured. With
/// retries, the figures are those of the attempt that answered.
struct InferTiming {
  std::chrono::nanoseconds serialize{0};       ///< encoding the request, on the caller's thread
  std::chrono::nanoseconds queue{0};           ///< until the network thread started sending it
  std::chrono::nanoseconds send{0};            ///< sending, until its last byte was handed over
  std::chrono::nanoseconds wait{0};            ///< from then to the first byte of the answer
  std::chrono::nanoseconds receive{0};         ///< from the first to the last byte of the answer
  std::chrono::nanoseconds deserialize{0};     ///< decoding the answer
  std::chrono::nanoseconds server_queue{0};    ///< the server: waiting for the model
  std::chrono::nanoseconds server_compute{0};  ///< the server: running the model
  std::chrono::nanoseconds total{0};           ///< the attempt, end to end, as the client saw it
};

/// Where a result was computed.
enum class ExecutedOn : std::uint8_t {
  Remote,  ///< a server reached through a transport
  Local,   ///< the in-process CpuExecutor
};

/// The answer to an InferRequest. Output tensors are views into the received message (no copy);
/// they stay valid as long as any copy of this result or of the tensor lives.
class SONIC_EXPORT InferResult {
 public:
  InferResult() = default;
  InferResult(std::string model, std::string version, std::string id,
              std::vector<NamedTensor> outputs, Parameters parameters = {})
      : model_(std::move(model)),
        version_(std::move(version)),
        id_(std::move(id)),
        outputs_(std::move(outputs)),
        parameters_(std::move(parameters)) {}

  const std::string& model_name() const noexcept { return model_; }
  const std::string& model_version() const noexcept { return version_; }
  /// The request id the server echoed.
  const std::string& request_id() const noexcept { return id_; }
  const Parameters& parameters() const noexcept { return parameters_; }
  /// Sets a response parameter (a server's, such as Triton's triton_final_response).
  void set_parameter(std::string name, Parameter value);
  const std::vector<NamedTensor>& outputs() const noexcept { return outputs_; }
  ExecutedOn executed_on() const noexcept { return executed_on_; }
  void set_executed_on(ExecutedOn where) noexcept { executed_on_ = where; }

  /// Where the time of this request went (see InferTiming).
  const InferTiming& timing() const noexcept { return timing_; }
  InferTiming& timing() noexcept { return timing_; }

  /// The output of that name, or nullptr.
  const NamedTensor* find_output(std::string_view name) const noexcept {
    for (const auto& out : outputs_) {
      if (out.name == name) return &out;
    }
    return nullptr;
  }
  /// The output of that name; throws sonic::Error(NotFound) listing the outputs present.
  const Tensor& output(std::string_view name) const;
  /// The elements of the output of that name as T: output(name).as<T>(), with errors that name
  /// the output and the model ("output 'OUTPUT0' of model 'simple': cannot read an INT32 ...").
  template <typename T>
  TensorView<T> as(std::string_view name) const {
    const Tensor& tensor = output(name);
    try {
      return tensor.template as<T>();
    } catch (const Error& e) {
      throw Error(e.code(),
                  "output '" + std::string(name) + "' of model '" + model_ + "': " + e.message());
    }
  }

 private:
  std::string model_;
  std::string version_;
  std::string id_;
  std::vector<NamedTensor> outputs_;
  Parameters parameters_;
  ExecutedOn executed_on_ = ExecutedOn::Remote;
  InferTiming timing_;
};

}  // namespace sonic
