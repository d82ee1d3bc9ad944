// sonic — the engine behind Client: endpoints, retries, circuit breaking, CPU fallback,
// metadata cache, statistics, and the delivery of every outcome.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/callback_host.hpp"
#include "client/cancellable.hpp"
#include "client/endpoint_pool.hpp"
#include "client/model_ref.hpp"
#include "client/thread_pool.hpp"
#include "client/timer_queue.hpp"
#include "sonic/cancel.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/fallback.hpp"
#include "sonic/metadata.hpp"
#include "sonic/options.hpp"
#include "sonic/request.hpp"
#include "sonic/stats.hpp"
#include "sonic/transport.hpp"
#include "sonic/validate.hpp"

namespace sonic::detail {

// Whether the current thread is running a completion callback of sonic's, and which kind, for
// what must not happen there: blocking calls inside an inline callback (the thread would stall,
// or wait for itself), and a client's destruction waiting for the very thread that runs it.
/// Per-thread depth counters, one of each per thread in the process: sonic::client holds them,
/// with default visibility, so that a plugin built with hidden visibility shares them too.
struct CallbackContext {
  /// Callbacks of any kind running on this thread (inline or on a callback thread).
  SONIC_EXPORT static int& callbacks() {
    thread_local int depth = 0;
    return depth;
  }
  /// Inline callbacks (CallbackThread::Inline) running on this thread.
  SONIC_EXPORT static int& inline_callbacks() {
    thread_local int depth = 0;
    return depth;
  }
  /// A caller's calls into client-side batching or chunking (infer_async, cancel) running on
  /// this thread, inside which none of the caller's callbacks may run.
  SONIC_EXPORT static int& callers_calls() {
    thread_local int depth = 0;
    return depth;
  }
  static bool in_callback() { return callbacks() > 0; }
  static bool in_inline_callback() { return inline_callbacks() > 0; }
  static bool in_callers_call() { return callers_calls() > 0; }
};

/// Marks the current thread for the lifetime of the scope.
class ScopedCount {
 public:
  explicit ScopedCount(int& depth) : depth_(depth) { ++depth_; }
  ~ScopedCount() { --depth_; }
  ScopedCount(const ScopedCount&) = delete;
  ScopedCount& operator=(const ScopedCount&) = delete;

 private:
  int& depth_;
};

/// A Client's shared state. Every way a request ends funnels into complete_once(), which decides
/// the outcome exactly once; deliver() hands it to the caller exactly once, when nothing of
/// sonic reads the request's borrowed inputs any more. That one place keeps the contracts of
/// Client: a callback never runs inside infer_async() or cancel() (whatever the transports do),
/// and borrowed inputs are read until the callback runs, never after.
/// How an outcome reaches its caller.
enum class Delivery {
  /// On whichever thread decides it, even inside submit(): a promise (futures, the blocking
  /// API) does not mind.
  Direct,
  /// A user callback, where ClientOptions::callbacks says; never inside this request's
  /// submit() or cancel().
  Callback,
};

class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  /// One request on its way, across all of its attempts.
  /// A RequestHandle cancels it through its client, if the client is still there.
  struct Flight final : Cancellable, std::enable_shared_from_this<Flight> {
    Flight(std::weak_ptr<ClientCore> c, InferRequest r, Deadline d, Callback<InferResult> cb,
           Delivery how)
        : core(std::move(c)),
          request(std::move(r)),
          deadline(d),
          done(std::move(cb)),
          delivery(how) {}
    bool cancel() override {
      auto client = core.lock();
      return client && client->cancel(shared_from_this());
    }
    std::weak_ptr<ClientCore> core;
    InferRequest request;
    Deadline deadline;
    Callback<InferResult> done;
    Delivery delivery;
    std::atomic<bool> completed{false};  // the outcome is decided
    std::atomic<bool> local_started{false};
    // The threads inside this request's submit() and cancel(), where it must not be delivered
    // to a callback.
    std::atomic<std::thread::id> submitting{};
    std::atomic<std::thread::id> cancelling{};
    int attempts = 0;                          // only touched by the attempt chain
    std::size_t last_slot = SIZE_MAX;          // where the previous attempt went
    Clock::time_point discovery_wait_until{};  // set when it first waits for discovery
    // Rare states live behind pointers: a client may hold 10,000 flights at once.
    std::unique_ptr<Error> not_found;  // an endpoint lacked the model
    // Why each endpoint tried so far was unavailable, in order (endpoint slot, message): when
    // every attempt fails, the error names them all, not only the last.
    std::unique_ptr<std::vector<std::pair<std::size_t, std::string>>> unavailable;

    std::mutex mutex;  // guards the members below
    bool cancelled = false;
    std::shared_ptr<CancelSignal> attempt_stop;  // the attempt in flight
    int readers = 0;  // remote attempts in flight: their transports may read borrowed inputs
    std::unique_ptr<Result<InferResult>> outcome;  // decided, held until readers == 0
  };

