// Loads of a model source: bounded in time, a blocked model delaying no other, a load that
// throws failing alone, and the model's state in the index saying which and why.
#include "sonic/executor.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "sonic/builtin_models.hpp"

namespace {

using namespace std::chrono_literals;

// A source of "simple" under any name: "blocked" waits until released, "throws" throws.
class ScriptedSource final : public sonic::ModelSource {
 public:
  std::vector<std::string> model_names() const override { return {"blocked", "quick", "throws"}; }

  sonic::Result<sonic::Model> load(const std::string& name, const std::string&) const override {
    if (name == "throws") throw std::runtime_error("the backend gave up");
    if (name == "blocked") {
      std::unique_lock<std::mutex> lock(mutex_);
      released_.wait(lock, [&] { return open_; });
    }
    sonic::Model model = sonic::models::simple();
    model.name = name;
    return model;
  }

  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    released_.notify_all();
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable released_;
  bool open_ = false;
};

std::string state_of(const sonic::CpuExecutor& executor, const std::string& name,
                     std::string* reason = nullptr) {
  for (const auto& entry : executor.repository_index()) {
    if (entry.name != name) continue;
    if (reason) *reason = entry.reason;
    return std::string(sonic::model_state_name(entry.state));
  }
  return "absent";
}

}  // namespace

TEST_CASE("a load past its time limit fails, and the others load meanwhile") {
  auto source = std::make_shared<ScriptedSource>();
  sonic::CpuExecutor executor(1);
  executor.set_source(source, false);
  executor.set_load_timeout(300ms);

  sonic::Result<void> blocked;
  std::thread loading([&] { blocked = executor.load_model("blocked"); });
  std::this_thread::sleep_for(50ms);
  CHECK(state_of(executor, "blocked") == "LOADING");
  // Another model's load does not wait for the blocked one.
  const auto started = std::chrono::steady_clock::now();
  CHECK(executor.load_model("quick"));
  CHECK(std::chrono::steady_clock::now() - started < 250ms);
  loading.join();
  REQUIRE_FALSE(blocked);
  CHECK(blocked.error().code() == sonic::StatusCode::DeadlineExceeded);
  std::string reason;
  CHECK(state_of(executor, "blocked", &reason) == "UNAVAILABLE");
  CHECK(reason.find("took longer than its limit of 300 ms") != std::string::npos);
  CHECK(state_of(executor, "quick") == "READY");

  // While the stuck load has not returned, no second one starts: it fails at once.
  auto again = executor.load_model("blocked");
  REQUIRE_FALSE(again);
  CHECK(again.error().code() == sonic::StatusCode::Unavailable);
  CHECK(again.error().message().find("has not returned yet") != std::string::npos);

  // Once it returns, the model loads.
  source->release();
  std::this_thread::sleep_for(50ms);
  CHECK(executor.load_model("blocked"));
  CHECK(state_of(executor, "blocked") == "READY");
}

TEST_CASE("a load that throws fails alone, with what it threw") {
  sonic::CpuExecutor executor(1);
  executor.set_source(std::make_shared<ScriptedSource>(), false);
  auto thrown = executor.load_model("throws");
  REQUIRE_FALSE(thrown);
  CHECK(thrown.error().code() == sonic::StatusCode::Internal);
  CHECK(thrown.error().message().find("the backend gave up") != std::string::npos);
  std::string reason;
  CHECK(state_of(executor, "throws", &reason) == "UNAVAILABLE");
  CHECK(reason.find("the backend gave up") != std::string::npos);
  CHECK(executor.load_model("quick"));
}

TEST_CASE("without a time limit a load takes as long as it takes") {
  auto source = std::make_shared<ScriptedSource>();
  sonic::CpuExecutor executor(1);
  executor.set_source(source, false);
  executor.set_load_timeout(0ms);
  std::thread releaser([&] {
    std::this_thread::sleep_for(400ms);
    source->release();
  });
  CHECK(executor.load_model("blocked"));
  releaser.join();
}
