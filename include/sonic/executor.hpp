// sonic — the embedded CPU executor: a model registry and a thread pool that runs models
// in-process (the fallback when no server is left, and the engine of sonic-server). Compiled
// into sonic::executor; link it (or a backend, which links it) to use this.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/detail/unique_function.hpp"
#include "sonic/error.hpp"
#include "sonic/fallback.hpp"
#include "sonic/metadata.hpp"
#include "sonic/model.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"

namespace sonic {

namespace detail {
class ExecutorEngine;
class ModelCounters;
}  // namespace detail

/// A request a server took from the wire and has not answered yet, counted among its model's
/// requests under way (CpuExecutor::admit()): the wait a newer request can expect grows with
/// them. Move-only; destroying it (at the request's answer) takes the request off the count.
class SONIC_EXPORT Admission {
 public:
  Admission() = default;
  ~Admission();
  Admission(Admission&& other) noexcept;
  Admission& operator=(Admission&& other) noexcept;
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  /// The request will not reach its model: its caller went away (`why`: CANCELLED or
  /// DEADLINE_EXCEEDED) while a queue of the server's own held it. Counted as a failed request
  /// of its model, CANCELED, after `waited`; the request is then off the count.
  void abandon(const Error& why, std::chrono::nanoseconds waited);

 private:
  friend class detail::ExecutorEngine;
  explicit Admission(std::shared_ptr<detail::ModelCounters> counters)
      : counters_(std::move(counters)) {}
  std::shared_ptr<detail::ModelCounters> counters_;
};

/// The cores this process may use: the CPUs of its affinity mask (the calling thread's, which
/// threads inherit from the process: taskset, a batch system's cpuset), limited by the CPU
/// quota of its cgroup (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`: a container's --cpus, a
/// job slot's limit), rounded up; at least 1. A grid job is given a few cores of a node of 64
/// or more: this is its share, where std::thread::hardware_concurrency() is the node's. Read
/// anew at each call (a few small files).
SONIC_EXPORT std::size_t usable_cores();

/// A framework's own scheduler, for CpuExecutorOptions::scheduler: it receives each task of the
/// executor and runs it once, on one of the framework's threads.
using TaskScheduler = std::function<void(std::function<void()>)>;

/// How a CpuExecutor runs its work.
struct CpuExecutorOptions {
  /// How many requests run at once: the threads of the executor's own pool, or with a scheduler
  /// what the executor counts on from it (the servers' early refusals estimate waits by it).
  /// 0: usable_cores(), the job's cores, never the whole node's.
  std::size_t threads = 0;
  /// Unset: the executor starts a pool of `threads` threads. Set: it starts none and hands each
  /// task to this function (a framework's: a tbb::task_arena's enqueue, say), so that a job's
  /// fallback shares the framework's threads instead of doubling them. Contract:
  /// - Called from any thread, several at once (a caller of infer_async, a task's thread, a
  ///   client's network thread): thread-safe, quick, never throws.
  /// - Each function it is given runs exactly once, on any thread, never inside the call (the
  ///   executor's callbacks are never invoked inside the call that starts them).
  /// - A function runs the executor's oldest queued task: a model's execution, then the
  ///   request's `done`. It holds its thread while the model computes, and may block on the
  ///   models an ensemble step calls or on a model's first load; it never waits on the
  ///   framework. No scheduler thread may wait for the executor's work queued behind it (a
  ///   blocking Client::infer() with this fallback, say): were every one waiting, none would
  ///   run it.
  /// - Functions are cheap to copy and hold no reference into the executor: its destructor runs
  ///   on the destroying thread every task not started yet and waits for those running, so a
  ///   function run after that returns at once. The scheduler is not called once destruction
  ///   has begun; a call under way may return after it (a task may let go of the executor), and
  ///   the scheduler is kept until that call returns.
  TaskScheduler scheduler;
};

/// Runs registered models on a thread pool, or on a framework's scheduler (where these comments
/// say "a pool thread", read "a thread of the scheduler"). Thread-safe. Statistics follow
/// Triton's meaning so that sonic-server reports real numbers.
class SONIC_EXPORT CpuExecutor final : public Fallback {
 public:
  /// A pool of `threads` threads; 0: usable_cores(), the cores this process may use.
  explicit CpuExecutor(std::size_t threads = 0);
  /// A pool, or a framework's scheduler, as `options` say.
  explicit CpuExecutor(CpuExecutorOptions options);
  ~CpuExecutor() override;
  CpuExecutor(const CpuExecutor&) = delete;
  CpuExecutor& operator=(const CpuExecutor&) = delete;

  /// An executor holding the given models.
  static std::shared_ptr<CpuExecutor> with_models(std::vector<Model> models,
                                                  std::size_t threads = 0);
  /// An executor holding the given models, running them as `options` say.
  static std::shared_ptr<CpuExecutor> with_models(std::vector<Model> models,
                                                  CpuExecutorOptions options);

