// sonic-server's stop signals: SIGINT and SIGTERM end the server at any moment.
#pragma once

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

namespace sonic::tools {

// SIGINT and SIGTERM, waited for on a thread of their own from the start, so that the server
// stops at any moment: during model loads (a backend's load cannot be interrupted, so the
// process exits at once: nothing is served yet), or while serving (the listeners close and
// open calls are reset; a model execution that does not return within `exit_timeout` is not
// waited for, as tritonserver's --exit-timeout-secs).
class StopSignals {
 public:
  explicit StopSignals(std::chrono::milliseconds exit_timeout) : state_(std::make_shared<State>()) {
    state_->exit_timeout = exit_timeout;
    // Blocked here, before the server starts its threads, so that they inherit the mask and
    // sigwait() receives the signals.
    sigemptyset(&state_->signals);
    sigaddset(&state_->signals, SIGINT);
    sigaddset(&state_->signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &state_->signals, nullptr);
    // Detached, and holding the state: it may still wait while the process exits.
    std::thread watcher([state = state_] { watch(*state); });
    watcher_thread() = watcher.native_handle();
    watcher.detach();
    // Threads that libraries start before main() (OpenBLAS starts its pool when it is loaded)
    // do not block them: the kernel may deliver a signal to one of those, whose default action
    // would end the process at once. This handler passes it on to the watcher instead.
    struct sigaction forward = {};
    forward.sa_handler = [](int signal) { pthread_kill(watcher_thread(), signal); };
    sigemptyset(&forward.sa_mask);
    sigaction(SIGINT, &forward, nullptr);
    sigaction(SIGTERM, &forward, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// From now on a signal stops the server through wait_for_stop() rather than at once.
  void serving() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->serving = true;
  }

  /// Blocks until a stop signal came; returns it.
  int wait_for_stop() {
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->changed.wait(lock, [&] { return state_->signal != 0; });
    return state_->signal;
  }

  /// The server stopped: the process ends on its own, the exit timeout no longer applies.
  void stopped() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopped = true;
    state_->changed.notify_all();
  }

 private:
  struct State {
    std::chrono::milliseconds exit_timeout{0};
    sigset_t signals;
    std::mutex mutex;
    std::condition_variable changed;
    bool serving = false;
    bool stopped = false;
    int signal = 0;
  };

  static pthread_t& watcher_thread() {
    static pthread_t thread;
    return thread;
  }

  [[noreturn]] static void exit_now(const char* why) {
    std::cout << "sonic-server stopping: " << why << std::endl;
    std::_Exit(0);
  }

  static void watch(State& state) {
    int signal = 0;
    sigwait(&state.signals, &signal);
    std::unique_lock<std::mutex> lock(state.mutex);
    if (!state.serving) exit_now("a signal came while models were loading");
    state.signal = signal;
    state.changed.notify_all();
    if (state.exit_timeout.count() == 0) return;
    if (!state.changed.wait_for(lock, state.exit_timeout, [&] { return state.stopped; })) {
      exit_now("open calls did not end within --exit-timeout-secs");
    }
  }

  std::shared_ptr<State> state_;
};

}  // namespace sonic::tools
