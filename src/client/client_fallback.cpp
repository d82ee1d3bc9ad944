// The CPU fallback of a ClientCore: a request the servers could not answer runs on
// ClientOptions::fallback, as does one that outlasts its latency budget (the first answer wins).
#include "client/client_core.hpp"
#include "sonic/caller.hpp"

namespace sonic::detail {

namespace {

// A copy of the request whose inputs own their bytes. A local run cannot be interrupted and may
// outlive the request (a cancel, a remote answer that wins, the client's destruction), after
// which the caller may free its memory: it works on its own copy. Owned inputs are shared, not
// copied; a memcpy of the borrowed ones is small next to running a model on CPU.
InferRequest with_owned_inputs(const InferRequest& request) {
  return InferRequest(request).own_inputs();
}

// Errors a server, or the way to it, is to blame for: the fallback may answer instead.
bool server_side(StatusCode code) {
  return code == StatusCode::Unavailable || code == StatusCode::DeadlineExceeded ||
         code == StatusCode::NotFound || code == StatusCode::Unimplemented ||
         code == StatusCode::ResourceExhausted;
}

}  // namespace

std::shared_ptr<const Model> ClientCore::local_model(const InferRequest& request) const {
  if (!options_.fallback) return nullptr;
  auto model = options_.fallback->model(request.model_name(), request.model_version());
  return model ? *model : nullptr;
}

// Whether the fallback can run the request: its model is loaded there, or will load on its first
// local run (from a repository).
bool ClientCore::local_model_serves(const InferRequest& request) const {
  return options_.fallback &&
         options_.fallback->serves(request.model_name(), request.model_version());
}

std::optional<std::int64_t> ClientCore::local_max_batch(const InferRequest& request) const {
  if (!local_model_serves(request)) return std::nullopt;
  auto model = options_.fallback->model(request.model_name(), request.model_version());
  if (!model && options_.fallback->load_model(request.model_name(), {}).ok()) {
    model = options_.fallback->model(request.model_name(), request.model_version());
  }
  if (!model) return std::nullopt;
  return (*model)->max_batch_size;
}

// Remote attempts are over: the CPU executor if it can help, else the error.
void ClientCore::give_up(const std::shared_ptr<Flight>& flight, Error error) {
  if (flight->trail && flight->trail->unavailable) {
    error = flight->trail->unavailable->describe(
        std::move(error), [this](std::size_t slot) { return endpoints_->url(slot); });
  }
  const bool blame_server = server_side(error.code());
  if (blame_server && local_model_serves(flight->request) && Clock::now() < flight->deadline) {
    return run_locally(flight, error.message(), &error);
  }
  if (blame_server && options_.fallback && !local_model_serves(flight->request)) {
    // A user who configured a fallback expects it to have answered: say why it did not.
    const InferRequest& request = flight->request;
    std::string model = "'" + request.model_name() + "'";
    if (!request.model_version().empty()) model += " version " + request.model_version();
    error = Error(error.code(),
                  error.message() + "; the CPU fallback did not run: it has no model " + model +
                      " (load it into the fallback executor, or give it a repository)",
                  error.reason());
  }
  decide(flight, std::move(error));
}

void ClientCore::run_locally(const std::shared_ptr<Flight>& flight, const std::string& reason,
                             const Error* remote_error) {
  if (flight->local_started.exchange(true)) return;
  // The copy of the inputs reads the caller's memory: as a reader, so that an outcome decided
  // meanwhile (a remote answer beating the latency budget) waits for it.
  if (!acquire_reader(*flight)) return;  // decided already: nothing to run
  bool closing_now;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_now = closing_;
    if (!closing_now) local_flights_.insert(flight);  // close() completes it, if it comes first
  }
  if (closing_now) {
    decide(flight, Error(StatusCode::Cancelled, "the client was destroyed"));
    return release_reader(flight);
  }
  const Clock::time_point started = Clock::now();
  InferRequest own = with_owned_inputs(flight->request);
  release_reader(flight);
  // Its caller waits until its deadline: past the fallback's capacity, a request whose deadline
  // passes while it waits there is answered unrun (the executor checks), not run for nobody,
  // and one the fallback cannot answer by then is refused at once.
  if (flight->deadline != Deadline::max()) own.caller(std::make_shared<Caller>(flight->deadline));
  // The executor may answer after the client is gone: it holds the core weakly.
  auto ran = options_.fallback->infer_async_in_time(
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
        self->decide(flight, std::move(result));
      });
  if (!ran) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (local_flights_.erase(flight) == 0) return;  // close() completed it
    }
    if (!remote_error) {
      // A remote attempt is still under way (the latency budget's race) and may yet answer in
      // time; if it fails, give_up() asks the fallback again.
      flight->local_started = false;
      return;
    }
    decide(flight,
           Error(remote_error->code(),
                 remote_error->message() +
                     "; the CPU fallback would not answer in time either: " + ran.error().message(),
                 ran.error().reason()));
    return;
  }
  ClientCounters::add(counters_.fallbacks);
  if (!local_mode_.exchange(true)) {
    log(LogLevel::Warning, "running requests on the CPU executor: " + reason);
  }
}

// With ClientOptions::fallback_latency_budget, a request still unanswered then also runs on the
// fallback: the first answer wins.
void ClientCore::arm_latency_budget(const std::shared_ptr<Flight>& flight) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closing_) return;
  timers_->schedule(this, Clock::now() + options_.fallback_latency_budget, [this, flight] {
    if (!flight->completed && !closing()) {
      run_locally(flight,
                  "no answer within the latency budget of " +
                      std::to_string(options_.fallback_latency_budget.count()) + " ms",
                  nullptr);
    }
  });
}

}  // namespace sonic::detail
