// sonic — requests of one model merged into executions, as Triton's dynamic batcher merges them:
// the inputs of concurrent requests are joined along the batch dimension, the model runs once,
// and each request gets its rows of the outputs.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <variant>
#include <vector>

#include "client/batch_rows.hpp"
#include "executor/request_caller.hpp"
#include "sonic/batching.hpp"
#include "sonic/detail/unique_function.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

/// Whether two requests can share an execution: the same inputs (names, types, and shapes past
/// the batch dimension); BYTES only when `bytes` (a model that takes a batch as its requests,
/// which joins no rows).
inline bool mergeable(const InferRequest& a, const InferRequest& b, bool bytes = false) {
  if (a.inputs().size() != b.inputs().size()) return false;
  for (std::size_t i = 0; i < a.inputs().size(); ++i) {
    const auto& x = a.inputs()[i];
    const auto& y = b.inputs()[i];
    if (x.name != y.name || x.tensor.dtype() != y.tensor.dtype() ||
        (x.tensor.dtype() == DataType::Bytes && !bytes) ||
        !std::equal(x.tensor.shape().begin() + 1, x.tensor.shape().end(),
                    y.tensor.shape().begin() + 1, y.tensor.shape().end())) {
      return false;
    }
  }
  return true;
}

/// One request joined from `parts` (mergeable, in order): each input's rows one after the
/// other. Asks for every output.
inline InferRequest merge_requests(const std::vector<const InferRequest*>& parts) {
  const InferRequest& first = *parts.front();
  InferRequest merged(first.model_name(), first.model_version());
  std::vector<const Tensor*> inputs(parts.size());
  for (std::size_t i = 0; i < first.inputs().size(); ++i) {
    for (std::size_t p = 0; p < parts.size(); ++p) inputs[p] = &parts[p]->inputs()[i].tensor;
    merged.input(first.inputs()[i].name, join_rows(inputs, false));
  }
  return merged;
}

/// A request's integer parameter (int64 or uint64), or `otherwise`.
inline std::uint64_t unsigned_parameter(const InferRequest& request, std::string_view name,
                                        std::uint64_t otherwise) {
  auto it = request.parameters().find(name);
  if (it == request.parameters().end()) return otherwise;
  if (const auto* u = std::get_if<std::uint64_t>(&it->second)) return *u;
  if (const auto* i = std::get_if<std::int64_t>(&it->second)) {
    return *i < 0 ? otherwise : static_cast<std::uint64_t>(*i);
  }
  return otherwise;
}

/// The queues of one model's requests and the runners that empty them. `execute` runs one batch
/// (one request or several to merge) on the runner's thread; `reject` answers a request the
/// queue refuses (full, or its timeout passed) or gives up (its caller went away: cancelled, or
/// past its deadline), on a runner's thread or a pool thread; `post`
/// puts a runner on the executor's pool. At most `instances` runners at once, each running one
/// batch at a time; a caller of run_here() may be one while it waits.
/// Runners keep the batcher alive (make it with std::make_shared). Thread-safe.
class DynamicBatcher : public std::enable_shared_from_this<DynamicBatcher> {
 public:
  struct Pending {
    InferRequest request;
    Callback<InferResult> done;
    Clock::time_point queued;
    std::int64_t batch = 1;
    Clock::time_point deadline = Clock::time_point::max();  // set by submit()
  };
  using Execute = std::function<void(std::vector<Pending>)>;
  using Reject = std::function<void(Pending, Error)>;
  using Post = std::function<void(UniqueFunction<void()>)>;

  DynamicBatcher(DynamicBatching policy, std::int64_t max_batch_size, int instances,
                 Execute execute, Reject reject, Post post)
      : policy_(std::move(policy)),
        max_batch_size_(std::max<std::int64_t>(1, max_batch_size)),
        instances_(std::max(1, instances)),
        execute_(std::move(execute)),
        reject_(std::move(reject)),
        post_(std::move(post)) {
    std::sort(policy_.preferred_batch_sizes.begin(), policy_.preferred_batch_sizes.end());
    const std::uint64_t levels = std::max<std::uint64_t>(1, policy_.priority_levels);
    for (std::uint64_t level = 1; level <= levels; ++level) {
      auto it = policy_.priority_queue_policy.find(level);
      levels_.emplace_back();
      levels_.back().policy =
          it == policy_.priority_queue_policy.end() ? policy_.default_queue_policy : it->second;
    }
  }

  /// Lets requests with BYTES inputs share a batch: for a model that takes a batch as its
  /// requests (Model::compute_batch), whose rows are never joined. Before the first submit().
  void batch_bytes() { batches_bytes_ = true; }

