// sonic — CpuExecutor's engine: the declaration of the class CpuExecutor
// (include/sonic/executor.hpp) forwards to. Its definitions, by job: executor_engine.cpp (the
// registry of models and versions, metadata, statistics), model_loading.cpp (models of a source:
// loads, their time limit, on-demand loading), infer_paths.cpp (running requests: on the caller's
// thread, on the pool, through the batchers), admission.cpp (a server's requests under way, and
// the early refusal of those that would miss their deadline). Counters in model_statistics.hpp,
// checks of models and requests in request_checks.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "executor/dynamic_batcher.hpp"
#include "executor/engine_host.hpp"
#include "executor/model_statistics.hpp"
#include "executor/sequence_batcher.hpp"
#include "executor/task_runner.hpp"
#include "sonic/error.hpp"
#include "sonic/executor.hpp"
#include "sonic/metadata.hpp"
#include "sonic/model.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

/// What CpuExecutor does, documented there. Every public member is thread-safe: the registry
/// is guarded by one mutex, never held while a model runs or a source loads; a model's
/// counters are atomics.
class ExecutorEngine {
 public:
  /// An engine whose tasks run as `options` say (CpuExecutorOptions).
  explicit ExecutorEngine(CpuExecutorOptions options)
      : host_(std::make_shared<EngineHost>(*this)),
        pool_(options.threads == 0 ? usable_cores() : options.threads,
              std::move(options.scheduler)) {}
  /// Models it loaded that run others stop reaching it first (their calls under way finish).
  ~ExecutorEngine() { host_->detach(); }
  ExecutorEngine(const ExecutorEngine&) = delete;
  ExecutorEngine& operator=(const ExecutorEngine&) = delete;

  /// Registers a model, or another version of a registered one (requests that name no
  /// version get the highest: numbers compare as numbers). Throws sonic::Error(AlreadyExists)
  /// for a name and version taken, or a name a model source serves, and
  /// Error(InvalidArgument) for a model without exactly one function, or with a scheduling it
  /// cannot have. Thread-safe.
  void add_model(Model model);

  /// Whether a model (and version, unless empty: its default version) is registered and
  /// loaded. Thread-safe.
  bool has_model(const std::string& name, const std::string& version = {}) const {
    return find(name, version).ok();
  }

  /// Takes a model, every version of it, out of service (KServe RepositoryModelUnload): its
  /// requests fail with UNAVAILABLE until load_model(). A model of the source is dropped
  /// (requests under way keep it until they end). NOT_FOUND for a name neither registered nor in
  /// the source. Thread-safe.
  Result<void> unload_model(const std::string& name);

  /// Puts a model in service (KServe RepositoryModelLoad): a model of the source is read again
  /// from it, every version its policy selects, as Triton reloads a model from its repository
  /// (requests under way finish on the version they started with); a registered one is put back. On
  /// failure the model stays out of service and the error is its state's reason. `config_json`, for
  /// a model of the source: a ModelConfig as JSON that replaces its own for this load; a registered
  /// model takes none (INVALID_ARGUMENT). A load of the source takes at most the load timeout
  /// (set_load_timeout()): DEADLINE_EXCEEDED past it. Loads of different models run at once;
  /// loads of one model take turns. Blocks the caller for the load.
  /// With a `directory`, the model's files are read from there from now on, `config_json` its
  /// configuration (CpuExecutor::load_model_from()); without, from the source's own. A load of
  /// the source polls it first (ModelSource::poll()).
  Result<void> load_model(const std::string& name, const std::string& config_json = {},
                          const std::string& directory = {});

  /// How long a load of a model of the source may take (0: no limit; default 300 s). A load
  /// that takes longer fails with DEADLINE_EXCEEDED and leaves the model UNAVAILABLE, its reason
  /// saying so; the backend's call cannot be interrupted, so it goes on, on a thread of its own,
  /// and its result is dropped when it comes. Until it does, loads of that model fail at once
  /// (UNAVAILABLE), so a model that never returns holds one thread, not one per attempt.
  /// Thread-safe; applies to loads that start after it.
  void set_load_timeout(std::chrono::milliseconds timeout);

