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

#include "executor/answer_estimate.hpp"
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
    const auto left = caller->deadline() - Clock::now();
    const std::int64_t ahead = std::max<std::int64_t>(0, entry->stats.under_way());
    ModelPace pace;
    pace.ahead = ahead;
    pace.per_execution = entry->batcher ? std::max(1, model.max_batch_size) : 1;
    pace.at_once = std::max<std::int64_t>(
        1, std::min<std::int64_t>(model.instances, static_cast<std::int64_t>(pool_.size())));
    pace.took = std::chrono::nanoseconds(took);
    pace.interval =
        std::chrono::nanoseconds(std::max<std::int64_t>(0, entry->stats.recent_interval_ns()));
    const auto expected = expected_answer(pace);
    if (would_miss_deadline(expected, left)) {
      entry->stats.count_failure(FailureReason::Rejected, Clock::duration::zero());
      return Error(StatusCode::Unavailable,
                   "model '" + model.name + "' would answer in about " + milliseconds(expected) +
                       " (" + std::to_string(ahead) + " requests ahead), after the request's " +
                       "deadline in " + milliseconds(left) +
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