  /// Queues a request (its batch within max_batch_size, checked by the caller) at its priority
  /// level. `done` runs once, never inside this call, on a runner's thread (a pool thread, or a
  /// caller of run_here() running batches meanwhile): with the answer, or (through `reject`)
  /// with UNAVAILABLE when the queue is full or the request's timeout passes while it waits, or
  /// with its caller's CANCELLED or DEADLINE_EXCEEDED when the caller goes away first: a
  /// cancelled caller's requests leave the queue at once (Caller::on_cancel), one past its
  /// deadline when the queue is next looked at.
  void submit(Pending pending) {
    watch_caller(pending);
    std::unique_lock<std::mutex> lock(state_.mutex);
    if (!admit(pending)) {
      lock.unlock();
      // Triton's code and words (RequestQueue::Enqueue).
      post_([self = shared_from_this(), pending = std::move(pending)]() mutable {
        self->reject_(std::move(pending),
                      Error(StatusCode::Unavailable, "Exceeds maximum queue size"));
      });
      return;
    }
    if (state_.waiting > 0) {
      lock.unlock();
      state_.changed.notify_one();
      return;
    }
    if (state_.runners >= instances_) return;  // a busy runner takes it when it is done
    ++state_.runners;
    post_runner(lock);
  }

  /// Whether the calling thread is running a batch of this batcher's (a model's function that
  /// calls its own model, directly or through others): such a call must not queue behind the
  /// batch it is part of.
  bool runs_on_this_thread() const {
    const auto& running = batchers_running_here();
    return std::find(running.begin(), running.end(), this) != running.end();
  }

  /// submit(), but waits for the request's answer on the calling thread, and forms and runs
  /// batches here while no executor thread runs them: it takes the place of a runner that is
  /// posted but not started (the pool may be busy with callers like this one), or starts one
  /// when fewer than `instances` run. So the wait never needs a free pool thread. It stops
  /// running batches once its own is done, leaving the rest to a posted runner. `done` runs
  /// exactly once before this returns, on this thread or on the runner's.
  void run_here(Pending pending) {
    auto answered = std::make_shared<bool>(false);  // guarded by state_.mutex
    pending.done = [this, answered, done = std::move(pending.done)](Result<InferResult> r) mutable {
      done(std::move(r));
      std::lock_guard<std::mutex> lock(state_.mutex);
      *answered = true;
      state_.slot_or_answer.notify_all();
      state_.changed.notify_all();  // were this thread waiting for a batch to fill, it stops
    };
    watch_caller(pending);
    std::unique_lock<std::mutex> lock(state_.mutex);
    if (!admit(pending)) {
      lock.unlock();
      reject_(std::move(pending), Error(StatusCode::Unavailable, "Exceeds maximum queue size"));
      return;
    }
    if (state_.waiting > 0) state_.changed.notify_one();
    const auto until_answered = [&answered] { return *answered; };
    while (!*answered) {
      if (!empty() && state_.runners < instances_) {
        ++state_.runners;
        run(lock, until_answered);
      } else if (!empty() && state_.posted > 0) {
        --state_.posted;  // its slot is this thread's now: the posted runner will find none
        run(lock, until_answered);
      } else {
        // The request runs on a runner's thread, or will: each runs until no request waits,
        // or posts a runner in its place (which wakes this thread to take it).
        state_.slot_or_answer.wait(lock);
      }
    }
  }

 private:
  static constexpr std::chrono::microseconds kLongestTimeout = std::chrono::hours(24 * 365);

  struct Level {
    QueuePolicy policy;
    std::deque<Pending> waiting;  // in time, oldest first
    std::deque<Pending> delayed;  // past their timeout, kept (DELAY)
  };
  struct State {
    std::mutex mutex;
    std::condition_variable changed;         // a request came: for runners waiting to fill
    std::condition_variable slot_or_answer;  // for run_here(): a runner posted, or an answer
    int runners = 0;                         // posted or running
    int posted = 0;                          // of those, posted and not started
    int waiting = 0;                         // runners waiting for a batch to fill
  };

  // The batchers whose batches the calling thread is running, innermost last.
  static std::vector<const DynamicBatcher*>& batchers_running_here() {
    thread_local std::vector<const DynamicBatcher*> running;
    return running;
  }

  // Gives up a runner's slot: to a runner posted in its place while requests wait. Under
  // `lock`, held again on return.
  void give_up_slot(std::unique_lock<std::mutex>& lock) {
    if (empty()) {
      --state_.runners;
      return;
    }
    post_runner(lock);
    lock.lock();
  }