  /// Registers a model, or another version of a registered one (requests that name no
  /// version get the highest: numbers compare as numbers). Throws sonic::Error(AlreadyExists)
  /// for a name and version taken, or a name a model source serves, and
  /// Error(InvalidArgument) for a model without exactly one function, or with a scheduling it
  /// cannot have.
  void add_model(Model model);

  /// Whether a model (and version, unless empty: its default version) is registered and
  /// loaded.
  bool has_model(const std::string& name, const std::string& version = {}) const;

  /// Takes a model, every version of it, out of service (KServe RepositoryModelUnload): its
  /// requests fail with UNAVAILABLE until load_model(). A model of the source is dropped
  /// (requests under way keep it until they end). NOT_FOUND for a name neither registered nor in
  /// the source.
  Result<void> unload_model(const std::string& name);

  /// Puts a model in service (KServe RepositoryModelLoad): a model of the source is read again
  /// from it, every version its policy selects, as Triton reloads a model from its repository
  /// (requests under way finish on the version they started with); a registered one is put back. On
  /// failure the model stays out of service and the error is its state's reason, except that a load
  /// that fails its poll (see load_model_from()) leaves a model in service as it was.
  /// `config_json`, for a model of the source: a ModelConfig as JSON that replaces its own for this
  /// load; a registered model takes none (INVALID_ARGUMENT). A load of the source takes at most the
  /// load timeout (set_load_timeout()): DEADLINE_EXCEEDED past it. Loads of different models run at
  /// once.
  Result<void> load_model(const std::string& name, const std::string& config_json = {}) override;

  /// load_model(), the model's files read from `directory` (a model directory: its version
  /// directories) with `config_json` as its configuration, from now on: Triton's load with
  /// "file:" parameters. A later load_model() reads the source's own files again, and
  /// unload_model() lets the directory go. On failure the model reads the files it read before.
  /// Every load of a model of the source (this one and load_model()'s) first polls the source
  /// (ModelSource::poll()): a model whose files or configuration do not read fails with
  /// INTERNAL in Triton's words ("failed to load 'NAME', failed to poll from model repository:
  /// why") and stays as it was. INVALID_ARGUMENT without a source that reads directories.
  Result<void> load_model_from(const std::string& name, const std::string& directory,
                               const std::string& config_json);

  /// How long a load of a model of the source may take (0: no limit; default 300 s). A load
  /// that takes longer fails with DEADLINE_EXCEEDED and leaves the model UNAVAILABLE, its reason
  /// saying so; the backend's call cannot be interrupted, so it goes on, on a thread of its own,
  /// and its result is dropped when it comes. Until it does, loads of that model fail at once
  /// (UNAVAILABLE), so a model that never returns holds one thread, not one per attempt.
  void set_load_timeout(std::chrono::milliseconds timeout);

  /// Models come from `source` too: `load_model()` reads them from it, and with `on_demand` a
  /// request for a model the executor does not hold loads it first (the fallback's way: only
  /// the models a job needs are read). Registered models keep precedence.
  void set_source(std::shared_ptr<const ModelSource> source, bool on_demand);

  /// Every model, registered or in the source, and its state: READY, LOADING, or UNAVAILABLE
  /// with the reason ("unloaded", or why it failed to load) (KServe RepositoryIndex). As in
  /// Triton, a model held in several versions has an entry for each, and one not held an entry
  /// with no version.
  std::vector<ModelIndex> repository_index() const;

  /// Names of the registered models, sorted.
  std::vector<std::string> model_names() const;

  /// Whether a request for the model can run here: it is loaded, or an on-demand source has it
  /// (and it has not failed to load). Cheap enough for each failed request: it loads nothing.
  bool serves(const std::string& name, const std::string& version = {}) const override;

  /// Whether the model merges its requests (dynamic_batching): a server then hands them all to
  /// it at once, rather than a few per connection, so that its batches can fill.
  bool batches(const std::string& name, const std::string& version = {}) const;

  /// A model's metadata (KServe ModelMetadata): that of the version asked for (the default
  /// one when empty), listing every version held and in service, as Triton lists its ready
  /// versions.
  Result<ModelMetadata> metadata(const std::string& name, const std::string& version = {}) const;

  /// A model's definition; NOT_FOUND names what is missing.
  Result<std::shared_ptr<const Model>> model(const std::string& name,
                                             const std::string& version = {}) const override;

