// A CpuExecutor on a framework's scheduler (CpuExecutorOptions::scheduler): its tasks run on
// the framework's threads and nowhere else, and its destruction leaves the scheduler nothing.
#include "sonic/executor.hpp"

#include <doctest/doctest.h>

#include <sonic/builtin_models.hpp>

#include <dirent.h>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "framework_thread.hpp"
#include "thread_probe.hpp"

using namespace std::chrono_literals;
using sonic::test::FrameworkThread;

namespace {

// The threads of this process named "sonic-pool" (sonic's own pools name theirs so).
int sonic_pool_threads() {
  int count = 0;
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return -1;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    count += name == "sonic-pool";
  }
  closedir(dir);
  return count;
}

sonic::InferRequest float_request(const std::vector<float>& values) {
  return sonic::InferRequest("probe").input(
      "INPUT0", sonic::Tensor::view(values, {1, static_cast<std::int64_t>(values.size())}));
}

}  // namespace

TEST_CASE("an executor given a scheduler runs every task there and starts no thread") {
  FrameworkThread framework;
  sonic::test::ThreadProbe probe;
  const int pool_threads = sonic_pool_threads();
  {
    sonic::CpuExecutor executor(sonic::CpuExecutorOptions{3, framework.scheduler()});
    executor.add_model(probe.model("probe", sonic::DataType::Fp32));
    CHECK(executor.threads() == 3);
    const std::vector<float> values(4, 1.5f);
    constexpr int kRequests = 8;
    std::vector<std::promise<std::thread::id>> done(kRequests);
    for (int i = 0; i < kRequests; ++i) {
      executor.infer_async(float_request(values), [&done, i](sonic::Result<sonic::InferResult> r) {
        CHECK(r.ok());
        done[static_cast<std::size_t>(i)].set_value(std::this_thread::get_id());
      });
    }
    for (auto& each : done) CHECK(each.get_future().get() == framework.id());
    std::promise<std::thread::id> work;
    executor.run_async([&work] { work.set_value(std::this_thread::get_id()); });
    CHECK(work.get_future().get() == framework.id());
    CHECK(framework.received() == kRequests + 1);
    CHECK(probe.threads() == 1);  // the framework's, checked above through `done`
    CHECK(sonic_pool_threads() == pool_threads);
    framework.drain();
  }
  CHECK(sonic_pool_threads() == pool_threads);
}

TEST_CASE("an executor going away runs what its scheduler has not started, on its own thread") {
  FrameworkThread framework(/*paused=*/true);
  std::thread::id ran_on;
  bool answered = false;
  std::vector<std::int32_t> a(16, 20), b(16, 22);  // borrowed: read until `done`
  {
    sonic::CpuExecutor executor(sonic::CpuExecutorOptions{1, framework.scheduler()});
    executor.add_model(sonic::models::simple());
    executor.infer_async(sonic::InferRequest("simple")
                             .input("INPUT0", sonic::Tensor::view(a, {1, 16}))
                             .input("INPUT1", sonic::Tensor::view(b, {1, 16})),
                         [&](sonic::Result<sonic::InferResult> r) {
                           answered = r.ok() && r->output("OUTPUT0").as<std::int32_t>()[0] == 42;
                           ran_on = std::this_thread::get_id();
                         });
    CHECK(framework.received() == 1);
  }
  CHECK(answered);
  CHECK(ran_on == std::this_thread::get_id());
  // The scheduler's function, run after the executor is gone, finds nothing to do.
  framework.run_kept();
  framework.drain();
}

// The task may run, and let go of the executor, while run_async() is still handing it to the
// scheduler: under ThreadSanitizer this once caught that call reading the freed executor.
TEST_CASE("an executor on a scheduler may be let go by one of its own tasks") {
  FrameworkThread framework;
  auto executor =
      std::make_shared<sonic::CpuExecutor>(sonic::CpuExecutorOptions{1, framework.scheduler()});
  std::promise<void> gone;
  executor->run_async([&executor, &gone] {
    executor.reset();  // the last owner: destroyed here, on the framework's thread
    gone.set_value();
  });
  CHECK(gone.get_future().wait_for(10s) == std::future_status::ready);
  framework.drain();
  CHECK(executor == nullptr);
}
