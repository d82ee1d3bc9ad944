#include "stub_conversation.hpp"

#include <optional>

#include "stub_messages.hpp"
#include "stub_metrics.hpp"
#include "stub_tensors.hpp"

namespace sonic::python_backend {

using json = nlohmann::json;

StubConversation::StubConversation(Instance& instance, const Settings& settings,
                                   const std::string& model_name, ModelHost* host,
                                   const Caller* caller, CustomMetricOwner& metrics,
                                   BreakStub broke)
    : instance_(instance),
      settings_(settings),
      model_name_(model_name),
      host_(host),
      caller_(caller),
      metrics_(metrics),
      broke_(std::move(broke)) {}

Result<void> StubConversation::execute(std::uint64_t execute, const std::string& header,
                                       const std::vector<ByteRange>& buffers, bool decoupled,
                                       const TakeOutputs& take) {
  if (decoupled) {
    if (auto ok = send_dumped(header, buffers); !ok) return ok;
    return await_decoupled(execute, take);
  }
  Result<void> answered;
  auto ok =
      execute_batch(execute, header, buffers, 1, [&](std::size_t, Result<StubResponse> response) {
        if (response) {
          take(std::move(*response));
        } else {
          answered = response.error();
        }
      });
  if (!ok) return ok;
  return answered;
}

Result<void> StubConversation::execute_batch(std::uint64_t execute, const std::string& header,
                                             const std::vector<ByteRange>& buffers,
                                             std::size_t count, const TakeAnswer& take) {
  if (auto ok = send_dumped(header, buffers); !ok) return ok;
  return await_responses(execute, count, take);
}

// The stub's next message about `execute`; a stub that failed, or that speaks of another
// execute, is broken.
Result<StubConversation::Message> StubConversation::next(std::uint64_t execute) {
  for (;;) {
    auto message = next_any();
    if (!message) return message;
    const json& header = message->first;
    if (header["type"] == "metric") {  // a model's metric, of whichever of its threads
      if (auto ok = send(answer_metric(metrics_, header), {}); !ok) return ok.error();
      continue;
    }
    if (header["type"] == "model_ready") {  // pb_utils.is_model_ready()
      auto name = string_field(header, "model_name", "");
      auto version = string_field(header, "model_version", "");
      const bool ready = host_ && name && version && host_->ready(*name, *version);
      const json call = header.contains("call") ? header["call"] : json(nullptr);
      if (auto ok = send({{"type", "ready"}, {"call", call}, {"ready", ready}}, {}); !ok) {
        return ok.error();
      }
      continue;
    }
    const json& about = header["execute"];
    if (about.is_number_unsigned() && about.get<std::uint64_t>() == execute) return message;
    if (header["type"] == "bls") {
      // A call of a model's thread that outlived its execute: refused, never left waiting.
      if (auto ok = refuse_bls(header); !ok) return ok.error();
      continue;
    }
    if (header["type"] == "is_cancelled") {  // likewise: nobody waits for that execute
      if (auto ok = answer_is_cancelled(header, true); !ok) return ok.error();
      continue;
    }
    return broke_("broke the protocol (a " + header["type"].get<std::string>() +
                  " message of execute " + dump_header(about) + " during execute " +
                  std::to_string(execute) + ")");
  }
}

// The stub's next message, whatever it is about, within the execute limit.
Result<StubConversation::Message> StubConversation::next_any() {
  auto frame = read_frame(instance_.process.fd(), deadline_after(settings_.execute_timeout),
                          settings_.limits, instance_.process.watch());
  if (!frame) {
    const Error& e = frame.error();
    if (e.code() == StatusCode::DeadlineExceeded) {
      return broke_("did not answer within execute_timeout_ms (" +
                    std::to_string(settings_.execute_timeout.count()) + " ms) and was killed");
    }
    if (e.code() == StatusCode::Unavailable) {
      // The socket closed: the process ended (os._exit, a signal, a crash). Reap it to say how.
      const std::string ended = instance_.process.wait_or_kill(1000);
      return broke_(ended.empty() ? "closed its connection" : ended);
    }
    return broke_("broke the protocol (" + e.message() + ")");
  }
  auto header = header_of(*frame);
  if (!header) return broke_("broke the protocol (" + header.error().message() + ")");
  return std::make_pair(std::move(*header), std::move(*frame));
}

Result<void> StubConversation::send(const json& header, const std::vector<ByteRange>& buffers) {
  return send_dumped(dump_header(header), buffers);
}

// Writes a message within the execute limit. A message too large to send is its request's
// error; a stub that does not read it in time, or is gone, is broken.
Result<void> StubConversation::send_dumped(const std::string& header,
                                           const std::vector<ByteRange>& buffers) {
  auto sent = write_frame(instance_.process.fd(), header, buffers,
                          deadline_after(settings_.execute_timeout), instance_.process.watch());
  if (!sent) {
    if (sent.error().code() == StatusCode::ResourceExhausted) return sent.error();
    if (sent.error().code() == StatusCode::DeadlineExceeded) {
      return broke_("did not read its messages within execute_timeout_ms (" +
                    std::to_string(settings_.execute_timeout.count()) + " ms) and was killed");
    }
    const std::string ended = instance_.process.wait_or_kill(1000);
    return broke_(ended.empty() ? "closed its connection" : ended);
  }
  return {};
}

Result<void> StubConversation::await_responses(std::uint64_t execute, std::size_t count,
                                               const TakeAnswer& take) {
  for (;;) {
    auto message = next(execute);
    if (!message) return message.error();
    auto& [header, frame] = *message;
    const std::string type = header["type"].get<std::string>();
    if (type == "bls") {
      if (auto ok = answer_bls(header, frame); !ok) return ok;
      continue;
    }
    if (type == "is_cancelled") {
      if (auto ok = answer_is_cancelled(header, gone()); !ok) return ok;
      continue;
    }
    if (type == "error") {
      // Triton's words for a model whose execute raised.
      return Error(StatusCode::Internal, "Failed to process the request(s) for model '" +
                                             model_name_ + "', message: " + message_of(header));
    }
    if (type != "responses" || !header.contains("responses") || !header["responses"].is_array() ||
        header["responses"].size() != count) {
      return broke_("broke the protocol (sent " + header.dump() + ")");
    }
    for (std::size_t i = 0; i < count; ++i) take(i, response_of(header["responses"][i], frame));
    return {};
  }
}

// A decoupled execute ends when execute() returned and the final flag came, in either order: a
// model's thread may send responses after execute() returned (Triton's usual pattern), and they
// are this request's. An error response does not end the stream (as in Triton): the responses
// after it are handed on too, and the first error is the request's, given last.
Result<void> StubConversation::await_decoupled(std::uint64_t execute, const TakeOutputs& take) {
  bool executed = false;
  bool final = false;
  std::optional<Error> error;
  while (!executed || !final) {
    auto message = next(execute);
    if (!message) return message.error();
    auto& [header, frame] = *message;
    const std::string type = header["type"].get<std::string>();
    if (type == "bls") {
      if (auto ok = answer_bls(header, frame); !ok) return ok;
    } else if (type == "is_cancelled") {
      if (auto ok = answer_is_cancelled(header, gone()); !ok) return ok;
    } else if (type == "response") {
      if (header.contains("flags") && header["flags"].is_number_unsigned() &&
          (header["flags"].get<std::uint64_t>() & 1U) != 0) {
        final = true;
      }
      if (!header.contains("response") || header["response"].is_null()) continue;
      if (auto ok = take_response(header["response"], frame, take); !ok && !error) {
        error = ok.error();
      }
    } else if (type == "executed") {
      executed = true;
      if (header.contains("error") && header["error"].is_string() && !error) {
        error = Error(StatusCode::Internal,
                      "Failed to process the request(s) for model '" + model_name_ +
                          "', message: " + header["error"].get<std::string>());
      }
    } else {
      return broke_("broke the protocol (sent " + header.dump() + ")");
    }
  }
  if (error) return *error;
  return {};
}

// The model asks whether its request's caller went away (request.is_cancelled(), a decoupled
// sender's is_cancelled()): cancelled, or past its deadline, as Triton's gRPC front end cancels
// a call at its deadline.
Result<void> StubConversation::answer_is_cancelled(const json& header, bool cancelled) {
  const json call = header.contains("call") ? header["call"] : json(nullptr);
  return send({{"type", "cancelled"}, {"call", call}, {"cancelled", cancelled}}, {});
}

bool StubConversation::gone() const {
  return caller_ && caller_->gone(std::chrono::steady_clock::now());
}

// One response: its error, or it handed to `take`.
Result<void> StubConversation::take_response(const json& response, const Frame& frame,
                                             const TakeOutputs& take) {
  auto taken = response_of(response, frame);
  if (!taken) return taken.error();
  take(std::move(*taken));
  return {};
}

// One response's outputs and parameters, or its error (a malformed one breaks the stub).
Result<StubResponse> StubConversation::response_of(const json& response, const Frame& frame) {
  if (response.contains("error") && response["error"].is_object()) {
    const json& e = response["error"];
    auto code = string_field(e, "code", "INTERNAL");
    auto message = string_field(e, "message", "");
    if (!code || !message) {
      return broke_("broke the protocol (sent the error " + dump_header(e) + ")");
    }
    return Error(code_named(*code), *message);
  }
  auto parameters = response_parameters_of(response);
  if (!parameters) return parameters.error();
  auto outputs =
      tensors_of(response.contains("outputs") ? response["outputs"] : json::array(), frame,
                 settings_.limits, "the Python stub of model '" + model_name_ + "'");
  if (!outputs) return outputs.error();
  return StubResponse{std::move(*outputs), std::move(*parameters)};
}

// A BLS call of the stub's: runs it through the host and answers, one response or (decoupled)
// each as it comes and then the end. The error of a call is the stub's to handle; only a stub
// that cannot be answered fails the execute. Blocks for as long as the call takes.
Result<void> StubConversation::answer_bls(const json& header, const Frame& frame) {
  const bool decoupled = header.contains("decoupled") && header["decoupled"].is_boolean() &&
                         header["decoupled"].get<bool>();
  // The answers name the call, for the stub's reader to hand them to the thread that waits.
  const json call = header.contains("call") ? header["call"] : json(nullptr);
  auto answer = [&](const Result<InferResult>& result) {
    std::vector<ByteRange> buffers;
    // As Triton's BLS gives them: the called model's response parameters too.
    json response = result
                        ? json{{"outputs", describe_all(result->outputs(), buffers)},
                               {"parameters", dump_header(parameters_json(result->parameters()))},
                               {"error", nullptr}}
                        : json{{"outputs", json::array()}, {"error", error_json(result.error())}};
    return send({{"type", "bls_response"}, {"call", call}, {"response", response}}, buffers);
  };
  auto end = [&](const Result<void>& outcome) {
    json e = outcome ? json(nullptr) : error_json(outcome.error());
    return send({{"type", "bls_end"}, {"call", call}, {"error", e}}, {});
  };
  auto fail = [&](const Error& error) -> Result<void> {
    if (decoupled) return end(error);
    return answer(error);
  };
  if (!host_) {
    return fail(Error(StatusCode::Unavailable, "model '" + model_name_ +
                                                   "' was loaded outside an executor: it cannot "
                                                   "call other models"));
  }
  auto inputs = tensors_of(header.contains("inputs") ? header["inputs"] : json::array(), frame,
                           settings_.limits, "the Python stub of model '" + model_name_ + "'");
  if (!inputs) return fail(inputs.error());
  auto model = string_field(header, "model_name", "");
  auto version = string_field(header, "model_version", "");
  auto id = string_field(header, "request_id", "");
  for (const auto* field : {&model, &version, &id}) {
    if (!*field) {
      return fail(
          Error(StatusCode::InvalidArgument, "a BLS request's " + field->error().message()));
    }
  }
  InferRequest request(*model, *version);
  for (auto& input : *inputs) request.input(std::move(input.name), std::move(input.tensor));
  if (header.contains("requested_outputs")) {
    const json& wanted = header["requested_outputs"];
    if (!wanted.is_array()) {
      return fail(
          Error(StatusCode::InvalidArgument, "a BLS request's requested_outputs is no list"));
    }
    for (const auto& output : wanted) {
      if (!output.is_string()) {
        return fail(Error(StatusCode::InvalidArgument,
                          "a BLS request's requested_outputs holds a " +
                              std::string(output.type_name()) + ", not a string"));
      }
      request.output(output.get<std::string>());
    }
  }
  request.id(*id);
  if (auto ok = apply_bls_options(header, request); !ok) return fail(ok.error());
  if (!decoupled) return answer(host_->infer(request));
  Result<void> sent;
  auto outcome = host_->infer_responses(request, [&](InferResult result) {
    if (sent) sent = answer(std::move(result));
  });
  if (!sent) return sent;
  return end(outcome);
}

// A BLS call that came between requests: refused at once.
Result<void> StubConversation::refuse_bls(const json& header) {
  const json call = header.contains("call") ? header["call"] : json(nullptr);
  const json error = error_json(
      Error(StatusCode::Unavailable,
            "a BLS call is answered only while a request is under way: this one came between "
            "requests"));
  const bool decoupled = header.contains("decoupled") && header["decoupled"] == true;
  if (decoupled) return send({{"type", "bls_end"}, {"call", call}, {"error", error}}, {});
  return send({{"type", "bls_response"},
               {"call", call},
               {"response", {{"outputs", json::array()}, {"error", error}}}},
              {});
}

void finalize_stub(Instance& instance, const Settings& settings) {
  if (instance.process.pid() <= 0) return;
  // The answer, or the end of the stub, or the limit: whichever comes first.
  const auto deadline = deadline_after(settings.finalize_timeout);
  if (write_frame(instance.process.fd(), json{{"type", "finalize"}}.dump(), {}, deadline,
                  instance.process.watch())) {
    (void)read_frame(instance.process.fd(), deadline, settings.limits, instance.process.watch());
  }
  instance.process.wait_or_kill(1000);
}

}  // namespace sonic::python_backend
