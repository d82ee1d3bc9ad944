// Deciding a ClientCore's request and delivering its outcome, once each: readers of the inputs
// that an outcome waits for, the deadline watch's decisions, and the hand-overs to the caller,
// one of which may go ahead of the others once the deadline has passed.
#include "client/client_core.hpp"

namespace sonic::detail {

// A new reader of the request's inputs, unless its outcome is decided.
bool ClientCore::acquire_reader(Flight& flight) {
  std::lock_guard<std::mutex> lock(flight.mutex);
  if (flight.completed) return false;
  ++flight.readers;
  return true;
}

// A reader is done with the inputs; the last one delivers an outcome decided meanwhile.
void ClientCore::release_reader(const std::shared_ptr<Flight>& flight) {
  std::unique_ptr<Result<InferResult>> outcome;
  {
    std::lock_guard<std::mutex> lock(flight->mutex);
    if (--flight->readers == 0 && !flight->parked) outcome = std::move(flight->outcome);
  }
  if (outcome) deliver(flight, std::move(*outcome));
}

// Decides the outcome; false when it was decided already. While a remote attempt may still read
// the inputs, the outcome waits for it and the attempt is told to stop, unless
// `wait_for_attempt` is false: the deadline watch's outcome for an attempt whose transport ends
// it by itself, with its own timer for the same deadline. Telling it to stop as well would cost
// the watch, one thread for thousands of requests when the client is overloaded, a post to a
// busy network thread per request. The outcome travels by reference down to where it is stored or
// handed over: an InferResult is a few strings, a vector and a map, and each move of it costs.
bool ClientCore::decide(const std::shared_ptr<Flight>& flight, Result<InferResult>&& result,
                        bool wait_for_attempt) {
  if (flight->completed.exchange(true)) return false;
  counters_.count_outcome(result.ok(), result.code());
  bool held = false;
  std::shared_ptr<CancelSignal> stop;
  {
    std::lock_guard<std::mutex> lock(flight->mutex);
    if (flight->readers > 0 && wait_for_attempt) {  // the last reader delivers it
      stop = flight->attempt_stop;
      flight->outcome = std::make_unique<Result<InferResult>>(std::move(result));
      held = true;
    }
  }
  if (!held) deliver(flight, std::move(result));
  if (stop) stop->cancel();  // the attempt in flight is not needed any more: let go of the inputs
  return true;
}

// The watch found the request not handed over past its deadline. Undecided: whatever its attempt
// is doing (a connection being made, a reconnect backoff, a write under way, a network thread
// far behind), the caller hears now. The attempt's inputs are the request's own unless the
// caller lent them: the transport reads them from the flight, which its callback holds, however
// late it ends. Decided: its outcome jumps the queue it waits in.
void ClientCore::deadline_passed(const std::shared_ptr<Flight>& flight) {
  if (flight->completed.load(std::memory_order_acquire)) return expedite(flight);
  if (!decide(flight,
              Error(StatusCode::DeadlineExceeded,
                    "no outcome by the deadline: the transport had not answered " +
                        std::to_string(DeadlineWatch::kGrace.count()) + " ms after it"),
              flight->on_watch->expiry_waits_for_attempt())) {
    expedite(flight);
  }
}

// An outcome decided in time waits, past its deadline, behind others on its way to the callback
// (a network thread's backlog of reads and callbacks, the callback threads' queue): a second
// hand-over goes ahead of them, and whichever of the two comes first runs the callback. An
// outcome still held for its attempt (borrowed inputs) goes ahead when deliver() gets it.
void ClientCore::expedite(const std::shared_ptr<Flight>& flight) {
  {
    std::lock_guard<std::mutex> lock(flight->mutex);
    if (!flight->parked) return;
  }
  if (flight->handed.load(std::memory_order_acquire)) return;
  placement_.expect();  // the second hand-over, settled as the first is
  // On the watch's thread, which runs no network: to the callback threads (or inline).
  placement_.place([this, flight](bool timed) { return hand_parked(flight, timed); }, false, true);
}

Error ClientCore::too_many_in_flight() const {
  return Error(StatusCode::ResourceExhausted,
               "this client has ClientOptions::max_in_flight (" +
                   std::to_string(options_.max_in_flight) +
                   ") requests in flight: wait for some of them to complete, or raise the limit");
}

// Hands the outcome to the caller, once: a promise at once; a callback through a hand-over that
// claims the outcome parked in the flight, queued where ClientOptions::callbacks says (ahead of
// the outcomes that are not overdue, on the callback threads). Should it still wait there past
// the deadline, the watch queues another hand-over ahead of the others (expedite()).
void ClientCore::deliver(const std::shared_ptr<Flight>& flight, Result<InferResult>&& result) {
  if (flight->delivery == Delivery::Direct) {
    if (flight->on_watch) deadlines_->forget(*flight->on_watch);
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    auto done = std::move(flight->done);
    done(std::move(result));
    return placement_.delivered();
  }
  {
    std::lock_guard<std::mutex> lock(flight->mutex);
    flight->outcome = std::make_unique<Result<InferResult>>(std::move(result));
    flight->parked = true;
  }
  const auto me = std::this_thread::get_id();
  const bool inside_callers_call = flight->submitting == me || flight->cancelling == me;
  auto hand = [this, flight](bool timed) { return hand_parked(flight, timed); };
  placement_.place(hand, inside_callers_call, Clock::now() >= flight->deadline);
}

// One hand-over of a parked outcome: the first to claim it runs the callback. Either settles one
// expected delivery (the second was expected by expedite()).
std::size_t ClientCore::hand_parked(const std::shared_ptr<Flight>& flight, bool timed) {
  if (flight->handed.exchange(true, std::memory_order_acq_rel)) return 1;
  if (flight->on_watch) deadlines_->forget(*flight->on_watch);
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  std::unique_ptr<Result<InferResult>> outcome;
  {
    std::lock_guard<std::mutex> lock(flight->mutex);
    outcome = std::move(flight->outcome);
  }
  auto done = std::move(flight->done);
  placement_.run_callback(done, std::move(*outcome), timed);
  return 1;
}

}  // namespace sonic::detail
