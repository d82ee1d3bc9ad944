// Room at a port's connection cap (server/src/connection_room.hpp): the connection that waited
// longest for a request is chosen, and one that begins serving as it is chosen is never closed.
#include "connection_room.hpp"

#include <doctest/doctest.h>

#include <asio/io_context.hpp>
#include <atomic>
#include <thread>
#include <vector>

using sonic::server::make_room;
using sonic::server::WaitingMark;

namespace {

struct FakeConnection {
  WaitingMark mark;
  std::shared_ptr<asio::io_context> io;
  bool evicted = false;
  WaitingMark& waiting_mark() { return mark; }
  const std::shared_ptr<asio::io_context>& io_context() const { return io; }
  void evict() { evicted = true; }
};

}  // namespace

TEST_CASE("a waiting mark: claimed or serving, never both") {
  WaitingMark mark;
  const std::int64_t since = mark.since();
  CHECK(since > 0);
  mark.waiting();  // waits already: its time stays
  CHECK(mark.since() == since);
  CHECK(mark.serving());
  CHECK(mark.since() == 0);
  CHECK_FALSE(mark.claim(since));  // serving: not a candidate
  mark.waiting();
  const std::int64_t again = mark.since();
  CHECK(again >= since);
  CHECK_FALSE(mark.claim(again + 1));  // not the time it waits since: it changed meanwhile
  CHECK(mark.claim(again));
  CHECK(mark.since() == 0);
  CHECK_FALSE(mark.serving());  // claimed: it closes instead
  mark.waiting();               // and stays claimed
  CHECK_FALSE(mark.serving());
}

TEST_CASE("a claim and a request racing: exactly one of them wins") {
  for (int round = 0; round < 2000; ++round) {
    WaitingMark mark;
    const std::int64_t since = mark.since();
    std::atomic<bool> go{false};
    bool claimed = false, served = false;
    std::thread acceptor([&] {
      while (!go) {
      }
      claimed = mark.claim(since);
    });
    go = true;
    served = mark.serving();
    acceptor.join();
    CHECK(claimed != served);
  }
}

TEST_CASE("make_room closes the connection that waited longest, and none when all serve") {
  auto io = std::make_shared<asio::io_context>();
  sonic::net::ConnectionSet<FakeConnection> set;
  std::vector<std::shared_ptr<FakeConnection>> all;
  for (int i = 0; i < 3; ++i) {
    all.push_back(std::make_shared<FakeConnection>());
    all.back()->io = io;
    REQUIRE(set.add(all.back()));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(all[0]->mark.serving());  // the oldest began a request: the next oldest goes
  CHECK(make_room(set));
  io->run();
  io->restart();
  CHECK_FALSE(all[0]->evicted);
  CHECK(all[1]->evicted);
  CHECK_FALSE(all[2]->evicted);
  CHECK(make_room(set));  // the claimed one is no candidate again
  io->run();
  io->restart();
  CHECK(all[2]->evicted);
  CHECK_FALSE(make_room(set));  // every other one serves
}
