#include "client/client_core.hpp"

#include <algorithm>

#include "client/blocking_wait.hpp"
#include "client/model_pins.hpp"
#include "protocol/names.hpp"  // the reasons servers give (constants only: no link dependency)
#include "sonic/validate.hpp"

namespace sonic::detail {

namespace {

// An early refusal: the server would not have answered by the deadline, and said so at once.
bool is_early_refusal(const Error& error) {
  return error.code() == StatusCode::Unavailable &&
         error.reason() == protocol::reason::kWouldMissDeadline;
}

// The last attempt's error, saying that it was not retried for the retry budget.
Error throttled_error(const Error& last) {
  Error error(last.code(),
              last.message() +
                  "; not retried: the retry budget of the endpoints that could take it is "
                  "spent (RetryPolicy::budget)",
              last.reason());
  if (last.pushback()) error.set_pushback(*last.pushback());
  return error;
}

}  // namespace

bool ClientCore::Flight::cancel() {
  auto client = core.lock();
  return client && client->cancel(shared_from_this());
}

std::shared_ptr<DeadlineWatch::Watched> ClientCore::OnWatch::hold() {
  auto alive = flight.weak_from_this().lock();
  if (!alive) return nullptr;
  return std::shared_ptr<Watched>(std::move(alive), this);
}

void ClientCore::OnWatch::deadline_passed() {
  if (auto client = flight.core.lock()) client->deadline_passed(flight.shared_from_this());
}

ClientCore::ClientCore(ClientOptions options)
    : options_(std::move(options)), random_(std::random_device{}()) {
  if (options_.endpoints.empty()) {
    throw Error(StatusCode::InvalidArgument,
                "no endpoint given: pass a URL such as grpc://127.0.0.1:8001");
  }
  check_headers(options_.headers).value();
  endpoints_ = std::make_shared<EndpointPool>(options_, *timers_);
  endpoints_->start();
}

void ClientCore::close() {
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
    decide(flight, Error(StatusCode::Cancelled, "the client was destroyed"));
  }
  placement_.wait_all_delivered();
}

