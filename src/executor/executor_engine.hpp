// sonic — CpuExecutor's engine: the model registry, loads from a model source, the thread pool,
// the batchers, statistics. CpuExecutor (include/sonic/executor.hpp) forwards to it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/thread_pool.hpp"
#include "executor/classification.hpp"
#include "executor/dynamic_batcher.hpp"
#include "executor/sequence_batcher.hpp"
#include "sonic/error.hpp"
#include "sonic/executor.hpp"
#include "sonic/metadata.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"
#include "sonic/validate.hpp"

namespace sonic::detail {

/// What CpuExecutor does, documented there. Thread-safe.
class ExecutorEngine {
 public:
  explicit ExecutorEngine(std::size_t threads) : pool_(threads) {}

  /// Registers a model, or another version of a registered one (requests that name no
  /// version get the highest: numbers compare as numbers). Throws sonic::Error(AlreadyExists)
  /// for a name and version taken, or a name a model source serves, and
  /// Error(InvalidArgument) for a model without exactly one function, or with a scheduling it
  /// cannot have.
  void add_model(Model model) {
    if (auto ok = check_functions(model); !ok) throw ok.error();
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = models_.find(model.name);
    if (it == models_.end()) {
      std::string name = model.name;  // the entry takes the model
      models_[name] = {make_entry(std::move(model), false)};
      return;
    }
    for (const auto& entry : it->second) {
      if (entry->from_source || entry->model.version == model.version) {
        throw Error(StatusCode::AlreadyExists, "model '" + model.name + "' version '" +
                                                   model.version + "' is already registered");
      }
    }
    add_version(it->second, make_entry(std::move(model), false));
  }

  /// Whether a model (and version, unless empty: its default version) is registered and
  /// loaded.
  bool has_model(const std::string& name, const std::string& version = {}) const {
    return find(name, version).ok();
  }

  /// Takes a model, every version of it, out of service (KServe RepositoryModelUnload): its
  /// requests fail with UNAVAILABLE until load_model(). A model of the source is dropped
  /// (requests under way keep it until they end). NOT_FOUND for a name neither registered nor in
  /// the source.
  Result<void> unload_model(const std::string& name) {
    if (in_source(name)) {
      std::lock_guard<std::mutex> lock(mutex_);
      models_.erase(name);
      states_[name] = "unloaded";
      return {};
    }
    return set_loaded(name, false);
  }

  /// Puts a model in service (KServe RepositoryModelLoad): a model of the source is read again
  /// from it, every version its policy selects, as Triton reloads a model from its repository
  /// (requests under way finish on the version they started with); a registered one is put back. On
  /// failure the model stays out of service and the error is its state's reason. `config_json`, for
  /// a model of the source: a ModelConfig as JSON that replaces its own for this load; a registered
  /// model takes none (INVALID_ARGUMENT). A load of the source takes at most the load timeout
  /// (set_load_timeout()): DEADLINE_EXCEEDED past it. Loads of different models run at once.
  Result<void> load_model(const std::string& name, const std::string& config_json = {}) {
    if (!in_source(name)) {
      if (!config_json.empty()) {
        return Error(StatusCode::InvalidArgument,
                     "model '" + name + "' is built into this program: it takes no configuration");
      }
      return set_loaded(name, true);
    }
    auto one_load = lock_loads_of(name);
    return load_from_source(name, config_json);
  }

  /// How long a load of a model of the source may take (0: no limit; default 300 s). A load
  /// that takes longer fails with DEADLINE_EXCEEDED and leaves the model UNAVAILABLE, its reason
  /// saying so; the backend's call cannot be interrupted, so it goes on, on a thread of its own,
  /// and its result is dropped when it comes. Until it does, loads of that model fail at once
  /// (UNAVAILABLE), so a model that never returns holds one thread, not one per attempt.
  void set_load_timeout(std::chrono::milliseconds timeout) {
    std::lock_guard<std::mutex> lock(mutex_);
    load_timeout_ = timeout;
  }

  /// Models come from `source` too: `load_model()` reads them from it, and with `on_demand` a
  /// request for a model the executor does not hold loads it first (the fallback's way: only
  /// the models a job needs are read). Registered models keep precedence.
  void set_source(std::shared_ptr<const ModelSource> source, bool on_demand) {
    std::lock_guard<std::mutex> lock(mutex_);
    source_ = std::move(source);
    load_on_demand_ = on_demand;
  }

  /// Every model, registered or in the source, and its state: READY, LOADING, or UNAVAILABLE
  /// with the reason ("unloaded", or why it failed to load) (KServe RepositoryIndex). As in
  /// Triton, a model held in several versions has an entry for each, and one not held an entry
  /// with no version.
  std::vector<ModelIndex> repository_index() const {
    std::map<std::string, std::vector<ModelIndex>> index;
    for (const auto& name : source_names()) index[name] = {{name, "", "UNAVAILABLE", "unloaded"}};
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [name, reason] : states_) index[name] = {{name, "", "UNAVAILABLE", reason}};
    for (const auto& name : loading_) {
      if (!models_.count(name)) index[name] = {{name, "", "LOADING", ""}};
    }
    for (const auto& [name, versions] : models_) {
      auto& entries = index[name];
      entries.clear();
      for (const auto& entry : versions) {
        const bool loaded = entry->loaded.load();
        entries.push_back({name, entry->model.version, loaded ? "READY" : "UNAVAILABLE",
                           loaded ? "" : "unloaded"});
      }
    }
    std::vector<ModelIndex> all;
    for (auto& [name, entries] : index) {
      for (auto& entry : entries) all.push_back(std::move(entry));
    }
    return all;
  }

