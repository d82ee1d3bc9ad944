// A read-only control call (metadata, readiness, statistics, ...) over a client's endpoints:
// one that is down does not fail a call another would answer.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sonic/error.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

/// Runs `start(transport, deadline, done)` on `endpoints` in order until one answers anything
/// but UNAVAILABLE (a refused or lost connection), all within `deadline`. When none answers,
/// the error names what each endpoint said. `done` runs exactly once: where the last attempt's
/// callback runs, or inside this call with CANCELLED when `endpoints` is empty (a closing
/// client's).
template <typename T, typename Start>
void run_control_call(std::vector<std::shared_ptr<Transport>> endpoints, Deadline deadline,
                      Start start, Callback<T> done);

namespace control_call_detail {

template <typename T, typename Start>
struct Call {
  Call(std::vector<std::shared_ptr<Transport>> all, Deadline by, Start how, Callback<T> then)
      : endpoints(std::move(all)), deadline(by), start(std::move(how)), done(std::move(then)) {}
  std::vector<std::shared_ptr<Transport>> endpoints;
  Deadline deadline;
  Start start;
  Callback<T> done;
  std::size_t next = 0;
  std::string failures;  // "cannot connect to grpc://a:1: ...; ..." of the endpoints passed
};

template <typename T, typename Start>
void next_attempt(const std::shared_ptr<Call<T, Start>>& call) {
  Transport& transport = *call->endpoints[call->next];
  call->start(
      transport, call->deadline, Callback<T>([call](Result<T> result) {
        const bool unavailable = !result && result.error().code() == StatusCode::Unavailable;
        if (unavailable && call->next + 1 < call->endpoints.size() &&
            Clock::now() < call->deadline) {
          call->failures += result.error().message() + "; ";
          ++call->next;
          return next_attempt(call);
        }
        if (unavailable && call->next > 0) {
          result = Error(StatusCode::Unavailable, "none of the " + std::to_string(call->next + 1) +
                                                      " endpoints answered: " + call->failures +
                                                      result.error().message());
        }
        call->done(std::move(result));
      }));
}

}  // namespace control_call_detail

template <typename T, typename Start>
void run_control_call(std::vector<std::shared_ptr<Transport>> endpoints, Deadline deadline,
                      Start start, Callback<T> done) {
  if (endpoints.empty()) {
    return done(Error(StatusCode::Cancelled, "the client is being destroyed"));
  }
  auto call = std::make_shared<control_call_detail::Call<T, Start>>(
      std::move(endpoints), deadline, std::move(start), std::move(done));
  control_call_detail::next_attempt(call);
}

}  // namespace sonic::detail