  /// Models come from `source` too: `load_model()` reads them from it, and with `on_demand` a
  /// request for a model the executor does not hold loads it first (the fallback's way: only
  /// the models a job needs are read). Registered models keep precedence. Thread-safe.
  void set_source(std::shared_ptr<const ModelSource> source, bool on_demand);

  /// Every model, registered or in the source, and its state: READY, LOADING, or UNAVAILABLE
  /// with the reason ("unloaded", or why it failed to load) (KServe RepositoryIndex). As in
  /// Triton, a model held in several versions has an entry for each, and one not held an entry
  /// with no version. Thread-safe; asks the source for its names.
  std::vector<ModelIndex> repository_index() const;

  /// Names of the registered models, sorted. Thread-safe.
  std::vector<std::string> model_names() const;

  /// Whether a request for the model can run here: it is loaded, or an on-demand source has it
  /// (and it has not failed to load). Cheap enough for each failed request: it loads nothing.
  /// Thread-safe.
  bool serves(const std::string& name, const std::string& version = {}) const;

  /// Whether the model merges its requests (dynamic_batching): a server then hands them all to
  /// it at once, rather than a few per connection, so that its batches can fill. Thread-safe.
  bool batches(const std::string& name, const std::string& version = {}) const;

  /// A model's metadata (KServe ModelMetadata): that of the version asked for (the default
  /// one when empty), listing every version held and in service, as Triton lists its ready
  /// versions. Thread-safe.
  Result<ModelMetadata> metadata(const std::string& name, const std::string& version = {}) const;

  /// A model's definition; NOT_FOUND names what is missing. The pointer keeps the model alive
  /// after it is unloaded. Thread-safe.
  Result<std::shared_ptr<const Model>> model(const std::string& name,
                                             const std::string& version = {}) const;

  /// CpuExecutor::admit() (admission.cpp). Thread-safe.
  Result<Admission> admit(const InferRequest& request, bool shed);

  /// Runs a request on the calling thread: validation, the model, the requested outputs.
  /// `queued_since` is when the request arrived, for the queue statistic. A decoupled model
  /// answers UNIMPLEMENTED: its responses come through infer_responses(). A model not held yet
  /// is loaded first from an on-demand source. Thread-safe: requests run at once.
  Result<InferResult> infer(const InferRequest& request,
                            Clock::time_point queued_since = Clock::now());

  /// infer(), except that a model with dynamic_batching queues the request with the others, as
  /// Triton schedules an ensemble's steps and a Python model's BLS calls: the calling thread
  /// waits, and forms and runs the model's batches itself while no pool thread does
  /// (DynamicBatcher::run_here), so that the wait needs no free pool thread. For the host the
  /// executor lends its models. Thread-safe.
  Result<InferResult> infer_scheduled(const InferRequest& request,
                                      Clock::time_point queued_since = Clock::now());

  /// Runs the request on the calling thread, now, if its model is a quick one: its recent
  /// executions took less than `budget` each (a moving mean), and it neither merges requests,
  /// keeps sequences, nor answers through a stream; and if the request's inputs are at most
  /// kQuickInputBytes. Otherwise runs nothing and returns nothing:
  /// the caller hands the request to infer_async(). A model that has not run yet is not quick,
  /// nor is one this executor does not hold. For a server's network thread: quick models there
  /// save two thread hand-offs per request, while a model that turns slow costs that thread one
  /// execution before its requests go to the pool again. Thread-safe.
  std::optional<Result<InferResult>> infer_if_quick(const InferRequest& request,
                                                    std::chrono::nanoseconds budget);

  /// Runs a request of any model on the calling thread, handing each of its responses to
  /// `respond` as the model makes it: one for a model that is not decoupled, any number for a
  /// decoupled one. Returns the request's outcome: an Error, after which no response follows,
  /// or success once the last response was handed over. Thread-safe.
  Result<void> infer_responses(const InferRequest& request,
                               const std::function<void(InferResult)>& respond,
                               Clock::time_point queued_since = Clock::now());

  /// infer_responses() on the pool. Contract: `respond` runs on the pool thread that runs the
  /// request, once per response and in order; then `done` runs exactly once with the
  /// request's outcome, on that thread, never inside this call. Borrowed input tensors are read
  /// until `done` is called. Thread-safe.
  void infer_responses_async(InferRequest request, std::function<void(InferResult)> respond,
                             Callback<void> done);

