// How sonic-server spends HTTP/2 flow control on a call, read off the wire by a client that
// speaks HTTP/2 frame by frame: a window is opened only for a message that needs it (each
// WINDOW_UPDATE costs the server a write), and a message that needs it gets it.
#include <doctest/doctest.h>

#include <functional>

#include "attacks.hpp"
#include "h2_frames.hpp"
#include "hostile_target.hpp"

using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

constexpr std::uint16_t kInitialWindowSetting = 4;  // SETTINGS_INITIAL_WINDOW_SIZE

// A client connection that keeps every frame the server sent.
struct WireClient {
  RawSocket socket;
  std::string unparsed;
  std::vector<h2::Frame> frames;

  // Reads until `done(frames)` holds or 5 s pass; returns whether it held.
  bool read_until(const std::function<bool(const std::vector<h2::Frame>&)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!done(frames)) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      unparsed += socket.receive(50ms);
      for (h2::Frame& frame : h2::take_frames(unparsed)) frames.push_back(std::move(frame));
    }
    return true;
  }

  std::size_t count(std::uint8_t type, std::uint32_t stream) const {
    return static_cast<std::size_t>(std::count_if(frames.begin(), frames.end(), [&](const auto& f) {
      return f.type == type && f.stream == stream;
    }));
  }

  std::size_t data_bytes(std::uint32_t stream) const {
    std::size_t total = 0;
    for (const h2::Frame& f : frames) {
      if (f.type == h2::kData && f.stream == stream) total += f.payload.size();
    }
    return total;
  }
};

bool has(const std::vector<h2::Frame>& frames, std::uint8_t type, std::uint32_t stream,
         std::uint8_t flags = 0) {
  return std::any_of(frames.begin(), frames.end(), [&](const h2::Frame& f) {
    return f.type == type && f.stream == stream && (f.flags & flags) == flags;
  });
}

// The handshake of a gRPC client: preface, SETTINGS (stream windows as large as they go, so that
// answers never wait for this client), a large connection window; the server's
// SETTINGS are acknowledged, so that its initial stream window applies. Returns that window.
std::uint32_t handshake(WireClient& client) {
  client.socket.send(h2::preface() + h2::settings({{kInitialWindowSetting, 0x7fffffff}}) +
                     h2::window_update(0, 0x7fffffff - 65535));
  REQUIRE(client.read_until([](const auto& frames) {
    return std::any_of(frames.begin(), frames.end(), [](const h2::Frame& f) {
      return f.type == h2::kSettings && !(f.flags & h2::kAck);
    });
  }));
  const auto server_settings = std::find_if(
      client.frames.begin(), client.frames.end(),
      [](const h2::Frame& f) { return f.type == h2::kSettings && !(f.flags & h2::kAck); });
  const std::uint32_t window = h2::setting(*server_settings, kInitialWindowSetting, 65535);
  client.socket.send(h2::settings({}, true));
  return window;
}

}  // namespace

TEST_CASE("a call whose message fits its first window costs no WINDOW_UPDATE") {
  // Was: every call's stream window was opened to 16 MiB as its message began, a 13-byte frame
  // and a socket write per request that no client needed (a quarter more writes per 64 KiB
  // request than before the server bounded its windows).
  HostileTarget target;
  WireClient client{RawSocket(target.grpc_port()), {}, {}};
  const std::uint32_t window = handshake(client);
  const std::string message = h2::grpc_message(attack::identity_request(16384));  // 64 KiB
  REQUIRE(message.size() <= window);
  client.socket.send(h2::headers(1, h2::grpc_request_headers("ModelInfer")) +
                     h2::data_frames(1, message, true));
  REQUIRE(client.read_until(
      [](const auto& frames) { return has(frames, h2::kHeaders, 1, h2::kEndStream); }));
  CHECK(client.data_bytes(1) > 65536);  // the answer, not an error in trailers
  CHECK(client.count(h2::kWindowUpdate, 1) == 0);
}

TEST_CASE("a call whose message is larger than its first window gets the window it needs") {
  HostileTarget target;
  WireClient client{RawSocket(target.grpc_port()), {}, {}};
  const std::uint32_t window = handshake(client);
  const std::string message = h2::grpc_message(attack::identity_request(262144));  // 1 MiB
  REQUIRE(message.size() > window);
  // As much as the window allows, then nothing until the server opens it.
  client.socket.send(h2::headers(1, h2::grpc_request_headers("ModelInfer")) +
                     h2::data_frames(1, std::string_view(message).substr(0, window), false));
  REQUIRE(client.read_until([](const auto& frames) { return has(frames, h2::kWindowUpdate, 1); }));
  client.socket.send(h2::data_frames(1, std::string_view(message).substr(window), true));
  REQUIRE(client.read_until(
      [](const auto& frames) { return has(frames, h2::kHeaders, 1, h2::kEndStream); }));
  CHECK(client.data_bytes(1) > 1048576);
}