Result<std::shared_ptr<TransportStream>> ClientCore::open_stream(
    Deadline deadline, std::function<void(StreamResponse)> on_response, Callback<void> done) {
  auto opened = control_transport()->open_stream(deadline, std::move(on_response), std::move(done));
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

std::shared_ptr<Transport> ClientCore::control_transport() {
  auto transport = endpoints_->control_transport();
  if (!transport) throw Error(StatusCode::Cancelled, "the client is being destroyed");
  return transport;
}

std::shared_ptr<ClientCore::Flight> ClientCore::submit(InferRequest request, Deadline deadline,
                                                       Callback<InferResult> done,
                                                       Delivery delivery) {
  ClientCounters::add(counters_.requests);
  placement_.expect();
  auto flight = std::make_shared<Flight>(weak_from_this(), std::move(request), deadline,
                                         std::move(done), delivery);
  // Counted until handed over, a refused request too (for as long as its refusal takes).
  const std::size_t in_flight = in_flight_.fetch_add(1, std::memory_order_relaxed);
  if (options_.max_in_flight > 0 && in_flight >= options_.max_in_flight) {
    flight->submitting = std::this_thread::get_id();
    decide(flight, too_many_in_flight());
    flight->submitting = std::thread::id();
    return flight;
  }
  if (deadline != Deadline::max()) {
    auto on_watch = std::make_unique<OnWatch>(*flight, deadlines_);
    on_watch->borrows_inputs =
        std::any_of(flight->request.inputs().begin(), flight->request.inputs().end(),
                    [](const NamedTensor& input) { return input.tensor.borrowed(); });
    if (auto* waiting = WaitingThread::current()) on_watch->waiter_drives = waiting->driving();
    flight->on_watch = std::move(on_watch);
    deadlines_->watch(*flight->on_watch, deadline);
  }
  flight->submitting = std::this_thread::get_id();
  start(flight);
  flight->submitting = std::thread::id();
  return flight;
}

bool ClientCore::cancel(const std::shared_ptr<Flight>& flight) {
  {
    std::lock_guard<std::mutex> lock(flight->mutex);
    if (flight->cancelled) return false;
    flight->cancelled = true;
  }
  flight->cancelling = std::this_thread::get_id();
  const bool cancelled_now =
      decide(flight, Error(StatusCode::Cancelled, "the request was cancelled by the caller"));
  flight->cancelling = std::thread::id();
  return cancelled_now;
}

void ClientCore::hand_over(Callback<InferResult> done, Result<InferResult>&& result,
                           bool inside_callers_call) {
  placement_.place(
      [this, done = std::move(done), result = std::move(result)](bool timed) mutable {
        placement_.run_callback(done, std::move(result), timed);
        return std::size_t{1};
      },
      inside_callers_call);
}

void ClientCore::hand_over_all(std::vector<Handoff> all, bool inside_callers_call) {
  if (all.empty()) return;
  placement_.place(
      [this, all = std::move(all)](bool timed) mutable {
        for (auto& handoff : all) {
          placement_.run_callback(handoff.done, std::move(handoff.result), timed);
        }
        return all.size();
      },
      inside_callers_call);
}

void ClientCore::hand_over(Callback<InferResult> done, Result<InferResult>&& result,
                           Delivery delivery, bool inside_callers_call) {
  if (delivery == Delivery::Callback) {
    return hand_over(std::move(done), std::move(result), inside_callers_call);
  }
  done(std::move(result));
  placement_.delivered();
}

ClientStats ClientCore::stats() const {
  ClientStats copy = counters_.snapshot();
  copy.slow_callbacks = placement_.slow_callbacks();
  copy.callback_exceptions = placement_.callback_exceptions();
  copy.endpoints = endpoints_->stats();
  return copy;
}

// ---- A flight's way -------------------------------------------------------------------------

void ClientCore::start(const std::shared_ptr<Flight>& flight) {
  if (auto ok = check_request(flight->request); !ok) return (void)decide(flight, ok.error());
  if (auto ok = apply_pin(options_.routing, flight->request); !ok) {
    return (void)decide(flight, ok.error());
  }
  if (options_.fallback_latency_budget.count() > 0 && local_model_serves(flight->request)) {
    arm_latency_budget(flight);
  }
  if (!options_.validate_inputs) return attempt(flight);
  validate_then_attempt(flight);
}

// Validation against the model's metadata: the local model's, or the cached copy of a
// server's, without a round trip; else fetched once for every request.
void ClientCore::validate_then_attempt(const std::shared_ptr<Flight>& flight) {
  if (auto model = local_model(flight->request)) {
    if (auto ok = validate_request(model->metadata(), flight->request); !ok) {
      return (void)decide(flight, ok.error());
    }
    return attempt(flight);
  }
  const ModelRef key = model_ref_of(flight->request);
  const MetadataCache::Lookup found = metadata_.lookup(key);
  if (found.known) {
    if (auto ok = validate_request(*found.known, flight->request); !ok) {
      return (void)decide(flight, ok.error());
    }
    return attempt(flight);
  }
  // Another request is already fetching: waiting for it could outlast this request's own
  // deadline, so send now and let the server validate.
  if (!found.fetch) return attempt(flight);
  auto transport = endpoints_->control_transport();
  if (!transport) {  // every endpoint is gone: the client is closing
    metadata_.forget(key);
    return (void)decide(flight, Error(StatusCode::Cancelled, "the client is being destroyed"));
  }
  transport->model_metadata_async(
      flight->request.model_name(), flight->request.model_version(),
      std::min(flight->deadline, control_deadline()),
      [this, key, flight](Result<ModelMetadata> metadata) {
        auto model_metadata = metadata_.remember(key, std::move(metadata));
        if (model_metadata) {
          if (auto ok = validate_request(**model_metadata, flight->request); !ok) {
            return (void)decide(flight, ok.error());
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

void ClientCore::attempt(const std::shared_ptr<Flight>& flight) {
  // The attempt is a reader of the inputs from here until it is over (when the transport, if
  // one is reached, has answered): an outcome decided meanwhile waits for it.
  if (!acquire_reader(*flight)) return;  // decided already: nothing more to try
  if (closing()) {
    decide(flight, Error(StatusCode::Cancelled, "the client was destroyed"));
    return release_reader(flight);
  }
  if (Clock::now() >= flight->deadline) {
    decide(flight,
           Error(StatusCode::DeadlineExceeded, "deadline passed before an attempt could be made"));
    return release_reader(flight);
  }
  const ModelRef key = model_ref_of(flight->request);
  EndpointPool::PickFor want;
  want.avoid = flight->last_slot;
  // A retry spends budget, unless the previous attempt never left the client.
  const Error* last_error = flight->last_error();
  want.retry = flight->attempts > 0 && !(last_error && last_error->never_sent());
  want.refused = flight->refused();
  auto picked = endpoints_->pick(key, want);
  if (!picked) {
    // The endpoints are still reporting a pinned model's configuration: ask again shortly.
    if (endpoints_->awaiting_discovery(key) && may_wait_for_discovery(*flight) &&
        try_later(flight, Clock::now() + kDiscoveryWait)) {
      return release_reader(flight);
    }
    // Only pushed-back endpoints could take it: the fallback now, or the earliest of them once
    // its pause is over (try_later() refuses a time past the deadline).
    if (picked.resumes != Clock::time_point{} && !local_model_serves(flight->request) &&
        try_later(flight, picked.resumes)) {
      return release_reader(flight);
    }
    give_up(flight, no_pick_error(*flight, key, picked));
    return release_reader(flight);
  }
  const std::size_t slot = picked.slot;
  if (++flight->attempts > 1) ClientCounters::add(counters_.retries);
  flight->last_slot = slot;
  Deadline attempt_deadline = flight->deadline;
  if (options_.retry.per_attempt_timeout.count() > 0 &&
      !(flight->trail && flight->trail->whole_deadline)) {
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
  picked.transport->infer_async(
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

void ClientCore::on_attempt(const std::shared_ptr<Flight>& flight, std::size_t slot,
                            Clock::time_point started, Deadline attempt_deadline,
                            Result<InferResult>&& result) {
  const StatusCode code = result.code();
  // A per-attempt timeout that is not the request's own deadline counts as a server failure.
  const bool attempt_timed_out =
      code == StatusCode::DeadlineExceeded && attempt_deadline < flight->deadline;
  const bool retryable = options_.retry.retryable(code) || attempt_timed_out;
  EndpointPool::AttemptReport report;
  report.ok = result.ok();
  if (!report.ok) {
    const Error& error = result.error();
    report.refusal = is_early_refusal(error);
    report.pushback = error.pushback();
    // gRPC's retry filter takes a token only for the codes its policy retries, "so that we
    // don't count things like failures due to malformed requests (INVALID_ARGUMENT)"; and a
    // request that never left the client cost its server nothing (gRFC A6 retries those
    // transparently).
    // An early refusal, answered at once, cost its server next to nothing either.
    report.retryable_failure = retryable && !error.never_sent() && !report.refusal;
    // A server that says it is busy (an early refusal, a pushback) is not a broken one.
    report.server_failure =
        (code == StatusCode::Unavailable && !report.refusal && !report.pushback) ||
        attempt_timed_out;
  }
  endpoints_->record(slot, report, Clock::now() - started);
  if (result) {
    if (auto pinned = check_pin(options_.routing, flight->request, *result); !pinned) {
      return (void)decide(flight, pinned.error());
    }
    if (local_mode_.exchange(false)) {
      log(LogLevel::Info, "servers answer again: requests go remote");
    }
    return (void)decide(flight, std::move(result));
  }
  if (flight->completed) return;  // decided elsewhere (a cancel, a local run): nothing to try
  if (code == StatusCode::Unavailable) {
    auto& unavailable = flight->left_behind().unavailable;
    (unavailable ? *unavailable : unavailable.emplace()).note(slot, result.error());
  }
  if (code == StatusCode::NotFound && endpoints_->active() > 1) {
    // Servers may host different models: remember that this one lacks it, and try the
    // others at once (pick() skips the endpoints known to lack the model).
    endpoints_->lacks_model(slot, model_ref_of(flight->request));
    endpoints_->rediscover_soon();
    flight->left_behind().not_found = result.error();
    return attempt(flight);
  }
  // gRFC A6: a pushback that is not a non-negative integer means "do not retry". gRPC's retry
  // filter logs "not retrying due to server push-back" and ends the call; here the fallback,
  // which loads no server, may still answer.
  const bool retry = retryable && report.pushback != Error::kNoRetry &&
                     flight->attempts < options_.retry.max_attempts;
  if (!retry) return give_up(flight, result.error());
  if (report.refusal) {
    // The server will not make the deadline, and says so at once: the request moves on now,
    // with no backoff, to an endpoint that has not refused it, else to the fallback. A refusal
    // against a per-attempt timeout shorter than the request's deadline says only that the
    // attempt's time was too short: the next attempt, wherever it goes (this server too), has
    // all the time the request has left, once.
    Flight::Trail& trail = flight->left_behind();
    if (attempt_deadline < flight->deadline && !trail.whole_deadline) {
      trail.whole_deadline = true;
    } else {
      trail.refused.push_back(slot);
    }
    trail.last_error = result.error();
    return attempt(flight);
  }
  EndpointPool::PickFor want;
  want.avoid = slot;
  want.retry = true;
  want.refused = flight->refused();
  if (!result.error().never_sent() &&
      endpoints_->retry_throttled(model_ref_of(flight->request), want)) {
    // Wherever it went, the retry budget would refuse it: no point waiting a backoff first.
    ClientCounters::add(counters_.throttled_retries);
    return give_up(flight, throttled_error(result.error()));
  }
  Clock::time_point at;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const double draw = std::uniform_real_distribution<double>(0.0, 1.0)(random_);
    at = Clock::now() + options_.retry.backoff(flight->attempts + 1, draw);
  }
  flight->left_behind().last_error = result.error();
  if (try_later(flight, at)) return;
  give_up(flight, result.error());
}

// Why an attempt found no endpoint: the error its request ends with, or goes to the fallback.
Error ClientCore::no_pick_error(Flight& flight, const ModelRef& key,
                                const EndpointPool::Pick& picked) {
  const bool paused = picked.resumes != Clock::time_point{};
  if (picked.throttled && !paused) {
    ClientCounters::add(counters_.throttled_retries);
    if (const Error* last = flight.last_error()) return throttled_error(*last);
  }
  // A retry that found nowhere to go (every other endpoint refused it, paused, or the budget):
  // the caller hears what the last attempt said.
  const Error* last = flight.last_error();
  if (last && (flight.refused() || paused || picked.throttled)) return *last;
  if (flight.trail && flight.trail->not_found) return *flight.trail->not_found;
  if (paused) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(picked.resumes - Clock::now());
    return Error(StatusCode::Unavailable,
                 "every endpoint that may serve model '" + key.name +
                     "' asked for a pause (server pushback); the first resumes in " +
                     std::to_string(std::max<std::int64_t>(left.count(), 0)) + " ms");
  }
  return no_endpoint_error(key, endpoints_->why_unservable(key), endpoints_->active());
}

// A request waits for the endpoints' answers about a pinned model for a control call's time at
// most (control_timeout), whatever its own deadline.
bool ClientCore::may_wait_for_discovery(Flight& flight) const {
  const auto now = Clock::now();
  Clock::time_point& until = flight.left_behind().discovery_wait_until;
  if (until == Clock::time_point{}) until = now + options_.control_timeout;
  return now < until;
}

// Schedules another attempt at `at` unless that is past the request's deadline or the client is
// closing; true when scheduled.
bool ClientCore::try_later(const std::shared_ptr<Flight>& flight, Clock::time_point at) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (at >= flight->deadline || closing_) return false;
  timers_->schedule(this, at, [this, flight] { attempt(flight); });
  return true;
}

}  // namespace sonic::detail
