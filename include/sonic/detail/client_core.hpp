// sonic — the engine behind Client: endpoints, retries, circuit breaking, CPU fallback,
// metadata cache, statistics.
#pragma once

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sonic/cancel.hpp"
#include "sonic/detail/endpoint_pool.hpp"
#include "sonic/detail/thread_pool.hpp"
#include "sonic/detail/timer_queue.hpp"
#include "sonic/error.hpp"
#include "sonic/executor.hpp"
#include "sonic/metadata.hpp"
#include "sonic/options.hpp"
#include "sonic/request.hpp"
#include "sonic/stats.hpp"
#include "sonic/transport.hpp"
#include "sonic/validate.hpp"

namespace sonic::detail {

/// A Client's shared state. Every completion path funnels into finish(), which completes a
/// request exactly once.
class ClientCore {
 public:
  /// One request on its way, across all of its attempts.
  struct Flight {
    Flight(InferRequest r, Deadline d, Callback<InferResult> cb)
        : request(std::move(r)), deadline(d), done(std::move(cb)) {}
    InferRequest request;
    Deadline deadline;
    Callback<InferResult> done;
    std::atomic<bool> completed{false};
    std::atomic<bool> local_started{false};
    int attempts = 0;                  // only touched by the attempt chain
    std::size_t last_slot = SIZE_MAX;  // where the previous attempt went
    std::optional<Error> not_found;    // an endpoint lacked the model
    std::mutex cancel_mutex;
    bool cancelled = false;                      // guarded by cancel_mutex
    std::shared_ptr<CancelSignal> attempt_stop;  // the attempt in flight; guarded by cancel_mutex
  };

  explicit ClientCore(ClientOptions options)
      : options_(std::move(options)),
        random_(std::random_device{}()),
        callbacks_(std::make_shared<ThreadPool>(options_.callback_threads)) {
    if (options_.endpoints.empty()) {
      throw Error(StatusCode::InvalidArgument,
                  "no endpoint given: pass a URL such as grpc://127.0.0.1:8001");
    }
    check_headers(options_.headers).value();
    endpoints_ = std::make_shared<EndpointPool>(options_, *timers_);
    endpoints_->start();
  }