  /// For a server, as it takes a request from the wire, before it queues it anywhere: counts the
  /// request among its model's requests under way until the Admission returned is destroyed
  /// (at its answer), and with `shed` refuses it at once when the requests already under way
  /// leave no time to answer it before its caller's deadline (InferRequest::caller()): the
  /// executions ahead of it (those requests over the model's max_batch_size when it batches)
  /// plus its own, at the model's pace while it has been busy (the moving mean of the time
  /// between executions' ends), never less than one execution's recent time, or before it has
  /// been busy in rounds of its instances that run at once; a tenth of the time left is kept in
  /// hand for executions slower than the mean. The refusal is UNAVAILABLE with the reason
  /// WOULD_MISS_DEADLINE, counted as REJECTED: answered at once, while its client still has
  /// time to try another server or its fallback, instead of waiting in vain and making the
  /// requests behind it late too. A request without a deadline, or for a model that has not run
  /// yet, keeps sequences or answers through a stream, is never refused; one for a model not
  /// held passes uncounted (it fails, or loads, when it runs). Thread-safe: a lookup and a few
  /// atomic operations.
  Result<Admission> admit(const InferRequest& request, bool shed = true);

  /// Runs a request on the calling thread: validation, the model, the requested outputs.
  /// `queued_since` is when the request arrived, for the queue statistic. A decoupled model
  /// answers UNIMPLEMENTED: its responses come through infer_responses(). Here and on every
  /// path below, a request whose caller went away (InferRequest::caller(): cancelled, or past
  /// its deadline) by the time its model would run is answered with the caller's CANCELLED or
  /// DEADLINE_EXCEEDED instead, unrun, and counted as failed, CANCELED; the queues of batching
  /// and stateful models take it out as they would a request whose queue timeout passed.
  Result<InferResult> infer(const InferRequest& request,
                            Clock::time_point queued_since = Clock::now());

  /// Runs the request on the calling thread, now, if its model is a quick one: its recent
  /// executions took less than `budget` each (a moving mean), and it neither merges requests,
  /// keeps sequences, nor answers through a stream; and if the request's inputs are at most
  /// kQuickInputBytes. Otherwise runs nothing and returns nothing:
  /// the caller hands the request to infer_async(). A model that has not run yet is not quick,
  /// nor is one this executor does not hold. For a server's network thread: quick models there
  /// save two thread hand-offs per request, while a model that turns slow costs that thread one
  /// execution before its requests go to the pool again.
  std::optional<Result<InferResult>> infer_if_quick(const InferRequest& request,
                                                    std::chrono::nanoseconds budget);

  /// Runs a request of any model on the calling thread, handing each of its responses to
  /// `respond` as the model makes it: one for a model that is not decoupled, any number for a
  /// decoupled one. Returns the request's outcome: an Error, after which no response follows,
  /// or success once the last response was handed over.
  Result<void> infer_responses(const InferRequest& request,
                               const std::function<void(InferResult)>& respond,
                               Clock::time_point queued_since = Clock::now());

  /// infer_responses() on the pool. Contract: `respond` runs on the pool thread that runs the
  /// request, once per response and in order; then `done` runs exactly once with the
  /// request's outcome, on that thread, never inside this call. Borrowed input tensors are read
  /// until `done` is called.
  void infer_responses_async(InferRequest request, std::function<void(InferResult)> respond,
                             Callback<void> done);

  /// Runs a request on the pool. Contract: `done` runs exactly once, on a pool thread, never
  /// inside this call; a request for an unknown model completes with NOT_FOUND. Borrowed input
  /// tensors are read until `done` is called.
  /// A model with dynamic_batching queues the request to be merged with others (see
  /// DynamicBatching); one with sequence_batching queues it behind the earlier requests of its
  /// sequence, in the order of the calls. `done` then runs on the thread that runs the batch or
  /// the sequence: a pool thread, or one waiting in a ModelHost call to that model (an
  /// ensemble's step) that runs it meanwhile.
  void infer_async(InferRequest request, Callback<InferResult> done) override;

  /// infer_async() after admit(request, /*shed=*/true): a request its model cannot answer by
  /// its caller's deadline is refused here, at once, and `done` never runs; one admitted is
  /// counted among its model's requests under way until answered. A client's fallback runs
  /// requests this way, so that past its capacity it answers in time what it can.
  Result<void> infer_async_in_time(InferRequest request, Callback<InferResult> done) override;

  /// Runs `work` on the pool, after the requests and work posted before it: for what a server
  /// does on a request before its model (decompressing its tensors, say), so that its network
  /// threads stay free. `work` must not throw.
  void run_async(detail::UniqueFunction<void()> work);

  /// How many requests run at once: the pool's threads, or with a scheduler the count its
  /// options gave (usable_cores() for 0).
  std::size_t threads() const;

  /// Statistics of one model; NOT_FOUND if it is not registered.
  Result<ModelStatistics> statistics(const std::string& name,
                                     const std::string& version = {}) const;

  /// Statistics of every model.
  std::vector<ModelStatistics> all_statistics() const;

  /// The largest request infer_if_quick() runs (its inputs' bytes).
  static constexpr std::size_t kQuickInputBytes = 256 * 1024;

 private:
  std::unique_ptr<detail::ExecutorEngine> engine_;
};

}  // namespace sonic
