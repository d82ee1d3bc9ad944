// sonic — a model as the CPU executor runs it (its metadata and the function that computes it),
// and where an executor finds models it was not given (ModelSource: a model repository).
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sonic/batching.hpp"
#include "sonic/detail/unique_function.hpp"
#include "sonic/error.hpp"
#include "sonic/metadata.hpp"
#include "sonic/request.hpp"

namespace sonic {

/// Computes a model's outputs from a validated request. It may run on several threads at once.
/// Returned tensors should own their bytes (Tensor::from_vector); an Error becomes the
/// request's error.
using ModelFunction = std::function<Result<std::vector<NamedTensor>>(const InferRequest&)>;

/// Hands one response of a decoupled model to whoever asked: the outputs of that response.
using ResponseSink = std::function<void(std::vector<NamedTensor> outputs)>;

/// The most response parameters one response may carry, and their bytes (names and string values
/// together, 8 for any other value): a model cannot make a response grow without bound.
inline constexpr std::size_t kMaxResponseParameters = 64;
inline constexpr std::size_t kMaxResponseParameterBytes = 64 * 1024;

/// Attaches parameters to the response of `request` that the model's function is computing, as
/// Triton's backends do with TRITONBACKEND_ResponseSet{Bool,Int,String}Parameter: the response
/// `compute` returns, the answer to `request` among those of `compute_batch` (every request's,
/// for a request of a merged batch), or the next one a `decoupled` function hands to `respond`.
/// They reach the client with that response (ModelInferResponse and ModelStreamInferResponse
/// parameters, the "parameters" object of an HTTP answer; InferResult::parameters()).
///
/// Thread contract: call it on the thread that runs the model's function, while it runs, with
/// the very request the function was given (a decoupled model: before the respond() call, on
/// that thread too); there it never blocks. Anywhere else it attaches nothing and fails
/// (FAILED_PRECONDITION). Calls add up (a name given again takes the new value). Names that
/// sonic's servers set themselves (triton_final_response, and every name that starts with
/// "sonic_") are dropped: a model cannot override them. Past kMaxResponseParameters or
/// kMaxResponseParameterBytes it fails (RESOURCE_EXHAUSTED), and with a name or string that is
/// not UTF-8 (INVALID_ARGUMENT), attaching none of `parameters`.
/// Defined in sonic::executor, which runs the models.
SONIC_EXPORT Result<void> set_response_parameters(const InferRequest& request,
                                                  Parameters parameters);

/// Computes a decoupled model (Triton's decoupled transaction policy): any number of responses
/// to one request, none included, each given to `respond` as soon as it is made. Returns once
/// the last one was given, or an Error (the request's error; no response follows it). It may
/// run on several threads at once.
using DecoupledFunction =
    std::function<Result<void>(const InferRequest& request, const ResponseSink& respond)>;

/// Computes the requests of one batch in one execution, each as it came, rather than merged into
/// one (as Triton's Python backend gives execute() the list of a batch's requests): one answer
/// per request, in their order. It may run on several threads at once.
using BatchFunction = std::function<std::vector<Result<std::vector<NamedTensor>>>(
    const std::vector<const InferRequest*>& requests)>;

/// A model the executor can run: its metadata plus the function that computes it: `compute`
/// (one response per request), or `decoupled` (any number).
struct Model {
  std::string name;
  std::string version = "1";
  std::string platform = "sonic_cpu";
  int max_batch_size = 0;  ///< 0: no batch dimension is implied
  std::vector<TensorMetadata> inputs;
  std::vector<TensorMetadata> outputs;
  /// Inputs a request may leave out (Triton's `optional: true`), named as in `inputs`: the
  /// model's function gets only those the request sent. The others are required.
  std::vector<std::string> optional_inputs;
  ModelFunction compute;
  DecoupledFunction decoupled;
  /// With dynamic_batching: runs a batch's requests as they came, instead of `compute` on them
  /// merged (`compute` still runs a request alone).
  BatchFunction compute_batch;
  /// Merge concurrent requests into one execution (needs max_batch_size > 0 and `compute`):
  /// the executor's asynchronous calls and ModelHost::infer() queue them; CpuExecutor::infer()
  /// still runs one at once.
  std::optional<DynamicBatching> dynamic_batching;
  /// A stateful model (needs `compute`; not with dynamic_batching): requests carry a sequence
  /// id, each sequence's requests run one at a time in the order they came, and the model
  /// gets the control and state inputs named here besides the request's own (see
  /// SequenceBatching). `inputs` and `outputs` list what clients send and get, not those.
  std::optional<SequenceBatching> sequence_batching;
  /// Executions at once when batching (Triton's instance_group count): the runners that form
  /// and run batches. The model's function itself may limit how many run at once too.
  int instances = 1;
  /// The labels of an output's classes, by output name (Triton's label_filename: line i names
  /// class i), for requests that ask for the output's top classes ("classification").
  std::map<std::string, std::vector<std::string>> labels;
  /// The models this one runs (an ensemble's steps), by name and version (empty: the default
  /// one): while one of them is out of service, so is this model, as in Triton.
  std::vector<std::pair<std::string, std::string>> composing_models;
  /// The model's configuration as its repository gives it (a serialized inference.ModelConfig,
  /// proto/model_config.proto), reported by the ModelConfig call; empty: the server derives
  /// one from the fields above.
  std::string config;

