// sonic — what the executor asks of a request's caller (sonic/caller.hpp): whether anyone still
// waits for the request before it runs, and whose request a model's own calls (ensemble steps,
// BLS) are made for.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "sonic/caller.hpp"
#include "sonic/request.hpp"

namespace sonic::detail {

/// Why `request` should not run now, for a model named `model`: its caller went away
/// (CANCELLED) or its deadline passed (DEADLINE_EXCEEDED). Nothing while someone waits, or when
/// nobody said who waits (no caller).
inline std::optional<Error> unwanted(const InferRequest& request, const std::string& model) {
  const auto& caller = request.caller();
  if (!caller) return std::nullopt;
  const auto now = std::chrono::steady_clock::now();
  if (!caller->gone(now)) return std::nullopt;
  return caller->gone(now, "model '" + model + "'");
}

/// The caller of the request whose model runs on this thread, while it runs: a model's own
/// calls of other models (ensemble steps, a Python model's BLS calls run on the thread of the
/// execution that makes them) are made for that caller, and stop when it goes away. Scopes
/// nest (a BLS call inside an ensemble step); each restores the one it replaced.
class CallerScope {
 public:
  explicit CallerScope(std::shared_ptr<Caller> caller) : saved_(std::move(current())) {
    current() = std::move(caller);
  }
  ~CallerScope() { current() = std::move(saved_); }
  CallerScope(const CallerScope&) = delete;
  CallerScope& operator=(const CallerScope&) = delete;

  /// The caller of the innermost execution on this thread; null outside any.
  static const std::shared_ptr<Caller>& here() { return current(); }

 private:
  static std::shared_ptr<Caller>& current() {
    thread_local std::shared_ptr<Caller> caller;
    return caller;
  }
  std::shared_ptr<Caller> saved_;
};

/// `request` as a model's own call makes it: with the caller of the execution that makes it,
/// unless it names one itself.
inline const InferRequest& for_caller_here(const InferRequest& request,
                                           std::optional<InferRequest>& adopted) {
  if (request.caller() || !CallerScope::here()) return request;
  adopted.emplace(request);
  adopted->caller(CallerScope::here());
  return *adopted;
}

}  // namespace sonic::detail
