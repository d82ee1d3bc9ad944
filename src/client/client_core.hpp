// sonic — the engine behind Client: a request's flight across its attempts (retries, the CPU
// fallback and its latency budget), and the one place its outcome is decided and delivered.
// Its parts are files of their own: the endpoints (endpoint_pool.hpp), callback placement
// (callback_placement.hpp), the metadata cache, pins, control calls and the error that names
// every endpoint tried.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "client/callback_placement.hpp"
#include "client/cancellable.hpp"
#include "client/control_calls.hpp"
#include "client/deadline_watch.hpp"
#include "client/endpoint_pool.hpp"
#include "client/metadata_cache.hpp"
#include "client/model_ref.hpp"
#include "client/timer_queue.hpp"
#include "client/unavailable_endpoints.hpp"
#include "sonic/cancel.hpp"
#include "sonic/error.hpp"
#include "sonic/fallback.hpp"
#include "sonic/options.hpp"
#include "sonic/request.hpp"
#include "sonic/stats.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

/// How an outcome reaches its caller.
enum class Delivery {
  /// On whichever thread decides it, even inside submit(): a promise (futures, the blocking
  /// API) does not mind.
  Direct,
  /// A user callback, where ClientOptions::callbacks says; never inside this request's
  /// submit() or cancel().
  Callback,
};

/// A Client's shared state. Every way a request ends funnels into decide(), which decides the
/// outcome exactly once; deliver() hands it to the caller exactly once, when nothing of sonic
/// reads the request's borrowed inputs any more. That one place keeps the contracts of Client:
/// a callback never runs inside infer_async() or cancel() (whatever the transports do), and
/// borrowed inputs are read until the callback runs, never after.
/// What a Client counts for ClientStats: atomics, so that counting takes no lock on the
/// request path. Thread-safe; every counter is relaxed (a snapshot is a moment of each, not of
/// all).
struct ClientCounters {
  std::atomic<std::uint64_t> requests{0}, succeeded{0}, failed{0}, retries{0}, fallbacks{0},
      throttled_retries{0};
  std::array<std::atomic<std::uint64_t>,
             std::tuple_size<decltype(ClientStats::failures_by_code)>::value>
      failures_by_code{};

  static void add(std::atomic<std::uint64_t>& counter) {
    counter.fetch_add(1, std::memory_order_relaxed);
  }

  /// A request's outcome was decided.
  void count_outcome(bool ok, StatusCode code) {
    if (ok) return add(succeeded);
    add(failed);
    add(failures_by_code[static_cast<std::size_t>(code)]);
  }

  /// The counters as ClientStats (without the endpoints' and the callbacks', which the pool
  /// and the placement keep).
  ClientStats snapshot() const {
    ClientStats copy;
    copy.requests = requests.load(std::memory_order_relaxed);
    copy.succeeded = succeeded.load(std::memory_order_relaxed);
    copy.failed = failed.load(std::memory_order_relaxed);
    copy.retries = retries.load(std::memory_order_relaxed);
    copy.fallbacks = fallbacks.load(std::memory_order_relaxed);
    copy.throttled_retries = throttled_retries.load(std::memory_order_relaxed);
    for (std::size_t code = 0; code < copy.failures_by_code.size(); ++code) {
      copy.failures_by_code[code] = failures_by_code[code].load(std::memory_order_relaxed);
    }
    return copy;
  }
};