  bool is_decoupled() const noexcept { return static_cast<bool>(decoupled); }
  bool is_optional_input(const std::string& input) const {
    return std::find(optional_inputs.begin(), optional_inputs.end(), input) !=
           optional_inputs.end();
  }
  ModelMetadata metadata() const { return {name, {version}, platform, inputs, outputs}; }
};

/// What a model may ask of the executor that loaded it: to run the executor's other models
/// (Triton's ensemble steps, and a Python model's BLS calls). Every member is thread-safe and
/// may be called from a model's function; the calls that run a request wait for it on the
/// calling thread and run it there unless a free executor thread does, so a model that waits on
/// one never needs a thread of the executor's besides its own. Calls
/// that start once the executor is being destroyed answer UNAVAILABLE; its destruction waits for
/// those under way (a model that calls must bound its waits).
class ModelHost {
 public:
  virtual ~ModelHost() = default;

  /// Runs a request on the calling thread (CpuExecutor::infer()), except that a model with
  /// dynamic_batching queues it with the model's other requests, as Triton schedules ensemble
  /// steps and BLS calls: the calling thread waits, running the model's batches itself while
  /// no executor thread does. A model of the executor's source is loaded first when it is not
  /// held yet. A request that names no caller (InferRequest::caller()) is made for the caller
  /// of the execution on the calling thread: it is answered unrun, CANCELLED or
  /// DEADLINE_EXCEEDED, once that caller went away.
  virtual Result<InferResult> infer(const InferRequest& request) = 0;

  /// Every response of a request, decoupled models' included, handed to `respond` on the
  /// calling thread as they come (CpuExecutor::infer_responses()).
  virtual Result<void> infer_responses(const InferRequest& request,
                                       const std::function<void(InferResult)>& respond) = 0;

  /// The model in service, loaded first from the executor's source when it is not held yet:
  /// for a model that checks, as it loads, what the models it runs take and give. May block for
  /// as long as that load takes.
  virtual Result<std::shared_ptr<const Model>> load(const std::string& name,
                                                    const std::string& version) = 0;

  /// Runs `work` on the executor's pool: for work that may run beside the caller's. `work` must
  /// not throw.
  virtual void run_async(detail::UniqueFunction<void()> work) = 0;

  /// Takes a model of the executor's source out of service, every version, because it can no
  /// longer compute (its process died, say): its requests fail with UNAVAILABLE and `reason`,
  /// which the repository index reports, until a load puts it back. Requests under way finish.
  /// It takes out whatever load of the model is in service now: a model that may have been
  /// loaded again since must check that it is still the one in service before it calls.
  virtual void retire(const std::string& name, const std::string& reason) = 0;

  /// Whether the model (the version asked for; the default one when empty) is loaded and in
  /// service, as Triton's model readiness: loads nothing. (A host that cannot tell: false.)
  virtual bool ready(const std::string& name, const std::string& version) {
    (void)name;
    (void)version;
    return false;
  }
};

/// Where an executor finds the models it was not given: a model repository
/// (sonic::repository implements it). Called from any thread, never under the executor's lock.
class ModelSource {
 public:
  virtual ~ModelSource() = default;
  /// The models it can load, sorted.
  virtual std::vector<std::string> model_names() const = 0;
  /// Reads and prepares a model: may take long (files, a network's graph); an Error says why
  /// the model cannot be served (the file, the line, what to fix). A non-empty `config_json`
  /// replaces the model's own configuration for this load (Triton's RepositoryModelLoad
  /// "config" parameter: a ModelConfig as JSON).
  virtual Result<Model> load(const std::string& name, const std::string& config_json) const = 0;
  /// Every version of the model to serve at once (its version policy's choice), the default
  /// one (the highest) last; the same errors as load(). The executor loads models with this.
  virtual Result<std::vector<Model>> load_versions(const std::string& name,
                                                   const std::string& config_json) const {
    auto model = load(name, config_json);
    if (!model) return model.error();
    return std::vector<Model>{std::move(*model)};
  }
  /// As load_versions(), for an executor that lends the models it loads `host`, through which
  /// they may run its other models (ensembles, Python models' BLS calls). The executor loads
  /// models with this; by default it is load_versions().
  virtual Result<std::vector<Model>> load_versions_hosted(
      const std::string& name, const std::string& config_json,
      const std::shared_ptr<ModelHost>& host) const {
    (void)host;
    return load_versions(name, config_json);
  }
  /// Triton's poll before a load: whether the source has the model and whether its
  /// configuration (`config_json` when not empty) reads, without loading it. A load that fails
  /// here leaves the model as it was (CpuExecutor::load_model()). By default nothing is checked.
  virtual Result<void> poll(const std::string& name, const std::string& config_json) const {
    (void)name;
    (void)config_json;
    return {};
  }
  /// Where a model's files are read from when they are not the source's own: Triton's load with
  /// "file:" parameters, the model's files sent with the request.
  struct ModelDirectory {
    std::string path;         ///< a model directory as the source's (version directories)
    std::string config_json;  ///< its configuration, a ModelConfig as JSON
  };
  /// Reads model `name` from `directory` from now on, its own again when `directory.path` is
  /// empty; returns what it replaces (an empty path: the source's own). Thread-safe. By default
  /// UNIMPLEMENTED for a path: a source without directories.
  virtual Result<ModelDirectory> set_model_directory(const std::string& name,
                                                     ModelDirectory directory) const {
    if (directory.path.empty()) return ModelDirectory{};
    return Error(StatusCode::Unimplemented,
                 "this model source cannot read model '" + name + "' from a directory");
  }
};

}  // namespace sonic