  /// Runs a request on the pool. Contract: `done` runs exactly once, on a pool thread, never
  /// inside this call; a request for an unknown model completes with NOT_FOUND. Borrowed input
  /// tensors are read until `done` is called.
  /// A model with dynamic_batching queues the request to be merged with others (see
  /// DynamicBatching); one with sequence_batching queues it behind the earlier requests of its
  /// sequence, in the order of the calls. `done` still runs on a pool thread. Thread-safe.
  void infer_async(InferRequest request, Callback<InferResult> done);

  /// Runs `work` on the pool, after the requests and work posted before it: for what a server
  /// does on a request before its model (decompressing its tensors, say), so that its network
  /// threads stay free. `work` must not throw. Thread-safe.
  void run_async(detail::UniqueFunction<void()> work) { pool_.post(std::move(work)); }

  /// The pool's threads: how many requests run at once.
  std::size_t threads() const { return pool_.size(); }

  /// Takes a model of the source out of service because it can no longer compute
  /// (ModelHost::retire()): as unload_model(), with `reason` as its state. Thread-safe.
  void retire(const std::string& name, const std::string& reason);

  /// model(), for a model of this executor that runs others (ModelHost::load()): a model of
  /// the source not in service is loaded first, on demand or not. Thread-safe.
  Result<std::shared_ptr<const Model>> load_for_host(const std::string& name,
                                                     const std::string& version);

  /// Statistics of one model version, loaded or not; NOT_FOUND if it is not registered.
  /// Thread-safe: counters read while requests run may be a moment apart.
  Result<ModelStatistics> statistics(const std::string& name,
                                     const std::string& version = {}) const;

  /// Statistics of every version of every model held. Thread-safe.
  std::vector<ModelStatistics> all_statistics() const;

 private:
  // One version of a model, shared by the registry and the requests under way on it.
  struct Entry {
    Model model;
    ModelMetadata metadata;  // the model's, made once: each request is checked against it
    std::shared_ptr<detail::DynamicBatcher> batcher;     // with dynamic_batching
    std::shared_ptr<detail::SequenceBatcher> sequencer;  // with sequence_batching
    bool from_source = false;
    std::atomic<bool> loaded{true};
    ModelCounters stats;  // and the moving mean of execution times, for infer_if_quick()
  };

  // A model's versions, ordered as versions are: numbers by value, the highest (the default)
  // last.
  using Versions = std::vector<std::shared_ptr<Entry>>;

  // Which entries find() gives: only those in service, or those out of service too.
  enum class Loaded { kOnly, kEither };

  // What a load of the source gives (model_loading.cpp).
  struct LoadCall;

  // --- the registry (executor_engine.cpp) ---

  // The entry for a name and version (empty: the default one): NOT_FOUND in Triton's words,
  // listing what there is instead; UNAVAILABLE for a model out of service (unless kEither).
  Result<std::shared_ptr<Entry>> find(const std::string& name, const std::string& version,
                                      Loaded which = Loaded::kOnly) const;
  // find() with mutex_ held; `depth` counts the composing models followed to get here.
  Result<std::shared_ptr<Entry>> find_locked(const std::string& name, const std::string& version,
                                             Loaded which, int depth) const;
  Result<void> set_loaded(const std::string& name, bool loaded);
  static bool version_before(const std::string& a, const std::string& b);
  static void add_version(Versions& versions, std::shared_ptr<Entry> entry);
  // An entry for a model, with its batcher when it batches. The batcher holds the entry weakly:
  // an unloaded model's queued requests still complete (with UNAVAILABLE).
  std::shared_ptr<Entry> make_entry(Model model, bool from_source);

  // --- models of the source (model_loading.cpp) ---

