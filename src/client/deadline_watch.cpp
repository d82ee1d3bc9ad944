#include "client/deadline_watch.hpp"

#include <algorithm>
#include <condition_variable>
#include <thread>

#include "client/threads.hpp"

namespace sonic::detail {

/// The process's one thread that runs every watch's expire(): it sleeps until the earliest
/// request is due (or a new one is due sooner), and not at all while nothing is watched. It
/// stops once the last watch is gone.
class WatchThread {
 public:
  static std::shared_ptr<WatchThread> shared() {
    static std::mutex mutex;
    static std::weak_ptr<WatchThread> current;
    std::lock_guard<std::mutex> lock(mutex);
    auto thread = current.lock();
    if (!thread) current = thread = std::make_shared<WatchThread>();
    return thread;
  }

  WatchThread() : thread_([state = state_] { run(*state); }) {}
  ~WatchThread() {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->stopping = true;
    }
    state_->wake.notify_one();
    // The last watch may go on this very thread (its client's last holder was a request the
    // thread expired).
    join_unless_self(thread_);
  }
  WatchThread(const WatchThread&) = delete;
  WatchThread& operator=(const WatchThread&) = delete;

  void add(std::weak_ptr<DeadlineWatch> watch) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto& watches = state_->watches;
    watches.erase(
        std::remove_if(watches.begin(), watches.end(), [](const auto& w) { return w.expired(); }),
        watches.end());
    watches.push_back(std::move(watch));
  }

  /// A request is due at `when`: the thread looks by then.
  void due(Clock::time_point when) {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (when >= state_->next_look) return;
      state_->next_look = when;
    }
    state_->wake.notify_one();
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable wake;
    std::vector<std::weak_ptr<DeadlineWatch>> watches;
    Clock::time_point next_look = Clock::time_point::max();
    bool stopping = false;
  };

  static void run(State& s) {
    name_this_thread("sonic-deadline");
    std::unique_lock<std::mutex> lock(s.mutex);
    while (!s.stopping) {
      if (s.next_look > Clock::now()) {
        if (s.next_look == Clock::time_point::max()) {
          s.wake.wait(lock);
        } else {
          s.wake.wait_until(lock, s.next_look);
        }
        continue;
      }
      s.next_look = Clock::time_point::max();
      std::vector<std::shared_ptr<DeadlineWatch>> watches;
      for (const auto& weak : s.watches) {
        if (auto watch = weak.lock()) watches.push_back(std::move(watch));
      }
      lock.unlock();
      Clock::time_point next = Clock::time_point::max();
      for (const auto& watch : watches) next = std::min(next, watch->expire(Clock::now()));
      watches.clear();  // the last watch may go here, and this object with it: `s` stays
      lock.lock();
      s.next_look = std::min(s.next_look, next);
    }
  }

  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::thread thread_;  // after the state: it starts once the state is there
};

// A request is due at the first tick at or after its deadline plus the grace.
std::int64_t DeadlineWatch::tick_of(Clock::time_point when) {
  const auto since = when.time_since_epoch();
  return (since + kTick - Clock::duration(1)) / kTick;
}

void DeadlineWatch::watch(Watched& watched, Deadline deadline) {
  if (deadline == Deadline::max()) return;
  const std::int64_t tick = tick_of(deadline + kGrace);
  bool earliest;
  std::shared_ptr<WatchThread> thread;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_) {
      thread_ = WatchThread::shared();
      thread_->add(weak_from_this());
    }
    thread = thread_;
    Watched*& first = due_[tick];
    watched.next_ = first;
    watched.previous_ = nullptr;
    if (first) first->previous_ = &watched;
    first = &watched;
    watched.tick_ = tick;
    ++size_;
    earliest = due_.begin()->first == tick;
  }
  if (earliest) thread->due(Clock::time_point(kTick * tick));
}

void DeadlineWatch::forget(Watched& watched) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (watched.tick_ != kUnwatched) unlink(watched);
}

std::size_t DeadlineWatch::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return size_;
}

void DeadlineWatch::unlink(Watched& watched) {
  if (watched.previous_) {
    watched.previous_->next_ = watched.next_;
  } else {
    auto slot = due_.find(watched.tick_);
    slot->second = watched.next_;
    if (!slot->second) due_.erase(slot);
  }
  if (watched.next_) watched.next_->previous_ = watched.previous_;
  watched.previous_ = watched.next_ = nullptr;
  watched.tick_ = kUnwatched;
  --size_;
}

Clock::time_point DeadlineWatch::expire(Clock::time_point now) {
  const std::int64_t tick_now = now.time_since_epoch() / kTick;
  std::vector<std::shared_ptr<Watched>> due;
  Clock::time_point next = Clock::time_point::max();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!due_.empty() && due_.begin()->first <= tick_now) {
      Watched* watched = due_.begin()->second;
      // Held under the lock: a request being destroyed forgets itself under it first, and
      // hold() finds it going.
      if (auto alive = watched->hold()) due.push_back(std::move(alive));
      unlink(*watched);
    }
    if (!due_.empty()) next = Clock::time_point(kTick * due_.begin()->first);
  }
  for (const auto& watched : due) watched->deadline_passed();
  return next;
}

}  // namespace sonic::detail
