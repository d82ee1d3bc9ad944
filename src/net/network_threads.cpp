#include "network_threads.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "callback_clock.hpp"
#include "client/callback_host.hpp"
#include "client/threads.hpp"

namespace sonic::net {

namespace {
constexpr std::size_t kDefaultThreads = 2;  // a grid job's usual share of cores
constexpr int kQuietTicks = 100;            // ticks without a callback before the watcher sleeps

// Thrown out of io_context::run() by a thread whose lane has moved on, once its long callback
// returns: the thread leaves, the context and its connections stay with the new thread.
struct HandedOff {};

class Runner;

// One lane: a context and the thread that runs it now.
struct Lane {
  std::shared_ptr<asio::io_context> io;
  asio::executor_work_guard<asio::io_context::executor_type> guard;
  std::shared_ptr<Runner> runner;
};
}  // namespace

struct NetworkThreads::State : std::enable_shared_from_this<NetworkThreads::State> {
  std::mutex mutex;  // guards everything but the atomics
  std::size_t max_threads;
  std::size_t turn = 0;
  std::vector<Lane> lanes;
  bool stopping = false;
  std::thread watcher;  // started by the first callback
  std::condition_variable watcher_wake;
  std::atomic<bool> watcher_idle{true};

  void start_runner(Lane& lane);  // mutex held
  void move_on(Lane& lane);       // mutex held; the hand-off is in the runner's clock
  void hand_off(Runner& runner);
  void wake_watcher();
  void watch();
};

namespace {
// The thread of one lane, and the callback host on it. Its clock is odd while it runs a
// callback; the watcher compares the clock between looks (CallbackClock says how a hand-off
// and a callback's end exclude each other).
class Runner final : public detail::CallbackHost {
 public:
  Runner(std::shared_ptr<NetworkThreads::State> state, std::shared_ptr<asio::io_context> io)
      : state_(std::move(state)), io_(std::move(io)) {}

  // Runs the lane until its work is done, or until the lane moves on. A handler that throws
  // (std::bad_alloc when memory cannot be had, say) costs what it was doing, never the thread
  // and every connection on it; a callback that throws after its lane moved on still ends
  // this thread's part.
  static void run(const std::shared_ptr<Runner>& self) {
    CallbackHost::current() = self.get();
    while (!self->handed_off()) {
      try {
        self->io_->run();
        return;
      } catch (const HandedOff&) {
        return;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "sonic: a network handler failed and was dropped: %s\n", e.what());
      } catch (...) {
        std::fprintf(stderr, "sonic: a network handler failed and was dropped\n");
      }
    }
  }

  void run_later(detail::UniqueFunction<void()> callback) override {
    // Posted, not dispatched: the handler now running (a read, say) finishes first. Whichever
    // thread holds the lane when its turn comes runs it.
    asio::post(*io_, [callback = std::move(callback)]() mutable {
      static_cast<Runner*>(CallbackHost::current())->run_callback(callback);
    });
  }

  void hand_off_now() override {
    if (!handed_off()) state_->hand_off(*this);
  }

  bool handed_off() const override { return clock_.handed_off(); }

  CallbackClock& clock() { return clock_; }
  std::uint64_t last_seen = 0;  // the clock at the watcher's last look; the watcher's alone
  std::thread thread;           // guarded by the state's mutex

 private:
  void run_callback(detail::UniqueFunction<void()>& callback) {
    bool moved_on = false;
    {
      // Sequentially consistent with the watcher's going idle: either it sees the odd clock,
      // or this thread sees it idle and wakes it.
      clock_.begin();
      if (state_->watcher_idle.load()) state_->wake_watcher();
      struct End {
        CallbackClock& clock;
        bool& moved_on;
        ~End() { moved_on = clock.end(); }
      } end{clock_, moved_on};
      callback();
    }
    if (moved_on) throw HandedOff{};
  }

  std::shared_ptr<NetworkThreads::State> state_;
  std::shared_ptr<asio::io_context> io_;
  CallbackClock clock_;
};
}  // namespace

void NetworkThreads::State::start_runner(Lane& lane) {
  auto runner = std::make_shared<Runner>(shared_from_this(), lane.io);
  runner->thread = std::thread([runner] {
    detail::name_this_thread("sonic-net");
    Runner::run(runner);
  });
  lane.runner = std::move(runner);
}

