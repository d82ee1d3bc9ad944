// sonic — Caller's out-of-line parts (include/sonic/caller.hpp).
#include "sonic/caller.hpp"

namespace sonic {

void Caller::cancel() {
  std::vector<std::pair<const void*, detail::UniqueFunction<void()>>> actions;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cancelled_.exchange(true, std::memory_order_acq_rel)) return;
    actions.swap(actions_);
  }
  // Outside the lock: an action may ask this caller whether it is gone.
  for (auto& action : actions) action.second();
}

std::optional<Error> Caller::gone(TimePoint now, const std::string& waiting_for) const {
  if (cancelled()) {
    // Triton answers a request cancelled in its queues with CANCELLED (dynamic_batch_scheduler.cc,
    // FinishRejectedCancelledRequests); nobody reads it: the caller went away.
    return Error(StatusCode::Cancelled,
                 "the request was cancelled while it waited for " + waiting_for);
  }
  if (now >= deadline()) {
    return Error(StatusCode::DeadlineExceeded,
                 "the request's deadline passed while it waited for " + waiting_for);
  }
  return std::nullopt;
}

void Caller::on_cancel(const void* key, detail::UniqueFunction<void()> action) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!cancelled()) {
      for (auto& installed : actions_) {
        if (installed.first == key) {
          installed.second = std::move(action);
          return;
        }
      }
      actions_.emplace_back(key, std::move(action));
      return;
    }
  }
  action();
}

}  // namespace sonic
