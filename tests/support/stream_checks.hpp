// Client::open_stream checked the same way against sonic-server and the Triton-like
// python_server.py (which answers streams as Triton's stream_infer_handler.cc does): many
// small requests answered in order on one stream, a decoupled model's responses and its empty
// final one, a failed request that leaves the stream up, and the stream's ends (OK after
// close(), CANCELLED after cancel()).
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sonic/sonic.hpp>

#include "fault_proxy.hpp"

namespace sonic::test {

/// What a stream's callback saw, for checks once the stream ended.
class StreamLog {
 public:
  StreamCallback callback() {
    return [this](StreamResponse response) {
      std::lock_guard<std::mutex> lock(mutex_);
      responses_.push_back(std::move(response));
      changed_.notify_all();
    };
  }
  /// Waits (at most 10 s) until `n` responses came; all of them so far.
  std::vector<StreamResponse> at_least(std::size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(10), [&] { return responses_.size() >= n; });
    return responses_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<StreamResponse> responses_;
};

// `simple` with INPUT0 = INPUT1 = `values` (16 of them): INPUT0 borrows them, so the request
// may be sent while they live (send() copies them), INPUT1 owns a copy.
inline InferRequest simple_on_stream(const std::vector<std::int32_t>& values, std::string id) {
  return std::move(InferRequest("simple")
                       .id(std::move(id))
                       .input("INPUT0", Tensor::view(values, {1, 16}))
                       .input("INPUT1", Tensor::from_vector(values, {1, 16})));
}

// `simple` with every input element `value`, owned by the request.
inline InferRequest simple_on_stream(std::int32_t value, std::string id) {
  std::vector<std::int32_t> values(16, value);
  return std::move(InferRequest("simple")
                       .id(std::move(id))
                       .input("INPUT0", Tensor::from_vector(values, {1, 16}))
                       .input("INPUT1", Tensor::from_vector(values, {1, 16})));
}

inline InferRequest repeat_on_stream(std::vector<std::int32_t> values, std::string id,
                                     bool empty_final = false) {
  const auto n = static_cast<std::int64_t>(values.size());
  std::vector<std::uint32_t> delays(values.size(), 0);
  InferRequest request("repeat_int32");
  request.id(std::move(id))
      .input("IN", Tensor::from_vector(std::move(values), {n}))
      .input("DELAY", Tensor::from_vector(std::move(delays), {n}))
      .input("WAIT", Tensor::from_vector(std::vector<std::uint32_t>{0}, {1}));
  if (empty_final) request.parameter("triton_enable_empty_final_response", true);
  return request;
}

inline void check_streams(Client& client) {
  SUBCASE("many small requests on one stream: each answered once, in order") {
    StreamLog log;
    auto stream = client.open_stream(log.callback());
    constexpr int kRequests = 200;
    for (int i = 0; i < kRequests; ++i) {
      std::vector<std::int32_t> borrowed(16, i);  // free again once send() returns
      REQUIRE(stream.send(simple_on_stream(borrowed, "r" + std::to_string(i))).ok());
    }
    stream.close();
    REQUIRE(stream.wait().ok());
    auto got = log.at_least(kRequests);
    REQUIRE(got.size() == kRequests);
    for (int i = 0; i < kRequests; ++i) {
      CAPTURE(i);
      CHECK(got[i].request_id == "r" + std::to_string(i));
      CHECK(got[i].final);
      REQUIRE(got[i].result.ok());
      CHECK(got[i].result->output("OUTPUT0").as<std::int32_t>()[15] == 2 * i);
    }
    CHECK(stream.send(simple_on_stream(0, "late")).code() == StatusCode::FailedPrecondition);
  }

  SUBCASE("a decoupled model: a response per element, then the empty final one") {
    StreamLog log;
    auto stream = client.open_stream(log.callback());
    REQUIRE(stream.send(repeat_on_stream({4, -5, 6}, "d1", true)).ok());
    REQUIRE(stream.send(repeat_on_stream({}, "d2")).ok());  // no response at all
    stream.close();
    REQUIRE(stream.wait().ok());
    auto got = log.at_least(4);
    REQUIRE(got.size() == 4);
    for (int i = 0; i < 3; ++i) {
      CAPTURE(i);
      CHECK(got[i].request_id == "d1");
      CHECK_FALSE(got[i].final);
      REQUIRE(got[i].result.ok());
      CHECK(got[i].result->output("OUT").as<std::int32_t>()[0] == std::vector<int>{4, -5, 6}[i]);
      CHECK(got[i].result->output("IDX").as<std::uint32_t>()[0] == static_cast<unsigned>(i));
    }
    CHECK(got[3].request_id == "d1");
    CHECK(got[3].final);
    REQUIRE(got[3].result.ok());
    CHECK(got[3].result->outputs().empty());
  }

  SUBCASE("a failed request is answered with its id, and the stream goes on") {
    StreamLog log;
    auto stream = client.open_stream(log.callback());
    REQUIRE(stream.send(simple_on_stream(1, "before")).ok());
    std::vector<std::int32_t> wrong(8, 1);
    REQUIRE(stream
                .send(InferRequest("no_such_model")
                          .id("bad")
                          .input("INPUT0", Tensor::from_vector(wrong, {1, 8})))
                .ok());
    REQUIRE(stream.send(simple_on_stream(2, "after")).ok());
    stream.close();
    REQUIRE(stream.wait().ok());
    auto got = log.at_least(3);
    REQUIRE(got.size() == 3);
    CHECK(got[0].result.ok());
    CHECK(got[1].request_id == "bad");
    CHECK(got[1].final);
    REQUIRE_FALSE(got[1].result.ok());
    CHECK(got[1].result.error().message().find("no_such_model") != std::string::npos);
    CHECK(got[2].request_id == "after");
    CHECK(got[2].result.ok());
  }

  SUBCASE("a mistake in a request is refused by send(), and nothing is sent") {
    StreamLog log;
    auto stream = client.open_stream(log.callback());
    CHECK(stream.send(InferRequest("")).code() == StatusCode::InvalidArgument);
    stream.close();
    CHECK(stream.wait().ok());
    CHECK(log.at_least(0).empty());
  }

  SUBCASE("cancel() ends a stream at once; its end is CANCELLED") {
    StreamLog log;
    auto stream = client.open_stream(log.callback());
    REQUIRE(stream.send(simple_on_stream(1, "x")).ok());
    stream.cancel();
    CHECK(stream.wait().code() == StatusCode::Cancelled);
    CHECK(stream.send(simple_on_stream(2, "y")).code() == StatusCode::FailedPrecondition);
  }

  SUBCASE("a stream destroyed open is cancelled, and its callback does not run after") {
    StreamLog log;
    {
      auto stream = client.open_stream(log.callback());
      REQUIRE(stream.send(repeat_on_stream({1, 2, 3}, "gone")).ok());
    }
    // The client stays usable.
    CHECK(client.infer(simple_on_stream(3, "unary")).request_id() == "unary");
  }
}

/// A stream whose callback is slow holds the server back through its HTTP/2 window, instead
/// of the client buffering every response the server can send. A proxy between the client and
/// the server at `server_port` counts the bytes that reach the client.
inline void check_stream_backpressure(std::uint16_t server_port) {
  using namespace std::chrono_literals;
  FaultProxy proxy(server_port);
  ClientOptions options;
  options.stream_window_bytes = 256 * 1024;
  Client client(proxy.url(), options);

  std::mutex mutex;
  std::condition_variable changed;
  bool released = false;
  std::size_t delivered = 0;
  std::size_t failed = 0;
  auto stream = client.open_stream([&](StreamResponse response) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return released; });  // the first response blocks the callback
    ++delivered;
    failed += response.result.ok() ? 0 : 1;
  });
  // 800 answers of 64 KiB: 52 MiB the server would send at once if the client took it all.
  constexpr int kRequests = 800;
  const std::vector<float> payload(16384, 1.5f);
  for (int i = 0; i < kRequests; ++i) {
    REQUIRE(stream
                .send(InferRequest("identity_fp32")
                          .id("b" + std::to_string(i))
                          .input("INPUT0", Tensor::from_vector(payload, {1, 16384})))
                .ok());
  }
  stream.close();

  // Until the bytes stop coming: what the client let in, plus what the sockets hold (at most
  // Linux's largest loopback buffers, 4 MiB to send and 6 MiB to receive).
  std::size_t reached = proxy.bytes_to_client();
  for (auto stable_since = std::chrono::steady_clock::now();
       std::chrono::steady_clock::now() - stable_since < 500ms;) {
    std::this_thread::sleep_for(50ms);
    if (proxy.bytes_to_client() != reached) {
      reached = proxy.bytes_to_client();
      stable_since = std::chrono::steady_clock::now();
    }
  }
  MESSAGE("with the callback blocked, " << reached / 1024 << " KiB reached the client of "
                                        << kRequests * 64 << " KiB of answers");
  CHECK(reached < 20u * 1024 * 1024);

  {
    std::lock_guard<std::mutex> lock(mutex);
    released = true;
    changed.notify_all();
  }
  REQUIRE(stream.wait().ok());
  std::lock_guard<std::mutex> lock(mutex);
  CHECK(delivered == kRequests);
  CHECK(failed == 0);
}

}  // namespace sonic::test