void NetworkThreads::State::move_on(Lane& lane) {
  lane.runner->thread.detach();  // it leaves on its own once its callback returns
  start_runner(lane);
}

void NetworkThreads::State::hand_off(Runner& runner) {
  std::lock_guard<std::mutex> lock(mutex);
  if (stopping) return;  // the pool is going: its threads finish where they are
  for (auto& lane : lanes) {
    if (lane.runner.get() == &runner && runner.clock().hand_off()) return move_on(lane);
  }
}

void NetworkThreads::State::wake_watcher() {
  std::lock_guard<std::mutex> lock(mutex);
  if (stopping || !watcher_idle.load()) return;
  watcher_idle.store(false);
  if (!watcher.joinable()) {
    watcher = std::thread([self = shared_from_this()] {
      detail::name_this_thread("sonic-net-watch");
      self->watch();
    });
  } else {
    watcher_wake.notify_one();
  }
}

void NetworkThreads::State::watch() {
  std::unique_lock<std::mutex> lock(mutex);
  int quiet_ticks = 0;
  while (!stopping) {
    bool active = false;
    for (auto& lane : lanes) {
      Runner& runner = *lane.runner;
      const std::uint64_t clock = runner.clock().look();
      if (clock != runner.last_seen) {
        active = true;
        runner.last_seen = clock;
      } else if (clock % 2 == 1) {
        active = true;
        // The same callback at two looks a tick apart, unless it has just returned.
        if (runner.clock().hand_off_if_still(clock)) move_on(lane);
      }
    }
    quiet_ticks = active ? 0 : quiet_ticks + 1;
    if (quiet_ticks < kQuietTicks) {
      watcher_wake.wait_for(lock, kCallbackTick);
      continue;
    }
    // No callback for a while: sleep until one starts (Runner::run_callback wakes it). A
    // callback that started before going idle was seen its clock odd here.
    watcher_idle.store(true);
    const bool running = std::any_of(lanes.begin(), lanes.end(), [](const Lane& lane) {
      return lane.runner->clock().look() % 2 == 1;
    });
    if (running) {
      watcher_idle.store(false);
    } else {
      watcher_wake.wait(lock, [this] { return stopping || !watcher_idle.load(); });
    }
    quiet_ticks = 0;
  }
}

std::shared_ptr<NetworkThreads> NetworkThreads::shared(std::size_t max_threads) {
  static std::mutex mutex;
  static std::weak_ptr<NetworkThreads> current;
  std::lock_guard<std::mutex> lock(mutex);
  auto pool = current.lock();
  if (!pool) {
    pool = std::make_shared<NetworkThreads>(max_threads);
    current = pool;
  } else {
    std::lock_guard<std::mutex> state_lock(pool->state_->mutex);
    pool->state_->max_threads = std::max(pool->state_->max_threads, max_threads);
  }
  return pool;
}

NetworkThreads::NetworkThreads(std::size_t max_threads) : state_(std::make_shared<State>()) {
  state_->max_threads = max_threads == 0 ? kDefaultThreads : max_threads;
}

NetworkThreads::~NetworkThreads() {
  std::vector<Lane> lanes;
  std::thread watcher;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;           // no hand-off from here on
    lanes = std::move(state_->lanes);  // the runners hold the state: no cycle left
    watcher = std::move(state_->watcher);
  }
  state_->watcher_wake.notify_all();
  if (watcher.joinable()) watcher.join();
  // Each thread runs its lane until, the guard gone, its work is done.
  for (auto& lane : lanes) {
    lane.guard.reset();
    detail::join_unless_self(lane.runner->thread);
  }
}

std::shared_ptr<asio::io_context> NetworkThreads::next() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto& lanes = state_->lanes;
  if (lanes.size() < state_->max_threads) {
    // No concurrency hint of one: for the moments after a hand-off, when the old thread still
    // finishes its callback inside run(), work it posts must reach the shared queue, not that
    // thread's private one, which only it would ever run.
    auto io = std::make_shared<asio::io_context>();
    lanes.push_back(Lane{io, asio::make_work_guard(*io), nullptr});
    state_->start_runner(lanes.back());
    return io;
  }
  return lanes[state_->turn++ % lanes.size()].io;
}

std::size_t NetworkThreads::size() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->lanes.size();
}

}  // namespace sonic::net
