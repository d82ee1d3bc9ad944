// net::CallLife: a client call's deadline, its outcome parked while a write borrows the caller's
// bytes, and its delivery exactly once, as grpc://, tcp:// and http:// share them. Driven on an
// io_context this thread runs, with a connection that records what the life asks of it.
#include "net/call_life.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using sonic::Clock;
using sonic::Error;
using sonic::Result;
using sonic::StatusCode;

struct TestCall : sonic::net::CallLife<Result<int>> {
  bool writing = false;  // a write still reads the caller's bytes
};

// What a transport's connection does, reduced to what the life asks of it: abandon() ends the
// call now (parked while a write still reads it), let_go() closes the connection, which ends
// the write.
struct TestConnection : std::enable_shared_from_this<TestConnection> {
  explicit TestConnection(asio::io_context& context) : io(context) {}

  void abandon(const std::shared_ptr<TestCall>& call, Error why) {
    abandoned.push_back(why.code());
    complete(call, std::move(why));
  }
  std::string describe() const { return "test://peer"; }
  void let_go(const std::shared_ptr<TestCall>& call, const std::string& why) {
    let_go_why.push_back(why);
    call->writing = false;
    call->release();  // the write ended with the connection
  }
  void complete(const std::shared_ptr<TestCall>& call, Result<int> outcome) {
    sonic::net::settle(call, std::move(outcome), call->writing, io, *this);
  }

  asio::io_context& io;
  std::vector<StatusCode> abandoned;
  std::vector<std::string> let_go_why;
};

// A call whose `done` records each outcome it gets.
struct Recorded {
  std::shared_ptr<TestCall> call = std::make_shared<TestCall>();
  std::vector<Result<int>> outcomes;

  explicit Recorded(sonic::Deadline deadline = sonic::Deadline::max()) {
    call->deadline = deadline;
    call->done = [this](Result<int> outcome) { outcomes.push_back(std::move(outcome)); };
  }
};

// Runs `io` until it has nothing left to do.
void drain(asio::io_context& io) {
  io.restart();
  io.run();
}

}  // namespace

TEST_CASE("a call's outcome is delivered once: a second one is dropped") {
  Recorded r;
  r.call->deliver(7);
  r.call->deliver(Error(StatusCode::Cancelled, "too late"));
  REQUIRE(r.outcomes.size() == 1);
  CHECK(*r.outcomes[0] == 7);
  CHECK(r.call->finished());
}

TEST_CASE("a deadline already passed abandons the call inside arm_deadline") {
  asio::io_context io;
  auto connection = std::make_shared<TestConnection>(io);
  Recorded r(Clock::now() - std::chrono::seconds(1));
  sonic::net::arm_deadline(r.call, io, connection);
  REQUIRE(r.outcomes.size() == 1);
  CHECK(r.outcomes[0].error().code() == StatusCode::DeadlineExceeded);
  CHECK(r.outcomes[0].error().message() == "deadline passed before the request was sent");
}

TEST_CASE("a deadline that passes abandons the call, naming the peer; the late answer is dropped") {
  asio::io_context io;
  auto connection = std::make_shared<TestConnection>(io);
  Recorded r(Clock::now() + std::chrono::milliseconds(1));
  sonic::net::arm_deadline(r.call, io, connection);
  CHECK(r.outcomes.empty());
  drain(io);  // the timer fires
  REQUIRE(r.outcomes.size() == 1);
  CHECK(r.outcomes[0].error().code() == StatusCode::DeadlineExceeded);
  CHECK(r.outcomes[0].error().message() == "no response from test://peer before the deadline");
  connection->complete(r.call, 42);  // the answer comes after all
  CHECK(r.outcomes.size() == 1);
  CHECK(connection->let_go_why.empty());
}

TEST_CASE("an answer that wins the race with its expired deadline is the one delivered") {
  asio::io_context io;
  auto connection = std::make_shared<TestConnection>(io);
  Recorded r(Clock::now() + std::chrono::milliseconds(1));
  sonic::net::arm_deadline(r.call, io, connection);
  // The deadline has passed, but the answer was queued on the network thread first: its
  // timer's handler may still run after it, and must find the call ended.
  std::this_thread::sleep_until(r.call->deadline + std::chrono::milliseconds(2));
  asio::post(io, [&] { connection->complete(r.call, 42); });
  drain(io);
  REQUIRE(r.outcomes.size() == 1);
  CHECK(*r.outcomes[0] == 42);
  CHECK(connection->abandoned.empty());
}

