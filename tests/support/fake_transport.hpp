// Test support: the fake:// transport, servers that live in the test process and do what the
// test scripts (answer, fail the Nth call, hold calls, reset them), with no socket and no
// timing of their own. Retry, circuit breaking and fallback are then tested step by step; the
// fault proxy's real-socket tests stay as the end-to-end layer.
//
//   sonic::test::FakeServer a("a"), b("b");   // reachable as fake://a and fake://b
//   a.fail_call(1, sonic::Error(sonic::StatusCode::Unavailable, "reset"));
//   sonic::ClientOptions options;
//   options.endpoints = {a.url(), b.url()};
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <sonic/executor.hpp>
#include <sonic/sonic.hpp>

namespace sonic::test {

/// One fake server, reachable as fake://<name> from every client of the process while it
/// lives. It runs the models of its executor on the caller's thread. Thread-safe.
///
/// What happens to a call: a failure scripted for its number (fail_call), else, while the
/// server is down (set_down), UNAVAILABLE; else, while it refuses calls (refuse_calls), that
/// refusal; else, while it holds calls (hold), it waits for
/// release() or reset(), or its deadline; else the model's answer. The outcome is decided
/// inside the call (calls() counts it at once), and, as the Transport contract asks, delivered
/// outside it: on the process's completion thread (client/completion_thread.hpp), one thread
/// that delivers in the order the calls were made, so that tests stay step by step. A held
/// call completes where release() or reset() is called, or on the timer thread for its
/// deadline and its caller's cancel.
class FakeServer {
 public:
  explicit FakeServer(std::string name, std::shared_ptr<CpuExecutor> executor = default_executor());
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  /// "fake://<name>".
  std::string url() const { return "fake://" + name_; }

  /// The n-th inference call from now (1: the next) fails with `error`.
  void fail_call(std::size_t n, Error error);
  /// Every inference call fails UNAVAILABLE, and ServerReady answers false, until set_down(false).
  void set_down(bool down);
  /// Every inference call fails with `error` (a refusal, a pushback) while ServerReady still
  /// answers true, until refuse_calls(std::nullopt). Failures scripted by fail_call come first.
  void refuse_calls(std::optional<Error> error);
  /// RepositoryIndex (model discovery) fails with `error` (a proxy refusing an overloaded
  /// pool, say) until refuse_discovery(std::nullopt); otherwise it lists the executor's models.
  void refuse_discovery(std::optional<Error> error);
  /// RepositoryIndex calls answered, each counted once its caller's callback has returned.
  std::size_t discovery_calls() const;
  /// Inference calls wait (for release(), reset() or their deadline) until hold(false).
  void hold(bool on = true);
  /// Answers every waiting call.
  void release();
  /// Fails every waiting call UNAVAILABLE, as a lost connection does.
  void reset();

  /// Inference calls received, whatever became of them.
  std::size_t calls() const;
  /// When each inference call was received, in order.
  std::vector<Clock::time_point> call_times() const;
  /// Inference calls waiting now.
  std::size_t waiting() const;
  /// Inference calls stopped by their caller (the CancelSignal).
  std::size_t cancelled() const;
  /// ServerReady calls received (the circuit breaker's probes).
  std::size_t readiness_probes() const;

  /// The built-in models (simple, identity_fp32).
  static std::shared_ptr<CpuExecutor> default_executor();

  struct State;

 private:
  std::string name_;
  std::shared_ptr<State> state_;
};

}  // namespace sonic::test
