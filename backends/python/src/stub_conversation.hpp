// One execute's conversation with one stub: the request sent, then the stub's messages read
// until its answer is whole (one response; or, decoupled, responses until both execute()
// returned and the final flag came), with the BLS calls it makes on the way run through the
// ModelHost and answered. Every read and write is bounded by execute_timeout_ms. A stub that
// passes it, ends, or breaks the protocol is no longer trusted: the conversation hands it to
// the model's `broke`, which kills it and retires the model.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "instance_pool.hpp"
#include "python_settings.hpp"
#include "sonic/caller.hpp"
#include "sonic/custom_metrics.hpp"
#include "sonic/error.hpp"
#include "sonic/model.hpp"
#include "stub_frame.hpp"

namespace sonic::python_backend {

/// One response of the stub's: its outputs, and the response parameters the model gave it
/// (pb_utils.InferenceResponse(parameters=...)), for sonic::set_response_parameters().
struct StubResponse {
  std::vector<NamedTensor> outputs;
  Parameters parameters;
};
/// Takes one response, on the thread that runs the conversation.
using TakeOutputs = std::function<void(StubResponse)>;
/// Takes the answer to the request at `index` of an execute of several, on that thread.
using TakeAnswer = std::function<void(std::size_t index, Result<StubResponse>)>;
/// Kills the conversation's stub and fails its model with `what` (how the stub failed); the
/// error the request fails with (UNAVAILABLE).
using BreakStub = std::function<Error(const std::string& what)>;

/// The conversation of one execute with `instance`, which the caller holds (InstancePool::lend)
/// for as long as this object is used. Not thread-safe: used by the thread that holds the
/// instance. Everything it is given must outlive it.
class StubConversation {
 public:
  /// `host` runs the stub's BLS calls (null: a model loaded outside an executor, whose calls
  /// fail UNAVAILABLE); `model_name` names the model in errors; `caller` waits for the request
  /// (null: nobody said), and answers the model's request.is_cancelled(); `metrics` keeps the
  /// model's custom metrics (pb_utils.MetricFamily), which the stub may use at any point.
  StubConversation(Instance& instance, const Settings& settings, const std::string& model_name,
                   ModelHost* host, const Caller* caller, CustomMetricOwner& metrics,
                   BreakStub broke);

  /// Sends `header` (an execute message numbered `execute`, dumped) with `buffers`, then reads
  /// the stub's answer, handing each response to `take`. Blocks for as long as the
  /// stub takes, up to execute_timeout_ms for each of its messages and for each write to it,
  /// plus whatever the BLS calls it makes take. The model's error (INTERNAL, Triton's words)
  /// when its execute raised; UNAVAILABLE once the stub is broken. May throw
  /// (nlohmann::json::exception, std::bad_alloc): the stub is then in an unknown state.
  Result<void> execute(std::uint64_t execute, const std::string& header,
                       const std::vector<ByteRange>& buffers, bool decoupled,
                       const TakeOutputs& take);

  /// As execute(), for a model that is not decoupled, with `count` requests in the header (a
  /// batch, given to execute() as a list): each request's answer goes to `take`, the model's
  /// own error of one response to that request alone. An error returned is every request's.
  Result<void> execute_batch(std::uint64_t execute, const std::string& header,
                             const std::vector<ByteRange>& buffers, std::size_t count,
                             const TakeAnswer& take);

 private:
  using Message = std::pair<nlohmann::json, Frame>;

  Result<Message> next(std::uint64_t execute);
  Result<Message> next_any();
  Result<void> send(const nlohmann::json& header, const std::vector<ByteRange>& buffers);
  Result<void> send_dumped(const std::string& header, const std::vector<ByteRange>& buffers);
  Result<void> await_responses(std::uint64_t execute, std::size_t count, const TakeAnswer& take);
  Result<void> await_decoupled(std::uint64_t execute, const TakeOutputs& take);
  Result<void> take_response(const nlohmann::json& response, const Frame& frame,
                             const TakeOutputs& take);
  Result<StubResponse> response_of(const nlohmann::json& response, const Frame& frame);
  Result<void> answer_bls(const nlohmann::json& header, const Frame& frame);
  Result<void> answer_is_cancelled(const nlohmann::json& header, bool cancelled);
  bool gone() const;
  Result<void> refuse_bls(const nlohmann::json& header);

  Instance& instance_;
  const Settings& settings_;
  const std::string& model_name_;
  ModelHost* host_;
  const Caller* caller_;
  CustomMetricOwner& metrics_;
  BreakStub broke_;
};

/// Asks the stub to finalize, as Triton calls finalize() at unload, and ends it: waits for its
/// answer, or its end, or finalize_timeout_ms, whichever comes first, then up to a second more
/// for it to exit before it is killed. For an instance no request holds.
void finalize_stub(Instance& instance, const Settings& settings);

}  // namespace sonic::python_backend