  ~ClientCore() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;  // from now on nothing is retried or scheduled
    }
    // Destroying the transports completes their outstanding calls with CANCELLED; then the
    // timer thread runs pending retries at once, and they complete with CANCELLED too.
    endpoints_->close();
    timers_.reset();
  }

  const ClientOptions& options() const noexcept { return options_; }

  /// The transport for control calls: the first endpoint in rotation. Held only for the call.
  std::shared_ptr<Transport> control_transport() {
    auto transport = endpoints_->control_transport();
    if (!transport) throw Error(StatusCode::Cancelled, "the client is being destroyed");
    return transport;
  }

  Deadline request_deadline(const InferRequest& request) const {
    return deadline_after(request.timeout().count() > 0
                              ? request.timeout()
                              : std::chrono::microseconds(options_.default_timeout));
  }
  Deadline control_deadline() const { return deadline_after(options_.control_timeout); }

  /// Checks, validates and sends a request, retrying and falling back as configured. `done`
  /// runs exactly once: inside this call for errors found before sending, else on a sonic
  /// thread. The returned flight may be passed to cancel().
  std::shared_ptr<Flight> submit(InferRequest request, Deadline deadline,
                                 Callback<InferResult> done) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.requests;
    }
    auto flight = std::make_shared<Flight>(std::move(request), deadline, std::move(done));
    start(flight);
    return flight;
  }

  /// Completes the request with CANCELLED unless it already completed, and stops its attempt in
  /// flight (the transport resets the stream). A local run, which cannot be interrupted, goes
  /// on and its result is dropped. True when this call cancelled it.
  bool cancel(const std::shared_ptr<Flight>& flight) {
    std::shared_ptr<CancelSignal> stop;
    {
      std::lock_guard<std::mutex> lock(flight->cancel_mutex);
      if (flight->cancelled) return false;
      flight->cancelled = true;
      stop = std::move(flight->attempt_stop);
    }
    bool cancelled_now = complete_once(
        flight, Error(StatusCode::Cancelled, "the request was cancelled by the caller"));
    if (stop) stop->cancel();
    return cancelled_now;
  }

  /// The callback threads. Completions hold them weakly: a network thread must never own the
  /// client (it would have to join itself when the client goes away).
  std::weak_ptr<ThreadPool> callback_pool() const { return callbacks_; }

  /// A snapshot of the counters.
  ClientStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    ClientStats copy = stats_;
    copy.endpoints = endpoints_->stats();
    return copy;
  }

 private:
  void start(const std::shared_ptr<Flight>& flight) {
    if (auto ok = check_request(flight->request); !ok) return finish(flight, ok.error());
    if (options_.fallback_latency_budget.count() > 0 && local_model(flight->request)) {
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
    std::string key = flight->request.model_name() + '\0' + flight->request.model_version();
    std::shared_ptr<const ModelMetadata> known;
    bool fetch = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& entry = metadata_[key];
      known = entry.metadata;
      if (!known && !entry.fetching) fetch = entry.fetching = true;
    }
    if (known) {
      if (auto ok = validate_request(*known, flight->request); !ok)
        return finish(flight, ok.error());
      return attempt(flight);
    }
    // Another request is already fetching: waiting for it could outlast this request's own
    // deadline, so send now and let the server validate.
    if (!fetch) return attempt(flight);
    control_transport()->model_metadata_async(
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

  static std::string model_key(const InferRequest& request) {
    return request.model_name() + '\0' + request.model_version();
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

  void attempt(const std::shared_ptr<Flight>& flight) {
    if (flight->completed) return;
    if (closing()) return finish(flight, Error(StatusCode::Cancelled, "the client was destroyed"));
    if (Clock::now() >= flight->deadline) {
      return finish(flight, Error(StatusCode::DeadlineExceeded,
                                  "deadline passed before an attempt could be made"));
    }
    auto picked = endpoints_->pick(flight->last_slot, model_key(flight->request));
    if (!picked) {
      if (flight->not_found) return give_up(flight, *flight->not_found);
      return give_up(flight,
                     Error(StatusCode::Unavailable, "no endpoint available: all " +
                                                        std::to_string(endpoints_->active()) +
                                                        " are ejected after failures"));
    }
    std::size_t slot = picked->slot;
    if (++flight->attempts > 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.retries;
    }
    flight->last_slot = slot;
    Deadline attempt_deadline = flight->deadline;
    if (options_.retry.per_attempt_timeout.count() > 0) {
      attempt_deadline =
          std::min(attempt_deadline, Clock::now() + options_.retry.per_attempt_timeout);
    }
    auto stop = std::make_shared<CancelSignal>();
    {
      std::lock_guard<std::mutex> lock(flight->cancel_mutex);
      if (!flight->cancelled) flight->attempt_stop = stop;
    }
    if (flight->completed) stop->cancel();  // cancelled meanwhile: the transport answers at once
    auto started = Clock::now();
    picked->transport->infer_async(
        flight->request, attempt_deadline, stop,
        [this, flight, slot, started, attempt_deadline, stop](Result<InferResult> result) mutable {
          // The stop action refers to the transport: it must not outlive the attempt.
          stop->disarm();
          {
            std::lock_guard<std::mutex> lock(flight->cancel_mutex);
            if (flight->attempt_stop == stop) flight->attempt_stop.reset();
          }
          on_attempt(flight, slot, started, attempt_deadline, std::move(result));
        });
  }

  void on_attempt(const std::shared_ptr<Flight>& flight, std::size_t slot,
                  Clock::time_point started, Deadline attempt_deadline,
                  Result<InferResult> result) {
    StatusCode code = result.code();
    // A per-attempt timeout that is not the request's own deadline counts as a server failure.
    bool attempt_timed_out =
        code == StatusCode::DeadlineExceeded && attempt_deadline < flight->deadline;
    bool server_failure = code == StatusCode::Unavailable || attempt_timed_out;
    endpoints_->record(slot, result.ok(), server_failure, Clock::now() - started);
    if (result) {
      if (local_mode_.exchange(false))
        log(LogLevel::Info, "servers answer again: requests go remote");
      return finish(flight, std::move(result));
    }
    if (code == StatusCode::NotFound && endpoints_->active() > 1) {
      // Servers may host different models: remember that this one lacks it, and try the
      // others at once (pick() skips the endpoints known to lack the model).
      endpoints_->lacks_model(slot, model_key(flight->request));
      flight->not_found = result.error();
      return attempt(flight);
    }
    bool retry = (options_.retry.retryable(code) || attempt_timed_out) &&
                 flight->attempts < options_.retry.max_attempts;
    if (retry) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto at = Clock::now() + options_.retry.backoff(flight->attempts + 1, random_);
      if (at < flight->deadline && !closing_) {
        timers_->schedule(at, [this, flight] { attempt(flight); });
        return;
      }
    }
    give_up(flight, result.error());
  }

  // Remote attempts are over: the CPU executor if it can help, else the error.
  void give_up(const std::shared_ptr<Flight>& flight, Error error) {
    bool server_side =
        error.code() == StatusCode::Unavailable || error.code() == StatusCode::DeadlineExceeded ||
        error.code() == StatusCode::NotFound || error.code() == StatusCode::Unimplemented ||
        error.code() == StatusCode::ResourceExhausted;
    if (server_side && local_model(flight->request) && Clock::now() < flight->deadline) {
      return run_locally(flight, error.message());
    }
    finish(flight, std::move(error));
  }

  void run_locally(const std::shared_ptr<Flight>& flight, const std::string& reason) {
    if (flight->local_started.exchange(true)) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!closing_) ++stats_.fallbacks;
    }
    if (closing()) return finish(flight, Error(StatusCode::Cancelled, "the client was destroyed"));
    if (!local_mode_.exchange(true)) {
      log(LogLevel::Warning, "running requests on the CPU executor: " + reason);
    }
    options_.fallback->infer_async(flight->request, [this, flight](Result<InferResult> result) {
      if (result) result->set_executed_on(ExecutedOn::Local);
      finish(flight, std::move(result));
    });
  }

  void arm_latency_budget(const std::shared_ptr<Flight>& flight) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) return;
    timers_->schedule(Clock::now() + options_.fallback_latency_budget, [this, flight] {
      if (!flight->completed) {
        run_locally(flight, "no answer within the latency budget of " +
                                std::to_string(options_.fallback_latency_budget.count()) + " ms");
      }
    });
  }

  // Caches fetched metadata; a failure is not cached, since the model may appear later.
  Result<std::shared_ptr<const ModelMetadata>> remember(const std::string& key,
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

  bool closing() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return closing_;
  }

  void finish(const std::shared_ptr<Flight>& flight, Result<InferResult> result) {
    complete_once(flight, std::move(result));
  }

  // Completes the request; false when it had completed already.
  bool complete_once(const std::shared_ptr<Flight>& flight, Result<InferResult> result) {
    if (flight->completed.exchange(true)) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (result) {
        ++stats_.succeeded;
      } else {
        ++stats_.failed;
        ++stats_.failures_by_code[static_cast<std::size_t>(result.code())];
      }
    }
    auto done = std::move(flight->done);
    done(std::move(result));
    return true;
  }

  ClientOptions options_;
  mutable std::mutex mutex_;
  bool closing_ = false;
  std::atomic<bool> local_mode_{false};
  std::map<std::string, CacheEntry> metadata_;
  ClientStats stats_;
  std::mt19937 random_;  // backoff jitter, guarded by mutex_
  std::shared_ptr<ThreadPool> callbacks_;
  std::unique_ptr<TimerQueue> timers_ = std::make_unique<TimerQueue>();
  std::shared_ptr<EndpointPool> endpoints_;  // closed first, while the rest lives
};

}  // namespace sonic::detail