  /// Names of the registered models, sorted.
  std::vector<std::string> model_names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> names;
    for (const auto& [name, versions] : models_) names.push_back(name);
    return names;
  }

  /// Whether a request for the model can run here: it is loaded, or an on-demand source has it
  /// (and it has not failed to load). Cheap enough for each failed request: it loads nothing.
  bool serves(const std::string& name, const std::string& version = {}) const {
    if (find(name, version)) return true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!source_ || !load_on_demand_ || states_.count(name) || models_.count(name)) return false;
    }
    return in_source(name);
  }

  /// Whether the model merges its requests (dynamic_batching): a server then hands them all to
  /// it at once, rather than a few per connection, so that its batches can fill.
  bool batches(const std::string& name, const std::string& version = {}) const {
    auto found = find(name, version);
    return found && (*found)->batcher != nullptr;
  }

  /// A model's metadata (KServe ModelMetadata): that of the version asked for (the default
  /// one when empty), listing every version held and in service, as Triton lists its ready
  /// versions.
  Result<ModelMetadata> metadata(const std::string& name, const std::string& version = {}) const {
    auto entry = find(name, version);
    if (!entry) return entry.error();
    ModelMetadata metadata = (*entry)->metadata;
    metadata.versions.clear();
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = models_.find(name); it != models_.end()) {
      for (const auto& e : it->second) {
        if (e->loaded.load()) metadata.versions.push_back(e->model.version);
      }
    }
    return metadata;
  }

  /// A model's definition; NOT_FOUND names what is missing.
  Result<std::shared_ptr<const Model>> model(const std::string& name,
                                             const std::string& version = {}) const {
    auto entry = find(name, version);
    if (!entry) return entry.error();
    return std::shared_ptr<const Model>(*entry, &(*entry)->model);
  }

  /// Runs a request on the calling thread: validation, the model, the requested outputs.
  /// `queued_since` is when the request arrived, for the queue statistic. A decoupled model
  /// answers UNIMPLEMENTED: its responses come through infer_responses().
  Result<InferResult> infer(const InferRequest& request,
                            Clock::time_point queued_since = Clock::now()) {
    auto found = find_or_load(request.model_name(), request.model_version());
    if (!found) return found.error();
    return infer_on(*found, request, queued_since);
  }

  /// Runs the request on the calling thread, now, if its model is a quick one: its recent
  /// executions took less than `budget` each (a moving mean), and it neither merges requests,
  /// keeps sequences, nor answers through a stream; and if the request's inputs are at most
  /// kQuickInputBytes. Otherwise runs nothing and returns nothing:
  /// the caller hands the request to infer_async(). A model that has not run yet is not quick,
  /// nor is one this executor does not hold. For a server's network thread: quick models there
  /// save two thread hand-offs per request, while a model that turns slow costs that thread one
  /// execution before its requests go to the pool again.
  std::optional<Result<InferResult>> infer_if_quick(const InferRequest& request,
                                                    std::chrono::nanoseconds budget) {
    // A model's time grows with its inputs: a large request is not taken for a quick one on
    // the strength of small ones (nor can a client make a network thread copy megabytes).
    std::size_t input_bytes = 0;
    for (const auto& input : request.inputs()) input_bytes += input.tensor.byte_size();
    if (input_bytes > CpuExecutor::kQuickInputBytes) return std::nullopt;
    auto found = find(request.model_name(), request.model_version());
    if (!found) return std::nullopt;
    Entry& entry = **found;
    const std::int64_t recent = entry.recent_compute_ns.load(std::memory_order_relaxed);
    if (entry.batcher || entry.sequencer || entry.model.is_decoupled() || recent < 0 ||
        recent >= budget.count()) {
      return std::nullopt;
    }
    return run_counted(entry, request, Clock::now());
  }

  /// Runs a request of any model on the calling thread, handing each of its responses to
  /// `respond` as the model makes it: one for a model that is not decoupled, any number for a
  /// decoupled one. Returns the request's outcome: an Error, after which no response follows,
  /// or success once the last response was handed over.
  Result<void> infer_responses(const InferRequest& request,
                               const std::function<void(InferResult)>& respond,
                               Clock::time_point queued_since = Clock::now()) {
    auto found = find_or_load(request.model_name(), request.model_version());
    if (!found) return found.error();
    Entry& entry = **found;
    if (!entry.model.is_decoupled()) {
      auto result = infer_on(*found, request, queued_since);
      if (!result) return result.error();
      respond(std::move(*result));
      return {};
    }
    const Model& model = entry.model;
    auto started = Clock::now();
    add(entry.queue, started - queued_since);
    Result<void> outcome = validate(entry, request);
    if (outcome) {
      ResponseSink sink = [&](std::vector<NamedTensor> outputs) {
        // Classification was checked with the request; the model's own outputs are kept if
        // its tensors defy their declared types.
        auto chosen = requested(model, request, outputs);
        respond(InferResult(model.name, model.version, request.request_id(),
                            chosen ? std::move(*chosen) : std::move(outputs)));
      };
      try {
        outcome = model.decoupled(request, sink);
      } catch (const Error& e) {
        outcome = e;
      } catch (const std::exception& e) {
        outcome = Error(StatusCode::Internal, "model '" + model.name + "' failed: " + e.what());
      }
    }
    count(entry, request, outcome.ok(), Clock::now() - queued_since);
    return outcome;
  }

  /// infer_responses() on the pool. Contract: `respond` runs on the pool thread that runs the
  /// request, once per response and in order; then `done` runs exactly once with the
  /// request's outcome, on that thread, never inside this call. Borrowed input tensors are read
  /// until `done` is called.
  void infer_responses_async(InferRequest request, std::function<void(InferResult)> respond,
                             Callback<void> done) {
    auto queued = Clock::now();
    pool_.post([this, request = std::move(request), respond = std::move(respond),
                done = std::move(done),
                queued]() mutable { done(infer_responses(request, respond, queued)); });
  }

  /// Runs a request on the pool. Contract: `done` runs exactly once, on a pool thread, never
  /// inside this call; a request for an unknown model completes with NOT_FOUND. Borrowed input
  /// tensors are read until `done` is called.
  /// A model with dynamic_batching queues the request to be merged with others (see
  /// DynamicBatching); one with sequence_batching queues it behind the earlier requests of its
  /// sequence, in the order of the calls. `done` still runs on a pool thread.
  void infer_async(InferRequest request, Callback<InferResult> done) {
    auto queued = Clock::now();
    // The model is looked up once, here; one that is not held yet may load on a pool thread.
    if (auto found = find(request.model_name(), request.model_version()); found) {
      std::shared_ptr<Entry> entry = std::move(*found);
      if (entry->batcher || entry->sequencer) {
        return submit_scheduled(entry, std::move(request), std::move(done), queued);
      }
      pool_.post([entry = std::move(entry), request = std::move(request), done = std::move(done),
                  queued]() mutable { done(infer_on(entry, request, queued)); });
      return;
    }
    pool_.post([this, request = std::move(request), done = std::move(done), queued]() mutable {
      auto found = find_or_load(request.model_name(), request.model_version());
      if (!found) return done(found.error());
      if ((*found)->batcher || (*found)->sequencer) {
        return submit_scheduled(*found, std::move(request), std::move(done), queued);
      }
      done(infer_on(*found, request, queued));
    });
  }

  /// Runs `work` on the pool, after the requests and work posted before it: for what a server
  /// does on a request before its model (decompressing its tensors, say), so that its network
  /// threads stay free. `work` must not throw.
  void run_async(detail::UniqueFunction<void()> work) { pool_.post(std::move(work)); }

  /// The pool's threads: how many requests run at once.
  std::size_t threads() const { return pool_.size(); }

  /// Statistics of one model; NOT_FOUND if it is not registered.
  Result<ModelStatistics> statistics(const std::string& name,
                                     const std::string& version = {}) const {
    auto found = find(name, version, Loaded::kEither);
    if (!found) return found.error();
    return snapshot(**found);
  }

  /// Statistics of every model.
  std::vector<ModelStatistics> all_statistics() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<ModelStatistics> all;
    for (const auto& [name, versions] : models_) {
      for (const auto& entry : versions) all.push_back(snapshot(*entry));
    }
    return all;
  }

 private:
  struct Counter {
    std::atomic<std::uint64_t> count{0};
    std::atomic<std::uint64_t> ns{0};
  };
  struct BatchCounters {
    Duration compute_input, compute_infer, compute_output;
  };
  struct Entry {
    Model model;
    ModelMetadata metadata;  // the model's, made once: each request is checked against it
    std::shared_ptr<detail::DynamicBatcher> batcher;     // with dynamic_batching
    std::shared_ptr<detail::SequenceBatcher> sequencer;  // with sequence_batching
    std::mutex batch_stats_mutex;
    std::map<std::uint64_t, BatchCounters> batch_stats;  // merged executions, by batch size
    bool from_source = false;
    std::atomic<bool> loaded{true};
    Counter success, fail, queue, compute_input, compute_infer, compute_output;
    std::atomic<std::uint64_t> inference_count{0}, execution_count{0}, last_inference_ms{0};
    // A moving mean of the model's recent execution times (-1: none yet), for infer_if_quick().
    std::atomic<std::int64_t> recent_compute_ns{-1};
  };

  static std::uint64_t now_ms() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
  }
  static void accumulate(Duration& duration, Clock::duration elapsed) {
    duration.count += 1;
    duration.ns += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  }
  static void add(Counter& counter, Clock::duration elapsed) {
    counter.count.fetch_add(1, std::memory_order_relaxed);
    counter.ns.fetch_add(static_cast<std::uint64_t>(
                             std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()),
                         std::memory_order_relaxed);
  }
  static Duration read(const Counter& counter) {
    return {counter.count.load(std::memory_order_relaxed),
            counter.ns.load(std::memory_order_relaxed)};
  }
  static ModelStatistics snapshot(Entry& e) {
    ModelStatistics s;
    s.name = e.model.name;
    s.version = e.model.version;
    s.last_inference_ms = e.last_inference_ms.load(std::memory_order_relaxed);
    s.inference_count = e.inference_count.load(std::memory_order_relaxed);
    s.execution_count = e.execution_count.load(std::memory_order_relaxed);
    s.success = read(e.success);
    s.fail = read(e.fail);
    s.queue = read(e.queue);
    s.compute_input = read(e.compute_input);
    s.compute_infer = read(e.compute_infer);
    s.compute_output = read(e.compute_output);
    std::lock_guard<std::mutex> lock(e.batch_stats_mutex);
    for (const auto& [size, counters] : e.batch_stats) {
      s.batch_stats.push_back(
          {size, counters.compute_input, counters.compute_infer, counters.compute_output});
    }
    return s;
  }

  // With a batch dimension, each element of the first dimension counts as one inference.
  static std::uint64_t batch_size(const Model& model, const InferRequest& request) {
    if (model.max_batch_size > 0 && !request.inputs().empty() &&
        !request.inputs().front().tensor.shape().empty()) {
      auto n = request.inputs().front().tensor.shape().front();
      return n > 0 ? static_cast<std::uint64_t>(n) : 1;
    }
    return 1;
  }

  enum class Loaded { kOnly, kEither };

  Result<void> set_loaded(const std::string& name, bool loaded) {
    auto entry = find(name, {}, Loaded::kEither);
    if (!entry) return entry.error();
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = models_.find(name); it != models_.end()) {
      for (const auto& version : it->second) version->loaded.store(loaded);
    }
    return {};
  }

  std::vector<std::string> source_names() const {
    std::shared_ptr<const ModelSource> source;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      source = source_;
    }
    return source ? source->model_names() : std::vector<std::string>{};
  }

  // A model of the source (loaded from it, out of service, or there to load) that no
  // registered model hides.
  bool in_source(const std::string& name) const {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = models_.find(name);
      if (it != models_.end()) return it->second.back()->from_source;
      if (states_.count(name)) return true;
    }
    auto names = source_names();
    return std::binary_search(names.begin(), names.end(), name);
  }

  // One request run on the calling thread, with its statistics and server timing.
  static Result<InferResult> run_counted(Entry& entry, const InferRequest& request,
                                         Clock::time_point queued_since) {
    auto started = Clock::now();
    add(entry.queue, started - queued_since);
    auto result = run(entry.model, request, entry);
    auto finished = Clock::now();
    count(entry, request, result.ok(), finished - queued_since);
    if (result) {
      result->timing().server_queue = started - queued_since;
      result->timing().server_compute = finished - started;
    }
    return result;
  }

  // An entry for a model, with its batcher when it batches. The batcher holds the entry weakly:
  // an unloaded model's queued requests still complete (with UNAVAILABLE).
  std::shared_ptr<Entry> make_entry(Model model, bool from_source) {
    auto entry = std::make_shared<Entry>();
    entry->model = std::move(model);
    entry->metadata = entry->model.metadata();
    entry->from_source = from_source;
    const Model& m = entry->model;
    if (m.dynamic_batching && m.max_batch_size > 0 && m.compute) {
      std::weak_ptr<Entry> weak = entry;
      entry->batcher = std::make_shared<detail::DynamicBatcher>(
          *m.dynamic_batching, m.max_batch_size, m.instances,
          [this, weak](std::vector<detail::DynamicBatcher::Pending> batch) {
            execute_batch(weak.lock(), std::move(batch));
          },
          [this](detail::UniqueFunction<void()> runner) { pool_.post(std::move(runner)); });
    }
    if (m.sequence_batching) {
      std::weak_ptr<Entry> weak = entry;
      entry->sequencer = std::make_shared<detail::SequenceBatcher>(
          *m.sequence_batching, m.name, m.max_batch_size,
          [weak](const InferRequest& model_request) -> Result<std::vector<NamedTensor>> {
            auto alive = weak.lock();
            if (!alive) return Error(StatusCode::Unavailable, "the model was unloaded");
            return compute_guarded(alive->model, model_request);
          },
          [this](detail::UniqueFunction<void()> runner) { pool_.post(std::move(runner)); });
    }
    return entry;
  }

  // infer() of a model found: on this thread (a stateful model's sequence queue included).
  static Result<InferResult> infer_on(const std::shared_ptr<Entry>& entry,
                                      const InferRequest& request, Clock::time_point queued) {
    if (entry->model.is_decoupled()) {
      // Triton's code (UNSUPPORTED is UNIMPLEMENTED on gRPC) and words (infer_handler.cc).
      return Error(StatusCode::Unimplemented,
                   "ModelInfer RPC doesn't support models with decoupled transaction policy "
                   "(model '" +
                       entry->model.name + "' answers through a stream)");
    }
    if (entry->sequencer) return run_in_sequence(entry, request, queued);
    return run_counted(*entry, request, queued);
  }

  // Folds one execution's time into the model's moving mean (weight 1/8: a slow execution
  // shows at once, a run of quick ones brings the mean back down within a few dozen). Updates
  // from threads at once may lose one another's: the mean is a hint.
  static void remember_compute_time(Entry& entry, Clock::duration took) {
    const std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
    const std::int64_t mean = entry.recent_compute_ns.load(std::memory_order_relaxed);
    entry.recent_compute_ns.store(mean < 0 ? ns : mean + (ns - mean) / 8,
                                  std::memory_order_relaxed);
  }

  static Result<void> check_functions(const Model& model) {
    if (static_cast<bool>(model.compute) == model.is_decoupled()) {
      return Error(StatusCode::InvalidArgument,
                   "model '" + model.name + "' needs one function: compute or decoupled");
    }
    if (model.sequence_batching && (!model.compute || model.dynamic_batching)) {
      return Error(StatusCode::InvalidArgument,
                   "model '" + model.name +
                       "': sequence_batching needs a compute function and no dynamic_batching");
    }
    return {};
  }

  // The model's function, its exceptions made errors.
  static Result<std::vector<NamedTensor>> compute_guarded(const Model& model,
                                                          const InferRequest& request) {
    try {
      return model.compute(request);
    } catch (const Error& e) {
      return e;
    } catch (const std::exception& e) {
      return Error(StatusCode::Internal, "model '" + model.name + "' failed: " + e.what());
    }
  }

  // A request for a batching or stateful model, checked on its own first (a bad one fails
  // alone, at once), then queued.
  void submit_scheduled(const std::shared_ptr<Entry>& entry, InferRequest request,
                        Callback<InferResult> done, Clock::time_point queued) {
    if (entry->batcher)
      return submit_to_batcher(entry, std::move(request), std::move(done), queued);
    if (auto ok = validate(*entry, request); !ok) {
      count(*entry, request, false, Clock::now() - queued);
      pool_.post([done = std::move(done), error = ok.error()]() mutable { done(error); });
      return;
    }
    entry->sequencer->submit(
        std::move(request), [entry, done = std::move(done), queued](
                                const InferRequest& r, Result<std::vector<NamedTensor>> outputs,
                                Clock::time_point started) mutable {
          done(sequence_result(*entry, r, std::move(outputs), queued, started));
        });
  }

  // infer() of a stateful model: its turn in its sequence, on this thread.
  static Result<InferResult> run_in_sequence(const std::shared_ptr<Entry>& entry,
                                             const InferRequest& request,
                                             Clock::time_point queued) {
    if (auto ok = validate(*entry, request); !ok) {
      count(*entry, request, false, Clock::now() - queued);
      return ok.error();
    }
    Result<InferResult> result = Error(StatusCode::Internal, "the request did not run");
    entry->sequencer->run_here(
        request, [&](const InferRequest& r, Result<std::vector<NamedTensor>> outputs,
                     Clock::time_point started) {
          result = sequence_result(*entry, r, std::move(outputs), queued, started);
        });
    return result;
  }

  // A stateful model's request once it ran: its statistics and result.
  static Result<InferResult> sequence_result(Entry& entry, const InferRequest& request,
                                             Result<std::vector<NamedTensor>> outputs,
                                             Clock::time_point queued, Clock::time_point started) {
    const auto finished = Clock::now();
    if (outputs) {
      add(entry.queue, started - queued);
      add(entry.compute_infer, finished - started);
    }
    count(entry, request, outputs.ok(), finished - queued);
    if (!outputs) return outputs.error();
    const Model& model = entry.model;
    auto chosen = requested(model, request, std::move(*outputs));
    if (!chosen) return chosen.error();
    InferResult result(model.name, model.version, request.request_id(), std::move(*chosen));
    result.timing().server_queue = started - queued;
    result.timing().server_compute = finished - started;
    return result;
  }

  // A request for a batching model: checked on its own first (a bad one fails alone, at once),
  // then queued.
  void submit_to_batcher(const std::shared_ptr<Entry>& entry, InferRequest request,
                         Callback<InferResult> done, Clock::time_point queued) {
    const Model& model = entry->model;
    Result<void> ok = validate(*entry, request);
    const std::int64_t batch = detail::batch_of(request).value_or(-1);
    if (ok && batch > model.max_batch_size) {
      // Triton's words for the same refusal.
      ok = Error(StatusCode::InvalidArgument,
                 "inference request batch-size must be <= " + std::to_string(model.max_batch_size) +
                     " for '" + model.name + "'");
    }
    if (!ok) {
      count(*entry, request, false, Clock::now() - queued);
      pool_.post([done = std::move(done), error = ok.error()]() mutable { done(error); });
      return;
    }
    entry->batcher->submit({std::move(request), std::move(done), queued, batch});
  }

  // Runs a batch the batcher formed, on a pool thread: one request as infer() runs it, several
  // merged into one execution and split back. If the merged execution fails, each request runs
  // alone, so that one bad request fails alone.
  void execute_batch(const std::shared_ptr<Entry>& entry,
                     std::vector<detail::DynamicBatcher::Pending> batch) {
    if (!entry) {
      for (auto& p : batch) p.done(Error(StatusCode::Unavailable, "the model was unloaded"));
      return;
    }
    if (batch.size() == 1) {
      auto& p = batch.front();
      return p.done(run_counted(*entry, p.request, p.queued));
    }
    const Model& model = entry->model;
    const auto t0 = Clock::now();
    std::vector<const InferRequest*> parts;
    std::int64_t total = 0;
    for (const auto& p : batch) {
      parts.push_back(&p.request);
      total += p.batch;
      add(entry->queue, t0 - p.queued);
    }
    InferRequest merged = detail::merge_requests(parts);
    const auto t1 = Clock::now();
    // A merged execution that fails, however, is run again request by request below.
    Result<std::vector<NamedTensor>> computed = compute_guarded(model, merged);
    const auto t2 = Clock::now();
    // Each output's row boundaries (walked once for BYTES), then each request's rows of it.
    std::vector<std::vector<std::size_t>> bounds;
    bool sliced = computed.ok();
    for (std::size_t k = 0; sliced && k < computed->size(); ++k) {
      auto offsets = detail::row_offsets((*computed)[k].tensor, total);
      sliced = offsets.has_value();
      if (sliced) bounds.push_back(std::move(*offsets));
    }
    std::vector<std::vector<NamedTensor>> split(batch.size());
    for (std::size_t r = 0, first = 0; sliced && r < batch.size(); ++r) {
      for (std::size_t k = 0; k < computed->size(); ++k) {
        const NamedTensor& out = (*computed)[k];
        split[r].push_back({out.name,
                            detail::rows_of(out.tensor, bounds[k], static_cast<std::int64_t>(first),
                                            batch[r].batch),
                            out.parameters});
      }
      first += static_cast<std::size_t>(batch[r].batch);
    }
    if (!sliced) {  // each on its own: only a request that fails alone fails
      for (auto& p : batch) p.done(run_counted(*entry, p.request, p.queued));
      return;
    }
    const auto t3 = Clock::now();
    add(entry->compute_input, t1 - t0);
    add(entry->compute_infer, t2 - t1);
    add(entry->compute_output, t3 - t2);
    {
      std::lock_guard<std::mutex> lock(entry->batch_stats_mutex);
      BatchCounters& counters = entry->batch_stats[static_cast<std::uint64_t>(total)];
      accumulate(counters.compute_input, t1 - t0);
      accumulate(counters.compute_infer, t2 - t1);
      accumulate(counters.compute_output, t3 - t2);
    }
    entry->inference_count.fetch_add(static_cast<std::uint64_t>(total), std::memory_order_relaxed);
    entry->execution_count.fetch_add(1, std::memory_order_relaxed);
    entry->last_inference_ms.store(now_ms(), std::memory_order_relaxed);
    for (std::size_t r = 0; r < batch.size(); ++r) {
      auto& p = batch[r];
      add(entry->success, t3 - p.queued);
      auto chosen = requested(model, p.request, std::move(split[r]));
      if (!chosen) {
        p.done(chosen.error());
        continue;
      }
      InferResult result(model.name, model.version, p.request.request_id(), std::move(*chosen));
      result.timing().server_queue = t0 - p.queued;
      result.timing().server_compute = t3 - t0;
      p.done(std::move(result));
    }
  }

  // What a load of the source gives, shared by the thread that runs it and the caller that
  // waits for it (which may stop waiting: the thread then finishes alone).
  struct LoadCall {
    std::mutex mutex;
    std::condition_variable finished;
    std::optional<Result<std::vector<Model>>> models;
  };

  static bool has_returned(LoadCall& call) {
    std::lock_guard<std::mutex> lock(call.mutex);
    return call.models.has_value();
  }

  // The lock that makes loads of one model take turns (concurrent first requests for a model
  // read it once); loads of different models run at once, so one slow model delays no other.
  std::unique_lock<std::mutex> lock_loads_of(const std::string& name) {
    std::shared_ptr<std::mutex> turn;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& slot = load_turns_[name];
      if (!slot) slot = std::make_shared<std::mutex>();
      turn = slot;
    }
    // The map keeps the mutex for as long as the executor lives: one per model name loaded.
    return std::unique_lock<std::mutex>(*turn);
  }

  // The source's versions of a model, read on a thread of its own within `timeout`; a load
  // that passes it is remembered in stuck_loads_ until it returns.
  Result<std::vector<Model>> read_from_source(const std::shared_ptr<const ModelSource>& source,
                                              const std::string& name,
                                              const std::string& config_json,
                                              std::chrono::milliseconds timeout) {
    if (timeout.count() == 0) return source->load_versions(name, config_json);
    auto call = std::make_shared<LoadCall>();
    // The thread holds only the source and the call: it may outlive this executor.
    std::thread([call, source, name, config_json] {
      Result<std::vector<Model>> models = Error(StatusCode::Internal, "the load did not run");
      try {
        models = source->load_versions(name, config_json);
      } catch (const std::exception& e) {
        models = Error(StatusCode::Internal, "loading '" + name + "' threw: " + e.what());
      } catch (...) {
        models = Error(StatusCode::Internal, "loading '" + name + "' threw");
      }
      std::lock_guard<std::mutex> lock(call->mutex);
      call->models = std::move(models);
      call->finished.notify_all();
    }).detach();
    {
      std::unique_lock<std::mutex> wait(call->mutex);
      call->finished.wait_for(wait, timeout, [&] { return call->models.has_value(); });
      if (call->models) return std::move(*call->models);
    }
    // Not with call->mutex held: load_from_source() takes mutex_, then a stuck call's mutex.
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stuck_loads_[name] = call;
    }
    return Error(StatusCode::DeadlineExceeded,
                 "loading model '" + name + "' took longer than its limit of " +
                     std::to_string(timeout.count()) +
                     " ms (the load goes on in the background; its result will not be used)");
  }

  // Called with lock_loads_of(name) held.
  Result<void> load_from_source(const std::string& name, const std::string& config_json = {}) {
    std::shared_ptr<const ModelSource> source;
    std::chrono::milliseconds timeout;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      source = source_;
      timeout = load_timeout_;
      if (auto stuck = stuck_loads_.find(name); stuck != stuck_loads_.end()) {
        if (!has_returned(*stuck->second)) {
          return Error(StatusCode::Unavailable,
                       "model '" + name +
                           "' cannot load now: its previous load, which passed its time limit, "
                           "has not returned yet");
        }
        stuck_loads_.erase(stuck);  // the thread keeps its own reference until it ends
      }
      loading_.insert(name);
    }
    auto models = read_from_source(source, name, config_json, timeout);
    if (models) {
      for (const auto& model : *models) {
        if (auto ok = check_functions(model); !ok) models = ok.error();
        if (!models) break;
      }
    }
    if (models && models->empty()) {
      models = Error(StatusCode::Internal, "the model source gave no version of '" + name + "'");
    }
    // Every version is made before any is served: a model is in service whole or not at all.
    Versions versions;
    if (models) {
      for (auto& model : *models) add_version(versions, make_entry(std::move(model), true));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    loading_.erase(name);
    if (!models) {
      models_.erase(name);
      states_[name] = models.error().message();
      return models.error();
    }
    models_[name] = std::move(versions);
    states_.erase(name);
    return {};
  }

  // find(), and with on-demand loading a model of the source read on its first request; one
  // that failed to load is not tried again (load_model() does).
  Result<std::shared_ptr<Entry>> find_or_load(const std::string& name, const std::string& version) {
    auto found = find(name, version);
    if (found || found.error().code() != StatusCode::NotFound) return found;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!source_ || !load_on_demand_ || states_.count(name)) return found;
    }
    if (!in_source(name)) return found;
    auto one_load = lock_loads_of(name);
    if (auto loaded_meanwhile = find(name, version);
        loaded_meanwhile || loaded_meanwhile.error().code() != StatusCode::NotFound) {
      return loaded_meanwhile;
    }
    if (auto loaded = load_from_source(name); !loaded) return loaded.error();
    return find(name, version);
  }

  Result<std::shared_ptr<Entry>> find(const std::string& name, const std::string& version,
                                      Loaded which = Loaded::kOnly) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = models_.find(name);
    if (it == models_.end()) {
      if (auto state = states_.find(name); state != states_.end()) {
        return Error(StatusCode::Unavailable,
                     "model '" + name + "' is not loaded: " + state->second);
      }
      // Triton's words (its clients look for them), and what there is instead.
      std::string message = "Request for unknown model: '" + name + "' is not found";
      std::size_t listed = 0;
      for (const auto& entry : models_) {
        if (listed == kModelsListed) {
          message += ", ...";
          break;
        }
        message += (listed++ == 0 ? " (models here: " : ", ") + entry.first;
      }
      if (listed > 0) message += ")";
      return Error(StatusCode::NotFound, message);
    }
    const Versions& versions = it->second;
    std::shared_ptr<Entry> entry = version.empty() ? versions.back() : nullptr;
    for (const auto& e : versions) {
      if (!entry && e->model.version == version) entry = e;
    }
    if (!entry) {
      // Triton's words, and the versions there are.
      std::string held;
      for (const auto& e : versions) held += (held.empty() ? "" : ", ") + e->model.version;
      return Error(StatusCode::NotFound, "Request for unknown model: '" + name + "' version " +
                                             version + " is not found (versions here: " + held +
                                             ")");
    }
    if (which == Loaded::kOnly && !entry->loaded.load()) {
      return Error(StatusCode::Unavailable,
                   "model '" + name + "' is unloaded (RepositoryModelLoad puts it back)");
    }
    return entry;
  }

  // A model's versions, ordered as versions are: numbers by value, the highest (the default)
  // last.
  using Versions = std::vector<std::shared_ptr<Entry>>;

  static bool version_before(const std::string& a, const std::string& b) {
    auto is_number = [](const std::string& v) {
      return !v.empty() &&
             std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (is_number(a) && is_number(b) && a.size() != b.size()) return a.size() < b.size();
    return a < b;
  }

  static void add_version(Versions& versions, std::shared_ptr<Entry> entry) {
    auto at =
        std::upper_bound(versions.begin(), versions.end(), entry, [](const auto& x, const auto& y) {
          return version_before(x->model.version, y->model.version);
        });
    versions.insert(at, std::move(entry));
  }

  static void count(Entry& entry, const InferRequest& request, bool succeeded,
                    Clock::duration elapsed) {
    add(succeeded ? entry.success : entry.fail, elapsed);
    if (!succeeded) return;
    entry.inference_count.fetch_add(batch_size(entry.model, request), std::memory_order_relaxed);
    entry.execution_count.fetch_add(1, std::memory_order_relaxed);
    entry.last_inference_ms.store(now_ms());
  }

  static Result<void> validate(const Entry& entry, const InferRequest& request) {
    const Model& model = entry.model;
    if (auto ok = validate_request(entry.metadata, request); !ok) return ok.error();
    for (const auto& wanted : request.outputs()) {
      if (auto k = detail::requested_class_count(wanted); !k) return k.error();
    }
    std::vector<std::string> missing;
    for (const auto& spec : model.inputs) {
      if (!request.find_input(spec.name) && !model.is_optional_input(spec.name)) {
        missing.push_back(spec.name);
      }
    }
    if (!missing.empty()) return missing_inputs(model, request, missing);
    return {};
  }

  // Triton's words for a request without all the required inputs (its core's request
  // validation): "expected 3 inputs but got 1 inputs for model 'm'. Got input(s) ['INPUT0'],
  // but missing required input(s) ['INPUT1','INPUT2']. Please provide all required input(s).",
  // with "expected number of inputs between 3 and 4" when the model has optional inputs.
  static Error missing_inputs(const Model& model, const InferRequest& request,
                              const std::vector<std::string>& missing) {
    auto quoted = [](const auto& names) {
      std::string list;
      for (const auto& name : names) list += (list.empty() ? "'" : ",'") + name + "'";
      return "[" + list + "]";
    };
    std::vector<std::string> given;
    for (const auto& input : request.inputs()) given.push_back(input.name);
    const std::size_t all = model.inputs.size();
    const std::size_t required = all - model.optional_inputs.size();
    std::string expected = required == all
                               ? "expected " + std::to_string(all) + " inputs"
                               : "expected number of inputs between " + std::to_string(required) +
                                     " and " + std::to_string(all);
    return Error(StatusCode::InvalidArgument,
                 expected + " but got " + std::to_string(given.size()) + " inputs for model '" +
                     model.name + "'. Got input(s) " + quoted(given) +
                     ", but missing required input(s) " + quoted(missing) +
                     ". Please provide all required input(s).");
  }

  // The outputs the request asked for (all of them when it named none), in its order; one
  // asked for with "classification" as its top classes (Triton's classification extension).
  static Result<std::vector<NamedTensor>> requested(const Model& model, const InferRequest& request,
                                                    std::vector<NamedTensor> computed) {
    if (request.outputs().empty()) return computed;
    std::vector<NamedTensor> outputs;
    static const std::vector<std::string> kNoLabels;
    for (const auto& wanted : request.outputs()) {
      auto k = detail::requested_class_count(wanted);
      if (!k) return k.error();
      for (auto& out : computed) {
        if (out.name != wanted.name) continue;
        if (*k == 0) {
          outputs.push_back(out);
          continue;
        }
        auto labels = model.labels.find(out.name);
        auto classes = detail::classify(out.tensor, model.max_batch_size > 0, *k,
                                        labels == model.labels.end() ? kNoLabels : labels->second);
        if (!classes) return classes.error();
        outputs.push_back({out.name, std::move(*classes), out.parameters});
      }
    }
    return outputs;
  }

  static Result<InferResult> run(const Model& model, const InferRequest& request, Entry& entry) {
    auto t0 = Clock::now();
    if (auto ok = validate(entry, request); !ok) return ok.error();
    auto t1 = Clock::now();
    add(entry.compute_input, t1 - t0);
    Result<std::vector<NamedTensor>> computed = compute_guarded(model, request);
    auto t2 = Clock::now();
    add(entry.compute_infer, t2 - t1);
    remember_compute_time(entry, t2 - t1);
    if (!computed) return computed.error();
    auto outputs = requested(model, request, std::move(*computed));
    add(entry.compute_output, Clock::now() - t2);
    if (!outputs) return outputs.error();
    return InferResult(model.name, model.version, request.request_id(), std::move(*outputs));
  }

  static constexpr std::size_t kModelsListed = 16;  // in a NOT_FOUND's message, at most

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
  detail::ThreadPool pool_;  // last: joined first, while the models still exist
};

}  // namespace sonic::detail
