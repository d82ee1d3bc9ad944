// A tensor's bytes read from the socket straight into its buffer: a scripted peer sends answers
// in 256 KiB DATA frames (as sonic-server does), so that the client reads the rest of each frame
// in place. The buffer must outlive a read that is under way when the call ends (under ASan, a
// read into freed memory is reported), and the connection must go on as if nothing happened.
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <thread>

#include "h2_frames.hpp"
#include "loopback_server.hpp"
#include "loopback_socket.hpp"
#include "protocol/wire.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t kFrameBytes = 256 * 1024;
constexpr std::size_t kFrameHeaderBytes = 9;

// A ModelInferResponse with one UINT8 output of `bytes` bytes, less the bytes themselves:
// the envelope, then the raw_output_contents key and length.
std::string response_head(std::size_t bytes) {
  namespace wire = protocol::wire;
  std::string output;
  wire::put_string_field(output, 1, "OUTPUT0");
  wire::put_string_field(output, 2, "UINT8");
  std::string shape;
  wire::put_varint(shape, bytes);
  wire::put_len_field(output, 3, shape);
  std::string head;
  wire::put_string_field(head, 1, "simple");
  wire::put_len_field(head, 5, output);
  wire::put_tag(head, 6, wire::WireType::Len);
  wire::put_varint(head, bytes);
  return head;
}

std::string answer_headers() {
  return h2::literal(":status", "200") + h2::literal("content-type", "application/grpc");
}

// One client connection, driven by the test's script with blocking writes and bounded reads.
class ScriptedPeer {
 public:
  explicit ScriptedPeer(int listener) {
    pollfd waiting{listener, POLLIN, 0};
    REQUIRE(::poll(&waiting, 1, 2000) == 1);
    fd_ = ::accept(listener, nullptr, nullptr);
    REQUIRE(fd_ >= 0);
    send(h2::settings() + h2::settings({}, true));
  }
  ~ScriptedPeer() { ::close(fd_); }
  ScriptedPeer(const ScriptedPeer&) = delete;
  ScriptedPeer& operator=(const ScriptedPeer&) = delete;

  void send(const std::string& bytes) {
    std::size_t at = 0;
    while (at < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      REQUIRE(n > 0);
      at += static_cast<std::size_t>(n);
    }
  }

  // Reads until the client has sent a request that ends stream `stream`.
  void await_request(std::uint32_t stream) {
    const auto give_up = std::chrono::steady_clock::now() + 2s;
    while (std::chrono::steady_clock::now() < give_up) {
      pollfd readable{fd_, POLLIN, 0};
      if (::poll(&readable, 1, 50) != 1) continue;
      char buffer[16384];
      ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      REQUIRE(n > 0);
      received_.append(buffer, static_cast<std::size_t>(n));
      if (!preface_skipped_ && received_.size() >= h2::preface().size()) {
        received_.erase(0, h2::preface().size());
        preface_skipped_ = true;
      }
      if (!preface_skipped_) continue;
      for (const auto& frame : h2::take_frames(received_)) {
        if (frame.stream == stream && (frame.flags & h2::kEndStream)) return;
      }
    }
    FAIL("the client's request never came");
  }

 private:
  int fd_ = -1;
  std::string received_;
  bool preface_skipped_ = false;
};

}  // namespace

TEST_CASE("a call that ends while its tensor is read in place leaves the connection working") {
  LoopbackSocket listener(true);
  std::atomic<bool> first_call_ended{false};
  std::thread peer([&] {
    ScriptedPeer connection(listener.fd());
    connection.await_request(1);
    // Stream 1: a 4 MiB answer, of which only the first 64 KiB of its first 256 KiB frame come
    // before the deadline. The client reads the rest of that frame straight into the tensor's
    // buffer, and that read is still waiting when the call ends.
    const std::size_t tensor = 4u << 20;
    const std::string head = response_head(tensor);
    std::string payload = h2::grpc_prefix(static_cast<std::uint32_t>(head.size() + tensor));
    payload += head;
    payload.resize(kFrameBytes, '\x5a');
    const std::string frame = h2::frame(h2::kData, 0, 1, payload);
    const std::size_t sent_first = kFrameHeaderBytes + 64 * 1024;
    connection.send(h2::headers(1, answer_headers()) + frame.substr(0, sent_first));
    const auto give_up = std::chrono::steady_clock::now() + 3s;
    while (!first_call_ended && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(5ms);
    }
    // The frame's remaining bytes: they land where the ended call's tensor was.
    connection.send(frame.substr(sent_first));

    // Stream 3, on the same connection: a whole small answer.
    connection.await_request(3);
    const std::string small = response_head(4) + "\x01\x02\x03\x04";
    connection.send(h2::headers(3, answer_headers()) + h2::data(3, h2::grpc_message(small), false) +
                    h2::headers(3, h2::literal("grpc-status", "0"), true));
    std::this_thread::sleep_for(200ms);  // the client reads it before the socket closes
  });

  ClientOptions options;
  options.validate_inputs = false;
  options.retry.max_attempts = 1;
  Client client(listener.url(), options);
  auto first = client.infer_future(simple_request(1, 1).timeout(300ms));
  try {
    first.get();
    FAIL("the first call should have run out of time");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::DeadlineExceeded);
  }
  first_call_ended = true;

  // A future, as the first: a blocking infer() would open a connection of this thread's own.
  InferResult result = client.infer_future(simple_request(2, 2).timeout(3s)).get();
  const Tensor& output = result.output("OUTPUT0");
  REQUIRE(output.byte_size() == 4);
  CHECK(output.data()[0] == 1);
  CHECK(output.data()[3] == 4);
  peer.join();
}