class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  /// One request on its way, across all of its attempts.
  /// A RequestHandle cancels it through its client, if the client is still there; the client's
  /// DeadlineWatch decides it if nothing else has by its deadline (plus the watch's grace), and
  /// hands over an outcome decided in time that still waits behind others for its callback.
  struct Flight;

  /// A flight's place on the client's deadline watch, made only for a request with a deadline
  /// (a client may hold 10,000 flights at once: the others pay a pointer). Owned by its flight,
  /// which it keeps alive while the watch acts on it.
  struct OnWatch final : DeadlineWatch::Watched {
    OnWatch(Flight& owner, std::shared_ptr<DeadlineWatch> on)
        : flight(owner), watch(std::move(on)) {}
    ~OnWatch() override { watch->forget(*this); }  // a flight never decided leaves no trace
    OnWatch(const OnWatch&) = delete;
    OnWatch& operator=(const OnWatch&) = delete;
    std::shared_ptr<Watched> hold() override;
    void deadline_passed() override;
    // What makes an outcome the watch decides wait for the attempt in flight to let go of the
    // inputs, as every other outcome does: the caller lent them (borrowed tensors); or the
    // attempt is on the waiting thread's own connection (drive_blocking_calls), which that
    // thread runs (it lets go at once) and which must be left with no call of its own.
    bool expiry_waits_for_attempt() const {
      return borrows_inputs || (waiter_drives && waiter_drives->load(std::memory_order_acquire));
    }
    Flight& flight;
    const std::shared_ptr<DeadlineWatch> watch;
    bool borrows_inputs = false;
    std::shared_ptr<const std::atomic<bool>> waiter_drives;  // a blocking call's
  };

  struct Flight final : Cancellable, std::enable_shared_from_this<Flight> {
    Flight(std::weak_ptr<ClientCore> c, InferRequest r, Deadline d, Callback<InferResult> cb,
           Delivery how)
        : core(std::move(c)),
          request(std::move(r)),
          deadline(d),
          done(std::move(cb)),
          delivery(how) {}
    bool cancel() override;
    std::weak_ptr<ClientCore> core;
    InferRequest request;
    Deadline deadline;
    Callback<InferResult> done;
    Delivery delivery;
    std::atomic<bool> completed{false};  // the outcome is decided
    std::atomic<bool> handed{false};     // a hand-over claimed the parked outcome (Callback)
    std::atomic<bool> local_started{false};
    // The threads inside this request's submit() and cancel(), where it must not be delivered
    // to a callback.
    std::atomic<std::thread::id> submitting{};
    std::atomic<std::thread::id> cancelling{};
    // Its place on the deadline watch: set before it is watched, then never changed.
    std::unique_ptr<OnWatch> on_watch;
    int attempts = 0;                  // only touched by the attempt chain
    std::size_t last_slot = SIZE_MAX;  // where the previous attempt went
    // What earlier attempts left, for the next one and for the error the caller may hear.
    // Rare, so behind one pointer: a client may hold 10,000 flights at once.
    struct Trail {
      std::optional<Error> not_found;  // an endpoint lacked the model
      std::optional<UnavailableEndpoints> unavailable;
      std::optional<Error> last_error;   // the previous attempt's, while a retry is under way
      std::vector<std::size_t> refused;  // endpoints that refused it early
      Clock::time_point discovery_wait_until{};  // set when it first waits for discovery
      bool whole_deadline = false;               // refused within a per-attempt timeout: not again
    };
    std::unique_ptr<Trail> trail;  // only touched by the attempt chain
    Trail& left_behind() {
      if (!trail) trail = std::make_unique<Trail>();
      return *trail;
    }
    const Error* last_error() const {
      return trail && trail->last_error ? &*trail->last_error : nullptr;
    }
    const std::vector<std::size_t>* refused() const {
      return trail && !trail->refused.empty() ? &trail->refused : nullptr;
    }

    std::mutex mutex;  // guards the members below
    int readers = 0;   // remote attempts in flight: their transports may read borrowed inputs
    bool cancelled = false;
    std::shared_ptr<CancelSignal> attempt_stop;    // the attempt in flight
    std::unique_ptr<Result<InferResult>> outcome;  // decided, held until readers == 0
    bool parked = false;  // `outcome` waits for a hand-over to claim it (deliver())
  };

  /// Throws sonic::Error(InvalidArgument) for options without endpoints, with malformed
  /// headers or endpoint URLs, or naming an unlinked scheme.
  explicit ClientCore(ClientOptions options);
  ~ClientCore() { close(); }

  /// Completes every request still under way with CANCELLED (remote ones as their transports
  /// let go of their inputs, local ones at once) and returns once every callback of this
  /// client has run. Idempotent. Must not run on a thread that runs this client's callbacks
  /// (Client hands it to another thread then).
  void close();

  const ClientOptions& options() const noexcept { return options_; }

  /// The callback threads, for whoever delivers on them beside this core (a stream).
  std::shared_ptr<ThreadPool> shared_callback_pool() { return placement_.shared_pool(); }

  /// Opens a stream (Transport::open_stream) on the control transport, to be cancelled when
  /// this core closes. The stream holds what it needs of its transport, not the transport: a
  /// stream object kept past the client does not hold up its destruction.
  Result<std::shared_ptr<TransportStream>> open_stream(
      Deadline deadline, std::function<void(StreamResponse)> on_response, Callback<void> done);

  /// The transport for control calls: the first endpoint in rotation. Held only for the call.
  /// Throws sonic::Error(CANCELLED) once the client is closing.
  std::shared_ptr<Transport> control_transport();

  /// Runs a read-only control call, `start(transport, deadline, done)`, on the endpoints in
  /// EndpointPool::control_transports() order, as run_control_call() says, within one control
  /// deadline. `done` runs exactly once, where the last attempt's callback runs.
  template <typename T, typename Start>
  void control_async(Start start, Callback<T> done) {
    run_control_call(endpoints_->control_transports(), control_deadline(), std::move(start),
                     std::move(done));
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
                                 Callback<InferResult> done, Delivery delivery);

  /// Decides CANCELLED unless the request was decided already, and stops its attempt in flight
  /// (the transport resets the stream); the callback runs once that attempt let go of the
  /// request's inputs: at once, unless a write of them is under way. A local run, which cannot
  /// be interrupted, goes on with its own copy of the inputs and its result is dropped. True
  /// when this call cancelled it.
  bool cancel(const std::shared_ptr<Flight>& flight);

  /// Announces an outcome decided outside of submit()'s flights (a part of a batched request, a
  /// request sent in chunks), to be handed over later by hand_over(): close() waits for it as
  /// for any request's.
  void expect_outcome() { placement_.expect(); }

  /// Hands an announced outcome to its callback as submit()'s are handed over: where
  /// ClientOptions::callbacks says, never on this thread when `inside_callers_call` (the
  /// caller's own infer or cancel call is under way on it), what the callback throws caught
  /// and counted.
  void hand_over(Callback<InferResult> done, Result<InferResult>&& result,
                 bool inside_callers_call);

  /// One announced outcome for hand_over_all().
  struct Handoff {
    Callback<InferResult> done;
    Result<InferResult> result;
  };

  /// Hands several announced outcomes over as hand_over() does each, in one hop (the parts of
  /// one merged answer).
  void hand_over_all(std::vector<Handoff> all, bool inside_callers_call);

  /// Hands an announced outcome to a callback that takes it wherever it is decided (a promise:
  /// Delivery::Direct), or as hand_over() does for a user callback (Delivery::Callback).
  void hand_over(Callback<InferResult> done, Result<InferResult>&& result, Delivery delivery,
                 bool inside_callers_call);

  /// The max_batch_size of the fallback's copy of a request's model (loaded now when it comes
  /// from a repository and is not yet), or none when no fallback serves the model. May block
  /// for the load.
  std::optional<std::int64_t> local_max_batch(const InferRequest& request) const;

  /// A callback of this client (a request's, a stream's) threw: counted and logged.
  void callback_threw(const std::exception_ptr& thrown) { placement_.callback_threw(thrown); }

  /// A snapshot of the counters.
  ClientStats stats() const;

 private:
  // ---- A flight's way: checks, validation, attempts, retries (client_core.cpp) ---------------
  void start(const std::shared_ptr<Flight>& flight);
  void validate_then_attempt(const std::shared_ptr<Flight>& flight);
  void attempt(const std::shared_ptr<Flight>& flight);
  void on_attempt(const std::shared_ptr<Flight>& flight, std::size_t slot,
                  Clock::time_point started, Deadline attempt_deadline,
                  Result<InferResult>&& result);
  bool may_wait_for_discovery(Flight& flight) const;
  Error no_pick_error(Flight& flight, const ModelRef& key, const EndpointPool::Pick& picked);
  bool try_later(const std::shared_ptr<Flight>& flight, Clock::time_point at);
  void give_up(const std::shared_ptr<Flight>& flight, Error error);

  // ---- The CPU fallback (client_fallback.cpp) ------------------------------------------------
  std::shared_ptr<const Model> local_model(const InferRequest& request) const;
  bool local_model_serves(const InferRequest& request) const;
  // Runs the request on the fallback. `remote_error`: why the remote attempts are over, the
  // error to hear when the fallback refuses it too; null while a remote attempt is under way.
  void run_locally(const std::shared_ptr<Flight>& flight, const std::string& reason,
                   const Error* remote_error);
  void arm_latency_budget(const std::shared_ptr<Flight>& flight);

  // ---- Deciding and delivering, once each (client_delivery.cpp) ------------------------------
  static bool acquire_reader(Flight& flight);
  void release_reader(const std::shared_ptr<Flight>& flight);
  bool decide(const std::shared_ptr<Flight>& flight, Result<InferResult>&& result,
              bool wait_for_attempt = true);
  void deadline_passed(const std::shared_ptr<Flight>& flight);
  void deliver(const std::shared_ptr<Flight>& flight, Result<InferResult>&& result);
  std::size_t hand_parked(const std::shared_ptr<Flight>& flight, bool timed);
  void expedite(const std::shared_ptr<Flight>& flight);
  Error too_many_in_flight() const;

  void log(LogLevel level, const std::string& message) const {
    if (options_.log) options_.log(level, message);
  }
  bool closing() const { return closing_.load(std::memory_order_acquire); }

  // How long a request waits for the endpoints to report a pinned model's configuration before
  // it looks again.
  static constexpr std::chrono::milliseconds kDiscoveryWait{5};

  ClientOptions options_;
  ClientCounters counters_;
  CallbackPlacement placement_{options_};
  MetadataCache metadata_;
  mutable std::mutex mutex_;                             // guards what follows it, up to endpoints_
  std::atomic<bool> closing_{false};                     // written under mutex_
  std::set<std::shared_ptr<Flight>> local_flights_;      // running on the CPU executor
  std::vector<std::weak_ptr<TransportStream>> streams_;  // open_stream's, for close()
  std::mt19937 random_;                                  // backoff jitter
  std::atomic<bool> local_mode_{false};                  // the last outcome came from the fallback
  std::atomic<std::size_t> in_flight_{0};  // submitted, not yet handed over (max_in_flight)
  std::shared_ptr<TimerQueue> timers_ = TimerQueue::shared();
  std::shared_ptr<DeadlineWatch> deadlines_ = DeadlineWatch::make();
  std::shared_ptr<EndpointPool> endpoints_;  // closed first, while the rest lives
};

}  // namespace sonic::detail