  // A cancelled caller's requests leave the queue as soon as it goes, not when a runner next
  // looks: a client that opens and resets streams cannot keep their requests (and their
  // bytes) queued behind a long batch.
  void watch_caller(const Pending& pending) {
    if (!pending.request.caller()) return;
    pending.request.caller()->on_cancel(this,
                                        [weak = std::weak_ptr<DynamicBatcher>(shared_from_this())] {
                                          if (auto self = weak.lock()) self->withdraw_cancelled();
                                        });
  }

  // Takes the requests of cancelled callers out of every queue and answers them on the pool
  // (never inline: this runs on the thread that cancels). Their inputs are let go of now.
  void withdraw_cancelled() {
    std::vector<Pending> gone;
    {
      std::lock_guard<std::mutex> lock(state_.mutex);
      for (auto& level : levels_) {
        for (auto* queue : {&level.waiting, &level.delayed}) {
          for (auto it = queue->begin(); it != queue->end();) {
            const auto& caller = it->request.caller();
            if (!caller || !caller->cancelled()) {
              ++it;
              continue;
            }
            gone.push_back(std::move(*it));
            it = queue->erase(it);
          }
        }
      }
    }
    for (auto& p : gone) {
      auto why =
          p.request.caller()->gone(Clock::now(), "model '" + p.request.model_name() + "'").value();
      p.request = InferRequest(p.request.model_name(), p.request.model_version());
      post_([self = shared_from_this(), p = std::move(p), why = std::move(why)]() mutable {
        self->reject_(std::move(p), std::move(why));
      });
    }
  }

  // Queues `pending` at its level unless the level's queue is full. Under state_.mutex.
  bool admit(Pending& pending) {
    Level& level = levels_[level_of(pending.request)];
    std::chrono::microseconds timeout = level.policy.default_timeout;
    if (level.policy.allow_timeout_override) {
      // A request may shorten its queue's timeout, never lengthen it: Triton takes its own
      // only when it is set and below the default (PriorityQueue::PolicyQueue::Enqueue, "override
      // != 0 && override < default"), so with no default timeout it has none either.
      const auto own = unsigned_parameter(pending.request, "timeout", 0);
      if (own != 0 && own < static_cast<std::uint64_t>(timeout.count())) {
        timeout = std::chrono::microseconds(static_cast<std::int64_t>(own));
      }
    }
    // A timeout past any real wait (a client may send up to 2^64 microseconds) is none: the
    // deadline, in the clock's nanoseconds, must not overflow.
    if (timeout.count() > 0 && timeout < kLongestTimeout) {
      pending.deadline = pending.queued + timeout;
    }
    if (level.policy.max_queue_size != 0 &&
        level.waiting.size() + level.delayed.size() >= level.policy.max_queue_size) {
      return false;
    }
    level.waiting.push_back(std::move(pending));
    return true;
  }

  // Posts a runner for a slot counted in `runners`; a caller of run_here() may take its place
  // before it starts. Under `lock`, which it releases.
  void post_runner(std::unique_lock<std::mutex>& lock) {
    ++state_.posted;
    lock.unlock();
    state_.slot_or_answer.notify_all();
    post_([self = shared_from_this()] {
      std::unique_lock<std::mutex> runner_lock(self->state_.mutex);
      if (self->state_.posted == 0) return;  // a caller of run_here() took the slot
      --self->state_.posted;
      self->run(runner_lock, [] { return false; });
    });
  }

  std::size_t level_of(const InferRequest& request) const {
    if (policy_.priority_levels == 0) return 0;
    std::uint64_t priority = unsigned_parameter(request, "priority", 0);
    if (priority == 0 || priority > policy_.priority_levels) {
      priority = policy_.default_priority_level;  // as Triton treats them
    }
    return static_cast<std::size_t>(std::clamp<std::uint64_t>(priority, 1, levels_.size()) - 1);
  }

  // Calls visit(pending) over every waiting request in the order batches take them: level by
  // level, each level's in-time requests before its delayed ones; stops when visit says false.
  template <typename Visit>
  void in_order(Visit&& visit) const {
    for (const auto& level : levels_) {
      for (const auto* queue : {&level.waiting, &level.delayed}) {
        for (const auto& p : *queue) {
          if (!visit(p)) return;
        }
      }
    }
  }

  Pending take_first() {
    for (auto& level : levels_) {
      for (auto* queue : {&level.waiting, &level.delayed}) {
        if (!queue->empty()) {
          Pending p = std::move(queue->front());
          queue->pop_front();
          return p;
        }
      }
    }
    throw std::logic_error("DynamicBatcher: took more than was waiting");  // never: see ready()
  }

