// sonic — CpuExecutor's admission of a server's requests: the requests under way on each model,
// and the early refusal of one that its model cannot answer before its caller's deadline.
//
// Past its capacity a server that queues everything answers nobody in time: every request waits
// behind others until its deadline is nearly gone, then either runs for a caller who already
// left or makes the requests behind it late too. Refusing at once the requests whose wait
// already exceeds what their deadline leaves keeps the queue as long as the deadlines allow,
// so that those admitted are answered in time, and tells the others while their clients can
// still go to another server or run the model themselves. Triton refuses only by queue length
// (max_queue_size); its clients give up at their deadline, after the wait.
#include <algorithm>
#include <string>
#include <utility>

#include "executor/executor_engine.hpp"
#include "protocol/names.hpp"
#include "sonic/caller.hpp"

namespace sonic {

Admission::~Admission() {
  if (counters_) counters_->answered();
}

Admission::Admission(Admission&& other) noexcept : counters_(std::move(other.counters_)) {}

Admission& Admission::operator=(Admission&& other) noexcept {
  if (this != &other) {
    if (counters_) counters_->answered();
    counters_ = std::move(other.counters_);
  }
  return *this;
}

void Admission::abandon(const Error& why, std::chrono::nanoseconds waited) {
  if (!counters_) return;
  counters_->count_failure(detail::refusal_reason(why), waited);
  counters_->answered();
  counters_.reset();
}

namespace detail {

namespace {

std::string milliseconds(std::chrono::nanoseconds ns) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(ns).count()) + " ms";
}

}  // namespace

Result<Admission> ExecutorEngine::admit(const InferRequest& request, bool shed) {
  auto found = find(request.model_name(), request.model_version());
  if (!found) return Admission();  // it fails, or loads on demand, when it runs
  const std::shared_ptr<Entry>& entry = *found;
  const Model& model = entry->model;
  const auto& caller = request.caller();
  const std::int64_t took = entry->stats.recent_compute_ns();
  if (shed && caller && caller->has_deadline() && took > 0 && !entry->sequencer &&
      !model.is_decoupled()) {
    // Requests under way ahead of this one, in executions (a batch takes up to max_batch_size).
    const std::int64_t ahead = std::max<std::int64_t>(0, entry->stats.under_way());
    const std::int64_t per_execution = entry->batcher ? std::max(1, model.max_batch_size) : 1;
    const std::int64_t executions = ahead / per_execution;
    // How long each takes: while the model has been busy, the time between executions' ends
    // (its real pace, whatever runs at once and whatever they wait for), but never less than
    // one execution's own time; else its executions' own time, in rounds of those that run at
    // once.
    const std::int64_t interval = entry->stats.recent_interval_ns();
    std::chrono::nanoseconds expected;
    if (interval > 0) {
      expected = std::chrono::nanoseconds(std::max((executions + 1) * interval, took));
    } else {
      const std::int64_t at_once = std::max<std::int64_t>(
          1, std::min<std::int64_t>(model.instances, static_cast<std::int64_t>(pool_.size())));
      expected = std::chrono::nanoseconds((executions / at_once + 1) * took);
    }
    // The estimate is a mean, and past capacity the queue fills until the last admitted
    // request's estimate just meets its deadline: any execution slower than the mean would
    // make it late, its execution wasted. A tenth of the time left is kept in hand for that
    // (and for the answer's way back), at no cost in goodput: the model stays as busy.
    const auto now = Clock::now();
    const auto margin = (caller->deadline() - now) / 10;
    if (now + expected + margin > caller->deadline()) {
      entry->stats.count_failure(FailureReason::Rejected, Clock::duration::zero());
      return Error(StatusCode::Unavailable,
                   "model '" + model.name + "' would answer in about " + milliseconds(expected) +
                       " (" + std::to_string(ahead) + " requests ahead), after the request's " +
                       "deadline in " + milliseconds(caller->deadline() - now) +
                       ": refused at once, so that it can go elsewhere",
                   std::string(protocol::reason::kWouldMissDeadline));
    }
  }
  entry->stats.admitted();
  // The count lives in the entry: the Admission keeps it (and so the entry) alive.
  return Admission(std::shared_ptr<ModelCounters>(entry, &entry->stats));
}

}  // namespace detail
}  // namespace sonic
