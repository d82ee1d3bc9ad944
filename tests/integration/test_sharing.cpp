// Many clients, few threads, one connection: 50 clients of two servers (as 50 modules of a
// framework job, each with its own client) share the process's network threads, one timer
// thread, the callback threads, and one connection per server.
#include <dirent.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <future>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "child_server.hpp"
#include "eventually.hpp"
#include "loopback_server.hpp"

using namespace sonic;
using namespace sonic::test;

namespace {

// Entries of /proc/self/task (threads) or of /proc/self/fd that are sockets.
std::size_t count_entries(const std::string& dir, const std::string& link_prefix = {}) {
  std::size_t n = 0;
  DIR* d = ::opendir(dir.c_str());
  REQUIRE(d != nullptr);
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (link_prefix.empty()) {
      ++n;
      continue;
    }
    char target[256];
    auto len = ::readlink((dir + "/" + name).c_str(), target, sizeof target - 1);
    if (len > 0 && std::string(target, static_cast<std::size_t>(len)).rfind(link_prefix, 0) == 0) {
      ++n;
    }
  }
  ::closedir(d);
  return n;
}
std::size_t threads() { return count_entries("/proc/self/task"); }

// The thread count once threads left by earlier tests (detached ones finishing) are gone.
std::size_t settled_threads() {
  std::size_t count = threads();
  for (int steady = 0, i = 0; steady < 3 && i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::size_t now = threads();
    steady = now == count ? steady + 1 : 0;
    count = now;
  }
  return count;
}
std::size_t sockets() { return count_entries("/proc/self/fd", "socket:"); }

// 50 clients with two endpoints each, every one sending a request to each server through a
// callback; returns {threads, sockets} added while they live, and whether a callback was held
// past its budget on a network thread (see the test).
std::tuple<std::size_t, std::size_t, bool> fifty_clients(const std::string& a, const std::string& b,
                                                         bool share) {
  const auto threads_before = settled_threads(), sockets_before = sockets();
  std::vector<std::unique_ptr<Client>> clients;
  ClientOptions options;
  options.endpoints = {a, b};
  options.share_connections = share;
  for (int i = 0; i < 50; ++i) clients.push_back(std::make_unique<Client>(options));
  std::vector<std::future<StatusCode>> answers;
  std::vector<std::shared_ptr<std::promise<StatusCode>>> promises;
  for (auto& client : clients) {
    for (int k = 0; k < 4; ++k) {  // least-outstanding balancing reaches both servers
      auto promise = std::make_shared<std::promise<StatusCode>>();
      answers.push_back(promise->get_future());
      client->infer_async(simple_request(1, 2),
                          [promise](Result<InferResult> r) { promise->set_value(r.code()); });
    }
  }
  for (auto& answer : answers) CHECK(answer.get() == StatusCode::Ok);
  bool slow = false;
  for (auto& client : clients) slow = slow || client->stats().slow_callbacks > 0;
  const std::size_t added_threads = threads() - threads_before;
  const std::size_t added_sockets = sockets() - sockets_before;
  clients.clear();
  // The threads go with the last client (some finish on their own just after).
  CHECK(eventually([&] { return threads() <= threads_before; }, std::chrono::milliseconds(5000)));
  return {added_threads, added_sockets, slow};
}

// 2 network threads, 1 timer, 1 watcher of the callbacks that run on the network threads. A
// callback seen held (a slow machine, a descheduled thread) adds the callback thread its client
// moves to, and for a moment the thread it leaves behind.
std::size_t thread_bound(bool slow) { return slow ? 6 : 4; }

}  // namespace

TEST_CASE("50 clients of 2 servers share one connection per server and a few threads") {
  // A sanitizer's runtime may start a thread of its own with the first thread created: let it
  // do so before counting.
  std::thread([] {}).join();
  ChildServer a({SONIC_SERVER_BINARY, "--port", "0"}, "sonic-server listening on 127.0.0.1:");
  ChildServer b({SONIC_SERVER_BINARY, "--port", "0"}, "sonic-server listening on 127.0.0.1:");
  const std::string url_a = "grpc://127.0.0.1:" + std::to_string(a.port());
  const std::string url_b = "grpc://127.0.0.1:" + std::to_string(b.port());

  auto [shared_threads, shared_sockets, shared_slow] = fifty_clients(url_a, url_b, true);
  MESSAGE("50 clients x 2 endpoints, shared: " << shared_threads << " threads, " << shared_sockets
                                               << " sockets");
  CHECK(shared_sockets == 2);
  CHECK(shared_threads <= thread_bound(shared_slow));

  auto [own_threads, own_sockets, own_slow] = fifty_clients(url_a, url_b, false);
  MESSAGE("50 clients x 2 endpoints, share_connections off: " << own_threads << " threads, "
                                                              << own_sockets << " sockets");
  CHECK(own_sockets == 100);
  CHECK(own_threads <= thread_bound(own_slow));  // still the same network threads
}