  explicit ClientCore(ClientOptions options)
      : options_(std::move(options)), random_(std::random_device{}()) {
    if (options_.endpoints.empty()) {
      throw Error(StatusCode::InvalidArgument,
                  "no endpoint given: pass a URL such as grpc://127.0.0.1:8001");
    }
    check_headers(options_.headers).value();
    endpoints_ = std::make_shared<EndpointPool>(options_, *timers_);
    endpoints_->start();
  }

  ~ClientCore() { close(); }

  /// Completes every request still under way with CANCELLED (remote ones as their transports
  /// let go of their inputs, local ones at once) and returns once every callback of this
  /// client has run. Idempotent. Must not run on a thread that runs this client's callbacks
  /// (Client hands it to another thread then).
  void close() {
    std::set<std::shared_ptr<Flight>> local;
    std::vector<std::weak_ptr<TransportStream>> streams;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closing_) return;
      closing_ = true;  // from now on nothing is retried or scheduled
      local.swap(local_flights_);
      streams.swap(streams_);
    }
    // Open streams end with their client (CANCELLED), whoever still holds their objects.
    for (const auto& weak : streams) {
      if (auto stream = weak.lock()) stream->cancel();
    }
    // Destroying the transports completes their calls with CANCELLED; retries waiting on the
    // timer run now and end the same way; local runs are abandoned (they own their inputs).
    endpoints_->close();
    timers_->run_now(this);
    for (const auto& flight : local) {
      complete_once(flight, Error(StatusCode::Cancelled, "the client was destroyed"));
    }
    std::unique_lock<std::mutex> lock(mutex_);
    all_delivered_.wait(lock, [this] { return undelivered_.load() == 0; });
  }

  const ClientOptions& options() const noexcept { return options_; }

  /// The callback threads, for whoever delivers on them beside this core (a stream).
  std::shared_ptr<ThreadPool> shared_callback_pool() {
    callback_pool();
    return callbacks_;
  }

  /// Opens a stream (Transport::open_stream) on the control transport, to be cancelled when
  /// this core closes. The stream holds what it needs of its transport, not the transport: a
  /// stream object kept past the client does not hold up its destruction.
  Result<std::shared_ptr<TransportStream>> open_stream(
      Deadline deadline, std::function<void(StreamResponse)> on_response, Callback<void> done) {
    auto opened =
        control_transport()->open_stream(deadline, std::move(on_response), std::move(done));
    if (!opened) return opened.error();
    std::shared_ptr<TransportStream> stream = std::move(*opened);
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) {
      stream->cancel();
      return stream;
    }
    streams_.erase(std::remove_if(streams_.begin(), streams_.end(),
                                  [](const auto& weak) { return weak.expired(); }),
                   streams_.end());
    streams_.push_back(stream);
    return stream;
  }

  /// The transport for control calls: the first endpoint in rotation. Held only for the call.
  std::shared_ptr<Transport> control_transport() {
    auto transport = endpoints_->control_transport();
    if (!transport) throw Error(StatusCode::Cancelled, "the client is being destroyed");
    return transport;
  }

  /// Runs a read-only control call, `start(transport, deadline, done)`, on the endpoints in
  /// EndpointPool::control_transports() order until one answers anything but UNAVAILABLE (a
  /// refused or lost connection), all within one control deadline: with several endpoints, a
  /// server that is down does not fail a call another would answer. When none answers, the
  /// error names each endpoint tried. `done` runs exactly once, where the last attempt's
  /// callback runs.
  template <typename T, typename Start>
  void control_async(Start start, Callback<T> done) {
    auto call = std::make_shared<ControlCall<T, Start>>(std::move(start), std::move(done));
    call->endpoints = endpoints_->control_transports();
    call->deadline = control_deadline();
    if (call->endpoints.empty()) {
      return call->done(Error(StatusCode::Cancelled, "the client is being destroyed"));
    }
    next_control_attempt(call);
  }

  Deadline request_deadline(const InferRequest& request) const {
    return deadline_after(request.timeout().count() > 0
                              ? request.timeout()
                              : std::chrono::microseconds(options_.default_timeout));
  }
  Deadline control_deadline() const { return deadline_after(options_.control_timeout); }

  /// Checks, validates and sends a request, retrying and falling back as configured. `done`
  /// runs exactly once, as `delivery` says. The returned flight may be passed to cancel().
  std::shared_ptr<Flight> submit(InferRequest request, Deadline deadline,
                                 Callback<InferResult> done, Delivery delivery) {
    counters_.requests.fetch_add(1, std::memory_order_relaxed);
    undelivered_.fetch_add(1, std::memory_order_relaxed);
    auto flight = std::make_shared<Flight>(weak_from_this(), std::move(request), deadline,
                                           std::move(done), delivery);
    flight->submitting = std::this_thread::get_id();
    start(flight);
    flight->submitting = std::thread::id();
    return flight;
  }

  /// Decides CANCELLED unless the request was decided already, and stops its attempt in flight
  /// (the transport resets the stream); the callback runs once that attempt let go of the
  /// request's inputs: at once, unless a write of them is under way. A local run, which cannot
  /// be interrupted, goes on with its own copy of the inputs and its result is dropped. True
  /// when this call cancelled it.
  bool cancel(const std::shared_ptr<Flight>& flight) {
    {
      std::lock_guard<std::mutex> lock(flight->mutex);
      if (flight->cancelled) return false;
      flight->cancelled = true;
    }
    flight->cancelling = std::this_thread::get_id();
    bool cancelled_now = complete_once(
        flight, Error(StatusCode::Cancelled, "the request was cancelled by the caller"));
    flight->cancelling = std::thread::id();
    return cancelled_now;
  }

  /// Announces an outcome decided outside of submit()'s flights (a part of a batched request, a
  /// request sent in chunks), to be handed over later by hand_over(): close()
  /// waits for it as for any request's.
  void expect_outcome() { undelivered_.fetch_add(1, std::memory_order_relaxed); }

  /// Hands an announced outcome to its callback as submit()'s are handed over: where
  /// ClientOptions::callbacks says, never on this thread when `inside_callers_call` (the
  /// caller's own infer or cancel call is under way on it), what the callback throws caught
  /// and counted.
  void hand_over(Callback<InferResult> done, Result<InferResult>&& result,
                 bool inside_callers_call) {
    dispatch(
        [this, done = std::move(done), result = std::move(result)](bool timed) mutable {
          run_callback(done, std::move(result), timed);
          return std::size_t{1};
        },
        inside_callers_call);
  }

  /// One announced outcome for hand_over_all().
  struct Handoff {
    Callback<InferResult> done;
    Result<InferResult> result;
  };

  /// Hands several announced outcomes over as hand_over() does each, in one hop (the parts of
  /// one merged answer).
  void hand_over_all(std::vector<Handoff> all, bool inside_callers_call) {
    if (all.empty()) return;
    dispatch(
        [this, all = std::move(all)](bool timed) mutable {
          for (auto& handoff : all) run_callback(handoff.done, std::move(handoff.result), timed);
          return all.size();
        },
        inside_callers_call);
  }

  /// Hands an announced outcome to a callback that takes it wherever it is decided (a promise:
  /// Delivery::Direct), or as hand_over() does for a user callback (Delivery::Callback).
  void hand_over(Callback<InferResult> done, Result<InferResult>&& result, Delivery delivery,
                 bool inside_callers_call) {
    if (delivery == Delivery::Callback) {
      return hand_over(std::move(done), std::move(result), inside_callers_call);
    }
    done(std::move(result));
    delivered();
  }

  /// The max_batch_size of the fallback's copy of a request's model (loaded now when it comes
  /// from a repository and is not yet), or none when no fallback serves the model. May block
  /// for the load.
  std::optional<std::int64_t> local_max_batch(const InferRequest& request) const {
    if (!local_model_serves(request)) return std::nullopt;
    auto model = options_.fallback->model(request.model_name(), request.model_version());
    if (!model && options_.fallback->load_model(request.model_name(), {}).ok()) {
      model = options_.fallback->model(request.model_name(), request.model_version());
    }
    if (!model) return std::nullopt;
    return (*model)->max_batch_size;
  }

  /// A callback of this client (a request's, a stream's) threw: counted and logged.
  void callback_threw(const std::exception_ptr& thrown) {
    counters_.callback_exceptions.fetch_add(1, std::memory_order_relaxed);
    log(LogLevel::Error, "a completion callback threw (" + what_of(thrown) +
                             "): sonic caught it; callbacks must not throw (see "
                             "sonic::forward_exceptions)");
  }

  /// A snapshot of the counters.
  ClientStats stats() const {
    ClientStats copy;
    copy.requests = counters_.requests.load(std::memory_order_relaxed);
    copy.succeeded = counters_.succeeded.load(std::memory_order_relaxed);
    copy.failed = counters_.failed.load(std::memory_order_relaxed);
    copy.retries = counters_.retries.load(std::memory_order_relaxed);
    copy.fallbacks = counters_.fallbacks.load(std::memory_order_relaxed);
    copy.slow_callbacks = counters_.slow_callbacks.load(std::memory_order_relaxed);
    copy.callback_exceptions = counters_.callback_exceptions.load(std::memory_order_relaxed);
    for (std::size_t code = 0; code < copy.failures_by_code.size(); ++code) {
      copy.failures_by_code[code] =
          counters_.failures_by_code[code].load(std::memory_order_relaxed);
    }
    copy.endpoints = endpoints_->stats();
    return copy;
  }

 private:
  void start(const std::shared_ptr<Flight>& flight) {
    if (auto ok = check_request(flight->request); !ok) return finish(flight, ok.error());
    if (auto ok = apply_pin(flight->request); !ok) return finish(flight, ok.error());
    if (options_.fallback_latency_budget.count() > 0 && local_model_serves(flight->request)) {
      arm_latency_budget(flight);
    }
    if (!options_.validate_inputs) return attempt(flight);

    // The local model's metadata validates without a round trip.
    if (auto model = local_model(flight->request)) {
      if (auto ok = validate_request(model->metadata(), flight->request); !ok) {
        return finish(flight, ok.error());
      }
      return attempt(flight);
    }
    ModelRef key = ModelRef::of(flight->request);
    std::shared_ptr<const ModelMetadata> known;
    bool fetch = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& entry = metadata_[key];
      known = entry.metadata;
      if (!known && !entry.fetching) fetch = entry.fetching = true;
    }
    if (known) {
      if (auto ok = validate_request(*known, flight->request); !ok) {
        return finish(flight, ok.error());
      }
      return attempt(flight);
    }
    // Another request is already fetching: waiting for it could outlast this request's own
    // deadline, so send now and let the server validate.
    if (!fetch) return attempt(flight);
    auto transport = endpoints_->control_transport();
    if (!transport) {  // every endpoint is gone: the client is closing
      {
        std::lock_guard<std::mutex> lock(mutex_);
        metadata_.erase(key);  // nobody is fetching it any more
      }
      return finish(flight, Error(StatusCode::Cancelled, "the client is being destroyed"));
    }
    transport->model_metadata_async(
        flight->request.model_name(), flight->request.model_version(),
        std::min(flight->deadline, control_deadline()),
        [this, key, flight](Result<ModelMetadata> metadata) {
          auto model_metadata = remember(key, std::move(metadata));
          if (model_metadata) {
            if (auto ok = validate_request(**model_metadata, flight->request); !ok) {
              return finish(flight, ok.error());
            }
          } else if (model_metadata.code() == StatusCode::NotFound && endpoints_->active() == 1) {
            const Error& e = model_metadata.error();
            return give_up(flight, Error(e.code(), "model '" + flight->request.model_name() +
                                                       "': " + e.message()));
          }
          // Metadata unavailable (server down, say): the attempts decide what happens.
          attempt(flight);
        });
  }

  // A pinned model's version (ClientOptions::routing.pins) for a request that names none; a
  // request that names another one is refused.
  Result<void> apply_pin(InferRequest& request) const {
    if (options_.routing.pins.empty()) return {};
    auto pin = options_.routing.pins.find(request.model_name());
    if (pin == options_.routing.pins.end() || pin->second.version.empty()) return {};
    if (request.model_version().empty()) {
      request.version(pin->second.version);
    } else if (request.model_version() != pin->second.version) {
      return Error(StatusCode::FailedPrecondition,
                   "model '" + request.model_name() + "' is pinned to version " +
                       pin->second.version +
                       " (ClientOptions::routing.pins); the request asks "
                       "for version " +
                       request.model_version());
    }
    return {};
  }

  // An answer from another version than the pinned one (a server that ignored the version it
  // was asked for) is not the model the job expects.
  Result<void> check_pin(const InferRequest& request, const InferResult& result) const {
    if (options_.routing.pins.empty()) return {};
    auto pin = options_.routing.pins.find(request.model_name());
    if (pin == options_.routing.pins.end() || pin->second.version.empty() ||
        result.model_version().empty() || result.model_version() == pin->second.version) {
      return {};
    }
    return Error(StatusCode::FailedPrecondition,
                 "model '" + request.model_name() + "' is pinned to version " +
                     pin->second.version + ", but the server answered from version " +
                     result.model_version());
  }

  struct CacheEntry {
    std::shared_ptr<const ModelMetadata> metadata;
    bool fetching = false;
  };

  void log(LogLevel level, const std::string& message) const {
    if (options_.log) options_.log(level, message);
  }

  std::shared_ptr<const Model> local_model(const InferRequest& request) const {
    if (!options_.fallback) return nullptr;
    auto model = options_.fallback->model(request.model_name(), request.model_version());
    return model ? *model : nullptr;
  }

  // Whether the fallback can run the request: its model is loaded there, or will load on its
  // first local run (from a repository).
  bool local_model_serves(const InferRequest& request) const {
    return options_.fallback &&
           options_.fallback->serves(request.model_name(), request.model_version());
  }

  void attempt(const std::shared_ptr<Flight>& flight) {
    // The attempt is a reader of the inputs from here until it is over (when the transport, if
    // one is reached, has answered): an outcome decided meanwhile waits for it.
    if (!acquire_reader(*flight)) return;  // decided already: nothing more to try
    if (closing()) {
      finish(flight, Error(StatusCode::Cancelled, "the client was destroyed"));
      return release_reader(flight);
    }
    if (Clock::now() >= flight->deadline) {
      finish(flight, Error(StatusCode::DeadlineExceeded,
                           "deadline passed before an attempt could be made"));
      return release_reader(flight);
    }
    const ModelRef key = ModelRef::of(flight->request);
    auto picked = endpoints_->pick(flight->last_slot, key);
    if (!picked) {
      // The endpoints are still reporting a pinned model's configuration: ask again shortly.
      if (endpoints_->awaiting_discovery(key) && may_wait_for_discovery(*flight) &&
          try_later(flight, Clock::now() + kDiscoveryWait)) {
        return release_reader(flight);
      }
      give_up(flight, flight->not_found ? *flight->not_found : no_endpoint(key));
      return release_reader(flight);
    }
    std::size_t slot = picked->slot;
    if (++flight->attempts > 1) counters_.retries.fetch_add(1, std::memory_order_relaxed);
    flight->last_slot = slot;
    Deadline attempt_deadline = flight->deadline;
    if (options_.retry.per_attempt_timeout.count() > 0) {
      attempt_deadline =
          std::min(attempt_deadline, Clock::now() + options_.retry.per_attempt_timeout);
    }
    auto stop = std::make_shared<CancelSignal>();
    bool decided;
    {
      std::lock_guard<std::mutex> lock(flight->mutex);
      flight->attempt_stop = stop;
      decided = flight->completed;
    }
    if (decided) stop->cancel();  // decided meanwhile: the transport answers at once
    auto started = Clock::now();
    picked->transport->infer_async(
        flight->request, attempt_deadline, stop,
        [this, flight, slot, started, attempt_deadline, stop](Result<InferResult> result) mutable {
          // The stop action refers to the transport: it must not outlive the attempt.
          stop->disarm();
          {
            std::lock_guard<std::mutex> lock(flight->mutex);
            if (flight->attempt_stop == stop) flight->attempt_stop.reset();
          }
          on_attempt(flight, slot, started, attempt_deadline, std::move(result));
          release_reader(flight);  // the transport no longer reads the inputs
        });
  }

  // Why no endpoint may take a request now.
  Error no_endpoint(const ModelRef& key) const {
    const std::string why = endpoints_->why_unservable(key);
    if (why.empty()) {
      return Error(StatusCode::Unavailable, "no endpoint available: all " +
                                                std::to_string(endpoints_->active()) +
                                                " are ejected after failures");
    }
    return Error(StatusCode::Unavailable,
                 "no endpoint may serve model '" + key.name + "' now: " + why);
  }

  // A request waits for the endpoints' answers about a pinned model for a control call's time
  // at most (control_timeout), whatever its own deadline.
  bool may_wait_for_discovery(Flight& flight) const {
    const auto now = Clock::now();
    if (flight.discovery_wait_until == Clock::time_point{}) {
      flight.discovery_wait_until = now + options_.control_timeout;
    }
    return now < flight.discovery_wait_until;
  }

  // Schedules another attempt at `at` unless that is past the request's deadline or the client
  // is closing; true when scheduled.
  bool try_later(const std::shared_ptr<Flight>& flight, Clock::time_point at) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (at >= flight->deadline || closing_) return false;
    timers_->schedule(this, at, [this, flight] { attempt(flight); });
    return true;
  }

  // A new reader of the request's inputs, unless its outcome is decided.
  static bool acquire_reader(Flight& flight) {
    std::lock_guard<std::mutex> lock(flight.mutex);
    if (flight.completed) return false;
    ++flight.readers;
    return true;
  }

  // A reader is done with the inputs; the last one delivers an outcome decided meanwhile.
  void release_reader(const std::shared_ptr<Flight>& flight) {
    std::unique_ptr<Result<InferResult>> outcome;
    {
      std::lock_guard<std::mutex> lock(flight->mutex);
      if (--flight->readers == 0) outcome = std::move(flight->outcome);
    }
    if (outcome) deliver(flight, std::move(*outcome));
  }

  void on_attempt(const std::shared_ptr<Flight>& flight, std::size_t slot,
                  Clock::time_point started, Deadline attempt_deadline,
                  Result<InferResult>&& result) {
    StatusCode code = result.code();
    // A per-attempt timeout that is not the request's own deadline counts as a server failure.
    bool attempt_timed_out =
        code == StatusCode::DeadlineExceeded && attempt_deadline < flight->deadline;
    bool server_failure = code == StatusCode::Unavailable || attempt_timed_out;
    endpoints_->record(slot, result.ok(), server_failure, Clock::now() - started);
    if (result) {
      if (auto pinned = check_pin(flight->request, *result); !pinned) {
        return finish(flight, pinned.error());
      }
      if (local_mode_.exchange(false))
        log(LogLevel::Info, "servers answer again: requests go remote");
      return finish(flight, std::move(result));
    }
    if (flight->completed) return;  // decided elsewhere (a cancel, a local run): nothing to try
    if (code == StatusCode::Unavailable) remember_unavailable(*flight, slot, result.error());
    if (code == StatusCode::NotFound && endpoints_->active() > 1) {
      // Servers may host different models: remember that this one lacks it, and try the
      // others at once (pick() skips the endpoints known to lack the model).
      endpoints_->lacks_model(slot, ModelRef::of(flight->request));
      endpoints_->rediscover_soon();
      flight->not_found = std::make_unique<Error>(result.error());
      return attempt(flight);
    }
    bool retry = (options_.retry.retryable(code) || attempt_timed_out) &&
                 flight->attempts < options_.retry.max_attempts;
    if (retry) {
      Clock::time_point at;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        const double draw = std::uniform_real_distribution<double>(0.0, 1.0)(random_);
        at = Clock::now() + options_.retry.backoff(flight->attempts + 1, draw);
      }
      if (try_later(flight, at)) return;
    }
    give_up(flight, result.error());
  }

  static void remember_unavailable(Flight& flight, std::size_t slot, const Error& error) {
    if (!flight.unavailable) {
      flight.unavailable = std::make_unique<std::vector<std::pair<std::size_t, std::string>>>();
    }
    for (auto& [seen, message] : *flight.unavailable) {
      if (seen == slot) {
        message = error.message();  // the latest word from that endpoint
        return;
      }
    }
    flight.unavailable->emplace_back(slot, error.message());
  }

  // The last error, or when more than one endpoint was unavailable, one naming each of them.
  Error with_every_endpoint(const Flight& flight, Error error) const {
    if (error.code() != StatusCode::Unavailable || !flight.unavailable ||
        flight.unavailable->size() < 2) {
      return error;
    }
    std::string message;
    bool listed = false;
    for (const auto& entry : *flight.unavailable)
      listed = listed || entry.second == error.message();
    if (!listed) message = error.message() + "; ";  // "all ejected", say
    message +=
        "none of the " + std::to_string(flight.unavailable->size()) + " endpoints tried answered:";
    for (const auto& [slot, why] : *flight.unavailable) {
      const std::string url = endpoints_->url(slot);
      message += ' ';
      // Transports name the endpoint in their messages; add it where one did not.
      if (!url.empty() && why.find(url) == std::string::npos) message += url + ": ";
      message += why + ';';
    }
    message.pop_back();
    return Error(error.code(), std::move(message), error.reason());
  }

  // Remote attempts are over: the CPU executor if it can help, else the error.
  void give_up(const std::shared_ptr<Flight>& flight, Error error) {
    error = with_every_endpoint(*flight, std::move(error));
    bool server_side =
        error.code() == StatusCode::Unavailable || error.code() == StatusCode::DeadlineExceeded ||
        error.code() == StatusCode::NotFound || error.code() == StatusCode::Unimplemented ||
        error.code() == StatusCode::ResourceExhausted;
    if (server_side && local_model_serves(flight->request) && Clock::now() < flight->deadline) {
      return run_locally(flight, error.message());
    }
    if (server_side && options_.fallback && !local_model_serves(flight->request)) {
      // A user who configured a fallback expects it to have answered: say why it did not.
      const InferRequest& request = flight->request;
      std::string model = "'" + request.model_name() + "'";
      if (!request.model_version().empty()) model += " version " + request.model_version();
      error = Error(error.code(),
                    error.message() + "; the CPU fallback did not run: it has no model " + model +
                        " (load it into the fallback executor, or give it a repository)",
                    error.reason());
    }
    finish(flight, std::move(error));
  }

  // A copy of the request whose inputs own their bytes. A local run cannot be interrupted and
  // may outlive the request (a cancel, a remote answer that wins, the client's destruction),
  // after which the caller may free its memory: it works on its own copy. Owned inputs are
  // shared, not copied; a memcpy of the borrowed ones is small next to running a model on CPU.
  static InferRequest with_owned_inputs(const InferRequest& request) {
    return InferRequest(request).own_inputs();
  }

  void run_locally(const std::shared_ptr<Flight>& flight, const std::string& reason) {
    if (flight->local_started.exchange(true)) return;
    // The copy of the inputs reads the caller's memory: as a reader, so that an outcome decided
    // meanwhile (a remote answer beating the latency budget) waits for it.
    if (!acquire_reader(*flight)) return;  // decided already: nothing to run
    bool closing_now;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_now = closing_;
      if (!closing_now) {
        counters_.fallbacks.fetch_add(1, std::memory_order_relaxed);
        local_flights_.insert(flight);  // close() completes it, if it comes first
      }
    }
    if (closing_now) {
      finish(flight, Error(StatusCode::Cancelled, "the client was destroyed"));
      return release_reader(flight);
    }
    if (!local_mode_.exchange(true)) {
      log(LogLevel::Warning, "running requests on the CPU executor: " + reason);
    }
    const Clock::time_point started = Clock::now();
    InferRequest own = with_owned_inputs(flight->request);
    release_reader(flight);
    // The executor may answer after the client is gone: it holds the core weakly.
    options_.fallback->infer_async(
        std::move(own), [weak = weak_from_this(), flight, started](Result<InferResult> result) {
          auto self = weak.lock();
          if (!self) return;
          {
            std::lock_guard<std::mutex> lock(self->mutex_);
            if (self->local_flights_.erase(flight) == 0) return;  // close() completed it
          }
          if (result) {
            result->set_executed_on(ExecutedOn::Local);
            // The local attempt, end to end: the copy of the inputs, the executor's queue and
            // the model (whose own figures the executor reports as server_queue and
            // server_compute).
            result->timing().total = Clock::now() - started;
          }
          self->finish(flight, std::move(result));
        });
  }

  void arm_latency_budget(const std::shared_ptr<Flight>& flight) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) return;
    timers_->schedule(this, Clock::now() + options_.fallback_latency_budget, [this, flight] {
      if (!flight->completed && !closing()) {
        run_locally(flight, "no answer within the latency budget of " +
                                std::to_string(options_.fallback_latency_budget.count()) + " ms");
      }
    });
  }

  // A control call in progress over the endpoints (control_async).
  template <typename T, typename Start>
  struct ControlCall {
    ControlCall(Start how, Callback<T> then) : start(std::move(how)), done(std::move(then)) {}
    std::vector<std::shared_ptr<Transport>> endpoints;
    std::size_t next = 0;
    Start start;
    Callback<T> done;
    Deadline deadline{};
    std::string failures;  // "cannot connect to grpc://a:1: ...; ..." of the endpoints passed
  };

  template <typename T, typename Start>
  static void next_control_attempt(const std::shared_ptr<ControlCall<T, Start>>& call) {
    Transport& transport = *call->endpoints[call->next];
    call->start(
        transport, call->deadline, Callback<T>([call](Result<T> result) {
          const bool unavailable = !result && result.error().code() == StatusCode::Unavailable;
          if (unavailable && call->next + 1 < call->endpoints.size() &&
              Clock::now() < call->deadline) {
            call->failures += result.error().message() + "; ";
            ++call->next;
            return next_control_attempt(call);
          }
          if (unavailable && call->next > 0) {
            result = Error(StatusCode::Unavailable,
                           "none of the " + std::to_string(call->next + 1) +
                               " endpoints answered: " + call->failures + result.error().message());
          }
          call->done(std::move(result));
        }));
  }

  // Caches fetched metadata; a failure is not cached, since the model may appear later.
  Result<std::shared_ptr<const ModelMetadata>> remember(const ModelRef& key,
                                                        Result<ModelMetadata> metadata) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!metadata) {
      metadata_.erase(key);
      return metadata.error();
    }
    auto& entry = metadata_[key];
    entry.metadata = std::make_shared<const ModelMetadata>(std::move(*metadata));
    entry.fetching = false;
    return entry.metadata;
  }

  bool closing() const { return closing_.load(std::memory_order_acquire); }

  // The outcome travels by reference down to where it is stored or handed over: an
  // InferResult is a few strings, a vector and a map, and each move of it costs.
  void finish(const std::shared_ptr<Flight>& flight, Result<InferResult>&& result) {
    complete_once(flight, std::move(result));
  }

  // Decides the outcome; false when it was decided already. While a remote attempt may still
  // read the inputs, the outcome waits for it (and the attempt is told to stop).
  bool complete_once(const std::shared_ptr<Flight>& flight, Result<InferResult>&& result) {
    if (flight->completed.exchange(true)) return false;
    if (result) {
      counters_.succeeded.fetch_add(1, std::memory_order_relaxed);
    } else {
      counters_.failed.fetch_add(1, std::memory_order_relaxed);
      counters_.failures_by_code[static_cast<std::size_t>(result.code())].fetch_add(
          1, std::memory_order_relaxed);
    }
    bool held = false;
    std::shared_ptr<CancelSignal> stop;
    {
      std::lock_guard<std::mutex> lock(flight->mutex);
      if (flight->readers > 0) {
        // The last reader delivers it.
        flight->outcome = std::make_unique<Result<InferResult>>(std::move(result));
        stop = flight->attempt_stop;
        held = true;
      }
    }
    if (!held) {
      deliver(flight, std::move(result));
    } else if (stop) {
      stop->cancel();  // the attempt in flight is not needed any more: let go of the inputs
    }
    return true;
  }

  // Runs `run` where ClientOptions::callbacks says; it runs callbacks (timed ones when its
  // argument says so: callbacks that moved to the callback threads for being slow) and returns
  // how many, which are then counted delivered.
  template <typename Run>
  void dispatch(Run run, bool inside_callers_call) {
    switch (options_.callbacks) {
      case CallbackThread::Network:
        if (auto* host = CallbackHost::current();
            host && !callbacks_moved_.load(std::memory_order_relaxed)) {
          return host->run_later([this, run = std::move(run)]() mutable {
            const std::size_t ran = run(false);
            // It held the network thread so long that the connections moved on: this
            // client's callbacks are not the quick kind, give them threads of their own.
            if (CallbackHost::current()->handed_off()) {
              counters_.slow_callbacks.fetch_add(1, std::memory_order_relaxed);
              move_callbacks();
            }
            delivered(ran);
          });
        }
        break;
      case CallbackThread::Inline:
        if (inside_callers_call) break;
        {
          ScopedCount inline_callback(CallbackContext::inline_callbacks());
          const std::size_t ran = run(false);
          delivered(ran);
        }
        return;
      case CallbackThread::Pool: break;
    }
    callback_pool().post([this, run = std::move(run)]() mutable {
      delivered(run(callbacks_moved_.load(std::memory_order_relaxed)));
    });
  }

  void run_callback(Callback<InferResult>& done, Result<InferResult>&& result, bool timed) {
    if (timed) {
      timed_call_back(done, std::move(result));
    } else {
      call_back(done, std::move(result));
    }
  }

  // Hands the outcome to the caller, once.
  void deliver(const std::shared_ptr<Flight>& flight, Result<InferResult>&& result) {
    auto done = std::move(flight->done);
    if (flight->delivery == Delivery::Direct) {
      done(std::move(result));
      return delivered();
    }
    const auto me = std::this_thread::get_id();
    hand_over(std::move(done), std::move(result),
              flight->submitting == me || flight->cancelling == me);
  }

  // A callback held its network thread too long: this client's callbacks go to the callback
  // threads, until they have all been quick for a while (a thread preempted under load looks
  // slow too, and must not cost a client the network thread for good). Each move doubles the
  // while, so that a client whose callbacks are slow now and then settles on the pool.
  void move_callbacks() {
    const auto now = Clock::now().time_since_epoch().count();
    const auto trial = trial_ns_.load(std::memory_order_relaxed);
    trial_ns_.store(trial == 0 ? kFirstTrial.count() : std::min(2 * trial, kLongestTrial.count()),
                    std::memory_order_relaxed);
    quiet_since_ns_.store(now, std::memory_order_relaxed);
    callbacks_moved_.store(true, std::memory_order_relaxed);
  }

  // A callback on the callback threads of a client whose callbacks moved there, timed: one as
  // long as the network threads tolerate starts the trial again; once they have been quick for
  // the trial, later callbacks run on the network thread again.
  void timed_call_back(Callback<InferResult>& done, Result<InferResult>&& result) {
    const auto started = Clock::now();
    call_back(done, std::move(result));
    const auto finished = Clock::now();
    const auto now = finished.time_since_epoch().count();
    if (finished - started >= kQuickCallback) {
      quiet_since_ns_.store(now, std::memory_order_relaxed);
    } else if (now - quiet_since_ns_.load(std::memory_order_relaxed) >=
               trial_ns_.load(std::memory_order_relaxed)) {
      callbacks_moved_.store(false, std::memory_order_relaxed);
    }
  }

  // Runs a user callback, the thread marked as inside one while it does. What it throws stops
  // here: escaping into a network thread would end the process (or that thread, and with it
  // every request it serves), so it is counted and logged instead (ClientStats).
  void call_back(Callback<InferResult>& done, Result<InferResult>&& result) {
    ScopedCount callback(CallbackContext::callbacks());
    try {
      done(std::move(result));
    } catch (...) {
      callback_threw(std::current_exception());
    }
  }

  static std::string what_of(const std::exception_ptr& thrown) {
    try {
      std::rethrow_exception(thrown);
    } catch (const std::exception& e) {
      return e.what();
    } catch (...) {
      return "not a std::exception";
    }
  }

  // One more outcome delivered. close() may be waiting for the last: touch nothing after.
  // (The hot path takes no lock: only the last delivery, which close() may wait for, does.)
  void delivered(std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) delivered();
  }

  void delivered() {
    // Not the last: no lock. The last one (or one that may be) decrements under the lock that
    // close() checks the count under, so that close() cannot return, and the core go away,
    // between the decrement and the notification.
    std::size_t left = undelivered_.load(std::memory_order_relaxed);
    while (left > 1) {
      if (undelivered_.compare_exchange_weak(left, left - 1, std::memory_order_acq_rel)) return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (undelivered_.fetch_sub(1, std::memory_order_acq_rel) == 1) all_delivered_.notify_all();
  }

  // The process's callback threads, taken on first need (a client that only uses futures and
  // the blocking API starts none).
  ThreadPool& callback_pool() {
    std::call_once(callbacks_once_, [this] {
      callbacks_ = ThreadPool::shared_callbacks(options_.callback_threads);
    });
    return *callbacks_;
  }

  // What stats() reports; atomics, so that counting takes no lock on the request path.
  struct Counters {
    std::atomic<std::uint64_t> requests{0}, succeeded{0}, failed{0}, retries{0}, fallbacks{0},
        slow_callbacks{0}, callback_exceptions{0};
    std::array<std::atomic<std::uint64_t>, 17> failures_by_code{};
  };

  ClientOptions options_;
  mutable std::mutex mutex_;
  std::atomic<bool> closing_{false};  // written under mutex_
  // Submitted requests whose outcome has not been delivered; close() waits for 0.
  std::atomic<std::size_t> undelivered_{0};
  std::condition_variable all_delivered_;
  std::set<std::shared_ptr<Flight>> local_flights_;      // running on the CPU executor
  std::vector<std::weak_ptr<TransportStream>> streams_;  // open_stream's, for close()
  std::atomic<bool> local_mode_{false};
  // A callback held a network thread past its budget: callbacks go to the callback threads,
  // since quiet_since_ns_ (steady clock) all quick, until that lasts trial_ns_ (move_callbacks).
  std::atomic<bool> callbacks_moved_{false};
  std::atomic<std::int64_t> quiet_since_ns_{0};
  std::atomic<std::int64_t> trial_ns_{0};
  // What the network threads tolerate of a callback (their watcher's tick), and how long a
  // moved client's callbacks must stay under it to go back: first, and at most.
  static constexpr std::chrono::nanoseconds kQuickCallback = kCallbackTick;
  // How long a request waits for the endpoints to report a pinned model's configuration before
  // it looks again.
  static constexpr std::chrono::milliseconds kDiscoveryWait{5};
  static constexpr std::chrono::nanoseconds kFirstTrial = std::chrono::seconds(1);
  static constexpr std::chrono::nanoseconds kLongestTrial = std::chrono::seconds(64);
  std::map<ModelRef, CacheEntry> metadata_;
  Counters counters_;
  std::mt19937 random_;  // backoff jitter, guarded by mutex_
  std::once_flag callbacks_once_;
  std::shared_ptr<ThreadPool> callbacks_;
  std::shared_ptr<TimerQueue> timers_ = TimerQueue::shared();
  std::shared_ptr<EndpointPool> endpoints_;  // closed first, while the rest lives
};

}  // namespace sonic::detail
