// The deadline watch: what is due is expired in one pass and what is not is left with its time;
// forgotten requests, and requests already going, are never expired; the process's watch thread
// expires on its own, a tick or two after the grace.
#include "client/deadline_watch.hpp"

#include <doctest/doctest.h>

#include "sanitizers.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

using sonic::Clock;
using sonic::detail::DeadlineWatch;
using namespace std::chrono_literals;

namespace {

struct Request final : DeadlineWatch::Watched, std::enable_shared_from_this<Request> {
  std::shared_ptr<Watched> hold() override {
    if (going) return nullptr;
    return shared_from_this();
  }
  void deadline_passed() override {
    expired_at = Clock::now();
    ++expired;
  }
  std::atomic<int> expired{0};
  std::atomic<Clock::time_point> expired_at{};
  bool going = false;
};

std::shared_ptr<Request> request() { return std::make_shared<Request>(); }

}  // namespace

TEST_CASE("expire() takes what is due after the grace, and says when the rest is") {
  auto watch = DeadlineWatch::make();
  const auto base = Clock::now() + 10s;  // the watch thread leaves these alone meanwhile
  auto early = request(), late = request(), forgotten = request(), going = request();
  going->going = true;
  watch->watch(*early, base);
  watch->watch(*late, base + 100ms);
  watch->watch(*forgotten, base);
  watch->watch(*going, base);
  watch->watch(*request(), sonic::Deadline::max());  // no deadline: not watched
  CHECK(watch->size() == 4);
  watch->forget(*forgotten);
  watch->forget(*forgotten);  // twice is harmless
  CHECK(watch->size() == 3);

  // Not yet: the grace is not over.
  auto next = watch->expire(base + DeadlineWatch::kGrace - 1ms);
  CHECK(early->expired == 0);
  CHECK(next >= base + DeadlineWatch::kGrace);
  CHECK(next < base + DeadlineWatch::kGrace + DeadlineWatch::kTick);

  next = watch->expire(base + DeadlineWatch::kGrace + DeadlineWatch::kTick);
  CHECK(early->expired == 1);
  CHECK(forgotten->expired == 0);
  CHECK(going->expired == 0);  // it was being destroyed: dropped, not called
  CHECK(late->expired == 0);
  CHECK(watch->size() == 1);
  CHECK(next >= base + 100ms + DeadlineWatch::kGrace);

  watch->expire(base + 1s);
  CHECK(late->expired == 1);
  CHECK(watch->size() == 0);
  CHECK(watch->expire(base + 2s) == Clock::time_point::max());
}

TEST_CASE("the watch thread expires a request a tick or two after its grace, once") {
  auto watch = DeadlineWatch::make();
  std::vector<std::shared_ptr<Request>> requests;
  const auto start = Clock::now();
  for (auto after : {40ms, 10ms, 25ms}) {
    requests.push_back(request());
    watch->watch(*requests.back(), start + after);
  }
  const auto until = Clock::now() + 2s;
  while (watch->size() > 0 && Clock::now() < until) std::this_thread::sleep_for(1ms);
  REQUIRE(watch->size() == 0);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    CAPTURE(i);
    CHECK(requests[i]->expired == 1);
  }
  const auto ms = [&](std::size_t i) {
    return std::chrono::duration<double, std::milli>(requests[i]->expired_at.load() - start)
        .count();
  };
  CHECK(ms(1) >= 15);  // 10 ms, and the grace
  CHECK(ms(1) < ms(2));
  CHECK(ms(2) < ms(0));
#if !defined(SONIC_TEST_SANITIZED)  // they slow every thread several times
  CHECK(ms(0) < 40 + 5 + 40);       // a tick, and a loaded machine's scheduling
#endif
}