  // Requests whose caller went away (cancelled, or past its deadline): out, to be answered
  // with the caller's error, as Triton's queue skips a cancelled request (ApplyPolicy). Then
  // requests whose queue timeout passed: moved to their level's delayed queue (DELAY), or out,
  // to be rejected. Returns the earliest timeout or caller deadline still ahead.
  Clock::time_point expire(Clock::time_point now, std::vector<std::pair<Pending, Error>>& out) {
    Clock::time_point next = Clock::time_point::max();
    for (auto& level : levels_) {
      for (auto* queue : {&level.waiting, &level.delayed}) {
        for (auto it = queue->begin(); it != queue->end();) {
          const auto& caller = it->request.caller();
          if (caller && caller->gone(now)) {
            auto why = caller->gone(now, "model '" + it->request.model_name() + "'").value();
            out.emplace_back(std::move(*it), std::move(why));
            it = queue->erase(it);
            continue;
          }
          if (caller) next = std::min(next, caller->deadline());
          ++it;
        }
      }
      for (auto it = level.waiting.begin(); it != level.waiting.end();) {
        if (it->deadline > now) {
          next = std::min(next, it->deadline);
          ++it;
          continue;
        }
        if (level.policy.delay_expired) {
          level.delayed.push_back(std::move(*it));
        } else {
          out.emplace_back(std::move(*it),
                           Error(StatusCode::Unavailable, "Request timeout expired"));
        }
        it = level.waiting.erase(it);
      }
    }
    return next;
  }

  // How many requests, in order, form the next batch now; 0 to wait for more.
  std::size_t ready(Clock::time_point now) const {
    std::int64_t total = 0;
    std::size_t count = 0, preferred_count = 0, queued = 0;
    const Pending* first = nullptr;
    bool stopped = false, alone = false;
    in_order([&](const Pending& p) {
      ++queued;
      if (stopped) return true;  // only counting
      if (p.batch < 0) {         // runs alone (at once), after those before it
        alone = count == 0;
        stopped = true;
        return true;
      }
      if (first && (!mergeable(first->request, p.request, batches_bytes_) ||
                    total + p.batch > max_batch_size_)) {
        stopped = true;
        return true;
      }
      if (!first) first = &p;
      total += p.batch;
      ++count;
      if (std::binary_search(policy_.preferred_batch_sizes.begin(),
                             policy_.preferred_batch_sizes.end(), total)) {
        preferred_count = count;
      }
      return true;
    });
    if (alone) return 1;
    if (count == 0) return 0;
    const bool full = total >= max_batch_size_ || count < queued;
    if (full || policy_.max_queue_delay.count() == 0 ||
        now >= first->queued + policy_.max_queue_delay) {
      return count;
    }
    return preferred_count;  // a preferred size runs at once; else wait for the delay
  }

  bool empty() const {
    bool none = true;
    in_order([&](const Pending&) { return none = false; });
    return none;
  }

  // Forms and runs batches as one of the `runners`, under `lock` (held again on return), until
  // no request waits, or until `stop()`, asked before each batch: a runner is then posted in its
  // place if requests still wait.
  template <typename Stop>
  void run(std::unique_lock<std::mutex>& lock, const Stop& stop) {
    for (;;) {
      if (stop()) {
        give_up_slot(lock);
        return;
      }
      const auto now = Clock::now();
      std::vector<std::pair<Pending, Error>> refused;
      const Clock::time_point next_timeout = expire(now, refused);
      if (!refused.empty()) {
        lock.unlock();
        for (auto& [p, why] : refused) reject_(std::move(p), std::move(why));
        lock.lock();
        continue;
      }
      if (empty()) {
        --state_.runners;
        return;
      }
      const std::size_t take = ready(now);
      if (take == 0) {
        Clock::time_point oldest = Clock::time_point::max();
        in_order([&](const Pending& p) {
          oldest = p.queued;
          return false;
        });
        ++state_.waiting;
        state_.changed.wait_until(lock, std::min(oldest + policy_.max_queue_delay, next_timeout));
        --state_.waiting;
        continue;
      }
      std::vector<Pending> batch;
      for (std::size_t i = 0; i < take; ++i) batch.push_back(take_first());
      lock.unlock();
      auto& running = batchers_running_here();
      running.push_back(this);
      try {
        execute_(std::move(batch));
      } catch (...) {  // on a caller of run_here(), whose caller may go on: the slot goes on too
        running.pop_back();
        lock.lock();
        give_up_slot(lock);
        throw;
      }
      running.pop_back();
      lock.lock();
    }
  }

  DynamicBatching policy_;
  const std::int64_t max_batch_size_;
  const int instances_;
  Execute execute_;
  Reject reject_;
  Post post_;
  bool batches_bytes_ = false;
  std::deque<Level> levels_;  // guarded by state_.mutex (their number is fixed)
  State state_;
};

}  // namespace sonic::detail
