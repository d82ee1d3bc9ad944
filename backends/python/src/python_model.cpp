#include "python_model.hpp"

#include <exception>
#include <nlohmann/json.hpp>
#include <optional>

#include "current_loads.hpp"
#include "stub_conversation.hpp"
#include "stub_messages.hpp"
#include "stub_tensors.hpp"

namespace sonic::python_backend {

using json = nlohmann::json;

PythonModel::PythonModel(const repository::LoadContext& context, Settings settings, bool decoupled)
    : name_(context.model_name),
      version_(context.version),
      host_(context.host),
      settings_(settings),
      metrics_(CustomMetricRegistry::global().owner()),
      decoupled_(decoupled),
      pool_(context.model_name, settings.instance_wait_timeout) {}

PythonModel::~PythonModel() {
  pool_.for_each([&](Instance& instance) { finalize_stub(instance, settings_); });
}

void PythonModel::add_instance(Instance instance) { pool_.add(std::move(instance)); }

void PythonModel::set_decoupled(bool decoupled) { decoupled_ = decoupled; }

namespace {
// A response's parameters attached to the response of `request` the executor is making.
Result<void> attach(const InferRequest& request, Parameters parameters) {
  if (parameters.empty()) return {};
  return set_response_parameters(request, std::move(parameters));
}
}  // namespace

Result<std::vector<NamedTensor>> PythonModel::compute(const InferRequest& request) {
  StubResponse answer;
  auto done = run(request, [&](StubResponse got) { answer = std::move(got); });
  if (!done) return done.error();
  if (auto ok = attach(request, std::move(answer.parameters)); !ok) return ok.error();
  return std::move(answer.outputs);
}

Result<void> PythonModel::compute_decoupled(const InferRequest& request,
                                            const ResponseSink& respond) {
  // A response whose parameters cannot be attached is not sent; the first such is the
  // request's error, as the first error response is.
  std::optional<Error> refused;
  auto done = run(request, [&](StubResponse got) {
    if (auto ok = attach(request, std::move(got.parameters)); !ok) {
      if (!refused) refused = ok.error();
      return;
    }
    respond(std::move(got.outputs));
  });
  if (!done) return done;
  if (refused) return *refused;
  return {};
}

// The execute message of `requests`, numbered `execute`, their tensors' bytes in `buffers`. A
// client's string that is not UTF-8 (an id, a parameter, a tensor's name) is the requests' error,
// found here, before an instance is taken.
Result<std::string> PythonModel::describe(const std::vector<const InferRequest*>& requests,
                                          std::uint64_t execute,
                                          std::vector<ByteRange>& buffers) const {
  try {
    json described = json::array();
    for (const InferRequest* request : requests) {
      json one{{"request_id", request->request_id()},
               {"inputs", describe_all(request->inputs(), buffers)},
               {"requested_outputs", json::array()},
               {"parameters", parameters_json(request->parameters()).dump()},
               {"correlation_id", correlation_id_of(request->parameters())},
               {"flags", sequence_flags_of(request->parameters())}};
      for (const auto& wanted : request->outputs()) {
        one["requested_outputs"].push_back(wanted.name);
      }
      described.push_back(std::move(one));
    }
    return json{{"type", "execute"}, {"execute", execute}, {"requests", std::move(described)}}
        .dump();
  } catch (const json::exception& e) {
    return Error(StatusCode::InvalidArgument,
                 "a request to Python model '" + name_ +
                     "' holds a string that is not UTF-8 (its id, a parameter or a tensor's "
                     "name): " +
                     e.what());
  }
}

// Runs one request on a free stub, handing each response's outputs to `take`.
Result<void> PythonModel::run(const InferRequest& request, const TakeOutputs& take) {
  std::vector<ByteRange> buffers;
  // Every message of the stub's about this execute carries its number: one of another
  // execute's (a response sent late) is a broken protocol, never another request's answer.
  const std::uint64_t execute = ++executes_;
  auto header = describe({&request}, execute, buffers);
  if (!header) return header.error();
  return pool_.lend([&](Instance& instance) -> Result<void> {
    // The wait for a free instance may outlast the caller: nobody waits for it any more, so
    // the instance is not used for it (the executor counts it as cancelled).
    if (const auto& caller = request.caller()) {
      if (auto why = caller->gone(std::chrono::steady_clock::now(),
                                  "an instance of model '" + name_ + "'")) {
        return *why;
      }
    }
    // A throw means the conversation with the stub is in an unknown state, so the stub is not
    // trusted again.
    try {
      StubConversation conversation(instance, settings_, name_, host_.get(), request.caller().get(),
                                    *metrics_,
                                    [&](const std::string& what) { return broke(instance, what); });
      return conversation.execute(execute, *header, buffers, decoupled_, take);
    } catch (const std::exception& e) {
      return broke(instance, std::string("could not be answered (") + e.what() + ")");
    }
  });
}

std::vector<Result<std::vector<NamedTensor>>> PythonModel::compute_batch(
    const std::vector<const InferRequest*>& requests) {
  std::vector<Result<std::vector<NamedTensor>>> answers(
      requests.size(), Error(StatusCode::Internal, "the model gave no answer"));
  std::vector<ByteRange> buffers;
  const std::uint64_t execute = ++executes_;
  auto header = describe(requests, execute, buffers);
  if (!header) {
    // A request the stub cannot be told of (a string that is not UTF-8) fails alone.
    for (std::size_t i = 0; i < requests.size(); ++i) answers[i] = compute(*requests[i]);
    return answers;
  }
  auto done = pool_.lend([&](Instance& instance) {
    try {
      // The batch has no one caller: its model's is_cancelled() says no.
      StubConversation conversation(instance, settings_, name_, host_.get(), nullptr, *metrics_,
                                    [&](const std::string& what) { return broke(instance, what); });
      return conversation.execute_batch(
          execute, *header, buffers, requests.size(), [&](std::size_t i, Result<StubResponse> got) {
            if (!got) {
              answers[i] = got.error();
            } else if (auto ok = attach(*requests[i], std::move(got->parameters)); !ok) {
              answers[i] = ok.error();
            } else {
              answers[i] = std::move(got->outputs);
            }
          });
    } catch (const std::exception& e) {
      return Result<void>(broke(instance, std::string("could not be answered (") + e.what() + ")"));
    }
  });
  if (!done) answers.assign(requests.size(), done.error());
  return answers;
}

// The stub can no longer be trusted: kill it, fail the model with `what`, and retire it so that
// the server says why until a load brings it back.
Error PythonModel::broke(Instance& instance, const std::string& what) {
  const std::string ended = instance.process.kill();
  std::string reason =
      "the Python stub of model '" + name_ + "' (instance " + instance.name + ") " + what;
  if (!ended.empty() && what.find(ended) == std::string::npos) reason += "; it " + ended;
  pool_.mark_broken(reason);
  if (host_ && CurrentLoads::get().is_current(host_.get(), name_, version_, this)) {
    host_->retire(name_, reason);
  }
  return Error(StatusCode::Unavailable, reason);
}

}  // namespace sonic::python_backend
