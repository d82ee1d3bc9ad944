// A control call over several endpoints: it moves on from one that is unavailable, and when
// none answers, its error names what each said.
#include "client/control_calls.hpp"

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using sonic::Callback;
using sonic::Clock;
using sonic::Deadline;
using sonic::Error;
using sonic::Result;
using sonic::StatusCode;
using sonic::Transport;
using sonic::detail::run_control_call;

namespace {

// A transport that is only an address: the calls' `start` decides what each endpoint answers.
class Silent final : public Transport {
 public:
  void infer_async(const sonic::InferRequest&, Deadline, std::shared_ptr<sonic::CancelSignal>,
                   Callback<sonic::InferResult>) override {}
  void control_async(sonic::ControlRequest, Deadline, Callback<sonic::ControlAnswer>) override {}
};

struct Endpoints {
  std::vector<std::shared_ptr<Transport>> all{
      std::make_shared<Silent>(), std::make_shared<Silent>(), std::make_shared<Silent>()};
  std::map<const Transport*, Result<std::string>> answers;  // what each answers
  std::vector<const Transport*> asked;

  // Runs the call; its outcome, and each endpoint's answer comes back at once.
  Result<std::string> call(Deadline deadline = Clock::now() + 10s) {
    Result<std::string> outcome = Error(StatusCode::Unknown, "no outcome");
    int outcomes = 0;
    run_control_call<std::string>(
        all, deadline,
        [this](Transport& transport, Deadline, Callback<std::string> done) {
          asked.push_back(&transport);
          done(answers.at(&transport));
        },
        Callback<std::string>([&](Result<std::string> result) {
          outcome = std::move(result);
          ++outcomes;
        }));
    CHECK(outcomes == 1);
    return outcome;
  }
};

const Error kRefused(StatusCode::Unavailable, "connection refused");

}  // namespace

TEST_CASE("a control call goes on from an unavailable endpoint to the next") {
  Endpoints endpoints;
  endpoints.answers.emplace(endpoints.all[0].get(), kRefused);
  endpoints.answers.emplace(endpoints.all[1].get(), std::string("ready"));
  endpoints.answers.emplace(endpoints.all[2].get(), std::string("never asked"));
  auto outcome = endpoints.call();
  REQUIRE(outcome.ok());
  CHECK(*outcome == "ready");
  CHECK(endpoints.asked.size() == 2);
}

TEST_CASE("an answer other than UNAVAILABLE ends the call, error or not") {
  Endpoints endpoints;
  endpoints.answers.emplace(endpoints.all[0].get(), Error(StatusCode::NotFound, "no model"));
  endpoints.answers.emplace(endpoints.all[1].get(), std::string("ready"));
  endpoints.answers.emplace(endpoints.all[2].get(), std::string("ready"));
  CHECK(endpoints.call().code() == StatusCode::NotFound);
  CHECK(endpoints.asked.size() == 1);
}

TEST_CASE("when no endpoint answers, the error names what each said") {
  Endpoints endpoints;
  for (const auto& transport : endpoints.all) endpoints.answers.emplace(transport.get(), kRefused);
  auto outcome = endpoints.call();
  CHECK(outcome.code() == StatusCode::Unavailable);
  CHECK(outcome.error().message() ==
        "none of the 3 endpoints answered: connection refused; connection refused; connection "
        "refused");
}

TEST_CASE("past its deadline, a control call does not move on") {
  Endpoints endpoints;
  for (const auto& transport : endpoints.all) endpoints.answers.emplace(transport.get(), kRefused);
  auto outcome = endpoints.call(Clock::now() - 1ms);
  CHECK(outcome.error().message() == "connection refused");
  CHECK(endpoints.asked.size() == 1);
}

TEST_CASE("without endpoints (a closing client), a control call is CANCELLED") {
  Endpoints endpoints;
  endpoints.all.clear();
  CHECK(endpoints.call().code() == StatusCode::Cancelled);
}