TEST_CASE("cancel and deadline racing: whichever abandons first decides, once") {
  asio::io_context io;
  auto connection = std::make_shared<TestConnection>(io);
  Recorded r(Clock::now() + std::chrono::milliseconds(1));
  sonic::net::arm_deadline(r.call, io, connection);
  std::this_thread::sleep_until(r.call->deadline + std::chrono::milliseconds(2));
  // A CancelSignal posts its abandon to the network thread (CallBook::watch) as this does.
  asio::post(io, [&] {
    connection->abandon(r.call, Error(StatusCode::Cancelled, "cancelled by the caller"));
  });
  drain(io);
  REQUIRE(r.outcomes.size() == 1);
  CHECK(r.outcomes[0].error().code() == StatusCode::Cancelled);
}

TEST_CASE("an outcome decided while a write borrows the bytes waits for the write") {
  asio::io_context io;
  auto connection = std::make_shared<TestConnection>(io);
  Recorded r;
  r.call->writing = true;
  connection->complete(r.call, 42);  // the server answered before the request was all written
  CHECK(r.outcomes.empty());
  CHECK(r.call->finished());
  CHECK(r.call->parked());
  // A cancel now changes nothing: the outcome is decided.
  connection->abandon(r.call, Error(StatusCode::Cancelled, "cancelled by the caller"));
  CHECK(r.outcomes.empty());
  r.call->writing = false;
  r.call->release();  // the write is over
  REQUIRE(r.outcomes.size() == 1);
  CHECK(*r.outcomes[0] == 42);
  r.call->release();
  CHECK(r.outcomes.size() == 1);
  drain(io);  // the parked outcome's limit was cancelled with it: it lets go of nothing
  CHECK(connection->let_go_why.empty());
}

TEST_CASE("a deadline that passes while the request is written lets go of the write") {
  asio::io_context io;
  auto connection = std::make_shared<TestConnection>(io);
  Recorded r(Clock::now() + std::chrono::milliseconds(1));
  r.call->writing = true;  // a large tensor to a stalled peer
  sonic::net::arm_deadline(r.call, io, connection);
  drain(io);
  REQUIRE(connection->let_go_why.size() == 1);
  CHECK(connection->let_go_why[0] ==
        "a request's deadline passed while it was still being written");
  REQUIRE(r.outcomes.size() == 1);  // only once the write ended
  CHECK(r.outcomes[0].error().code() == StatusCode::DeadlineExceeded);
}

TEST_CASE("a parked outcome whose write stalls is let go of by the call's deadline") {
  asio::io_context io;
  auto connection = std::make_shared<TestConnection>(io);
  // Well within kParkedGrace: the deadline is the limit.
  Recorded r(Clock::now() + std::chrono::milliseconds(5));
  r.call->writing = true;
  connection->complete(r.call, Error(StatusCode::Cancelled, "cancelled by the caller"));
  CHECK(r.outcomes.empty());
  drain(io);
  REQUIRE(connection->let_go_why.size() == 1);
  CHECK(connection->let_go_why[0] ==
        "a stopped request's bytes were still being written: the connection is closed to let go "
        "of them");
  REQUIRE(r.outcomes.size() == 1);
  CHECK(r.outcomes[0].error().code() == StatusCode::Cancelled);
}

TEST_CASE("a carrier that parks without deciding (http://) decides once the write is over") {
  asio::io_context io;
  auto connection = std::make_shared<TestConnection>(io);
  Recorded r;
  r.call->park(42);
  CHECK(r.call->parked());
  CHECK_FALSE(r.call->finished());
  r.call->deliver(r.call->take_parked());
  CHECK_FALSE(r.call->parked());
  REQUIRE(r.outcomes.size() == 1);
  CHECK(*r.outcomes[0] == 42);
}

TEST_CASE("a deadline held by a weak owner does nothing once the connection is gone") {
  asio::io_context io;
  auto connection = std::make_shared<TestConnection>(io);
  Recorded r(Clock::now() + std::chrono::milliseconds(1));
  sonic::net::arm_deadline(r.call, io, std::weak_ptr<TestConnection>(connection));
  connection.reset();
  drain(io);
  CHECK(r.outcomes.empty());
  CHECK_FALSE(r.call->finished());
}