  std::vector<std::string> source_names() const;
  // Takes a model's versions out of the registry, its state (why it is out) now `state`; the
  // caller, holding mutex_, lets them go once it has released it: whatever a model does as it
  // ends (a Python model's finalize()) then holds up no other model's requests.
  Versions take_out_locked(const std::string& name, const std::string& state);
  // A model of the source (loaded from it, out of service, or there to load) that no
  // registered model hides.
  bool in_source(const std::string& name) const;
  // The lock that makes loads of one model take turns (concurrent first requests for a model
  // read it once); loads of different models run at once, so one slow model delays no other.
  std::unique_lock<std::mutex> lock_loads_of(const std::string& name);
  // The source's versions of a model, read on a thread of its own within `timeout`; a load
  // that passes it is remembered in stuck_loads_ until it returns.
  Result<std::vector<Model>> read_from_source(const std::shared_ptr<const ModelSource>& source,
                                              const std::string& name,
                                              const std::string& config_json,
                                              std::chrono::milliseconds timeout);
  // Called with lock_loads_of(name) held.
  Result<void> load_from_source(const std::string& name, const std::string& config_json = {});
  // find(), and with on-demand loading a model of the source read on its first request; one
  // that failed to load is not tried again (load_model() does).
  Result<std::shared_ptr<Entry>> find_or_load(const std::string& name, const std::string& version);

  // --- running requests (infer_paths.cpp) ---

  // A request that ended after `elapsed`: a success, or a failure for `if_failed`.
  static void count(Entry& entry, const InferRequest& request, bool succeeded,
                    FailureReason if_failed, Clock::duration elapsed);
  static Result<std::vector<NamedTensor>> requested(const Model& model, const InferRequest& request,
                                                    std::vector<NamedTensor> computed);
  // Sets `failure` to the cause when it fails.
  static Result<InferResult> run(const Model& model, const InferRequest& request, Entry& entry,
                                 FailureReason& failure);
  static Result<InferResult> run_counted(Entry& entry, const InferRequest& request,
                                         Clock::time_point queued_since);
  static Result<InferResult> infer_on(const std::shared_ptr<Entry>& entry,
                                      const InferRequest& request, Clock::time_point queued);
  static Result<std::vector<NamedTensor>> compute_guarded(const Model& model,
                                                          const InferRequest& request);
  void submit_scheduled(const std::shared_ptr<Entry>& entry, InferRequest request,
                        Callback<InferResult> done, Clock::time_point queued);
  static Result<InferResult> run_in_sequence(const std::shared_ptr<Entry>& entry,
                                             const InferRequest& request, Clock::time_point queued);
  static Result<InferResult> sequence_result(Entry& entry, const InferRequest& request,
                                             Result<std::vector<NamedTensor>> outputs,
                                             Clock::time_point queued, Clock::time_point started);
  void submit_to_batcher(const std::shared_ptr<Entry>& entry, InferRequest request,
                         Callback<InferResult> done, Clock::time_point queued);
  static Result<std::int64_t> check_for_batcher(Entry& entry, const InferRequest& request,
                                                Clock::time_point queued);
  void execute_unmerged(Entry& entry, std::vector<detail::DynamicBatcher::Pending> batch);
  void execute_batch(const std::shared_ptr<Entry>& entry,
                     std::vector<detail::DynamicBatcher::Pending> batch);

  static constexpr std::size_t kModelsListed = 16;  // in a NOT_FOUND's message, at most
  // How deep composing models are followed for readiness: a deeper chain (or a loop among
  // models registered by hand; a repository refuses one) counts as not ready.
  static constexpr int kMaxComposingDepth = 16;

  mutable std::mutex mutex_;
  std::map<std::string, Versions> models_;
  std::map<std::string, std::string> states_;  // models of the source out of service, and why
  std::shared_ptr<const ModelSource> source_;
  bool load_on_demand_ = false;
  std::set<std::string> loading_;  // models of the source whose load is under way
  // Loads that passed their time limit, by model: none of that model starts until it returns.
  std::map<std::string, std::shared_ptr<LoadCall>> stuck_loads_;
  std::chrono::milliseconds load_timeout_{300'000};
  // One per model name: loads of a model take turns (never taken with mutex_ held).
  std::map<std::string, std::shared_ptr<std::mutex>> load_turns_;
  // Lent to the models loaded from the source; detached before the pool is joined.
  std::shared_ptr<EngineHost> host_;
  // Its own threads or a framework's scheduler. Last: drained first, while the models still
  // exist.
  TaskRunner pool_;
};

}  // namespace sonic::detail
