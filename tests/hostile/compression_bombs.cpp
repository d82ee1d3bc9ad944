#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "attacks.hpp"
#include "h2_frames.hpp"
#include "protocol/compression.hpp"

namespace sonic::test::attack {

namespace {

using Clock = std::chrono::steady_clock;

// The gzip of `inflated` bytes, of which one in every `spacing` is random, made once per shape
// and kept: an attacker repeats the attack, and compressing anew each round would measure the
// attacker's CPU, not what the attack makes the server do.
const std::string& gzip_of(const std::string& head, std::size_t inflated, std::size_t spacing) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, std::size_t, std::size_t>, std::string> made;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, fresh] = made.try_emplace({head, inflated, spacing});
  if (!fresh) return it->second;
  std::string body = head;
  body.resize(head.size() + inflated, '\0');
  std::uint32_t state = 2463534242u;  // xorshift: the same bytes every run
  for (std::size_t i = head.size(); spacing != 0 && i < body.size(); i += spacing) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    body[i] = static_cast<char>(state);
  }
  it->second = protocol::compress_bytes({body}, Compression::Gzip, protocol::kDefaultLevel);
  return it->second;
}

std::uint32_t be32(const std::string& bytes) {
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value = value << 8 | static_cast<std::uint8_t>(bytes[i]);
  return value & 0x7fffffff;
}

}  // namespace

Flood grpc_gzip_bomb(int port, const std::string& model, std::size_t floats, std::size_t spacing) {
  constexpr std::uint32_t kStream = 1;
  constexpr std::int64_t kMaxFrameBytes = 16384;  // SETTINGS_MAX_FRAME_SIZE's default
  const std::string& packed =
      gzip_of(infer_envelope(model, floats), floats * sizeof(float), spacing);
  std::string message(1, '\x01');  // compressed
  for (int shift = 24; shift >= 0; shift -= 8) {
    message.push_back(static_cast<char>((packed.size() >> shift) & 0xff));
  }
  message += packed;
  RawSocket socket = h2_connect(port);
  socket.send(h2::headers(
      kStream, h2::grpc_request_headers("ModelInfer") + h2::literal("grpc-encoding", "gzip")));
  // What the server lets this client send: RFC 9113's defaults until its SETTINGS and
  // WINDOW_UPDATEs say more.
  std::int64_t connection_window = 65535, stream_window = 65535;
  std::string unparsed;
  Flood flood;
  auto read_frames = [&](milliseconds wait) {
    const std::string bytes = socket.receive(wait);
    unparsed += bytes;
    for (const h2::Frame& frame : h2::take_frames(unparsed)) {
      if (frame.type == h2::kSettings && !(frame.flags & h2::kAck)) {
        stream_window += std::int64_t{h2::setting(frame, 4, 65535)} - 65535;
        socket.send(h2::settings({}, true));
      } else if (frame.type == h2::kWindowUpdate && frame.payload.size() == 4) {
        (frame.stream == 0 ? connection_window : stream_window) += be32(frame.payload);
      } else if ((frame.type == h2::kRstStream && frame.stream == kStream) ||
                 (frame.type == h2::kHeaders && frame.stream == kStream &&
                  (frame.flags & h2::kEndStream)) ||
                 frame.type == h2::kGoaway) {
        flood.closed_by_server = true;
      }
    }
    return !bytes.empty();
  };
  auto last_progress = Clock::now();
  while (flood.sent < message.size() && !flood.closed_by_server &&
         Clock::now() - last_progress < std::chrono::seconds(5)) {
    const std::int64_t allowed = std::min({connection_window, stream_window, kMaxFrameBytes});
    if (allowed <= 0) {
      read_frames(milliseconds(20));
      continue;
    }
    const std::size_t n = std::min(static_cast<std::size_t>(allowed), message.size() - flood.sent);
    const bool last = flood.sent + n == message.size();
    const std::string frame =
        h2::data(kStream, std::string_view(message).substr(flood.sent, n), last);
    if (socket.send(frame, milliseconds(1000)) < frame.size()) break;
    connection_window -= static_cast<std::int64_t>(n);
    stream_window -= static_cast<std::int64_t>(n);
    flood.sent += n;
    last_progress = Clock::now();
    read_frames(milliseconds(0));
  }
  // Its answer: the trailers, once the server read (and inflated) the message.
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (!flood.closed_by_server && Clock::now() < until) read_frames(milliseconds(50));
  return flood;
}

void prepare_grpc_gzip_bomb(const std::string& model, std::size_t floats, std::size_t spacing) {
  (void)gzip_of(infer_envelope(model, floats), floats * sizeof(float), spacing);
}

std::string http_gzip_bomb(const std::string& model, std::size_t floats, std::size_t spacing) {
  const std::string json = R"({"inputs":[{"name":"INPUT0","shape":[1,)" + std::to_string(floats) +
                           R"(],"datatype":"FP32","parameters":{"binary_data_size":)" +
                           std::to_string(floats * sizeof(float)) + "}}]}";
  const std::string& body = gzip_of(json, floats * sizeof(float), spacing);
  return "POST /v2/models/" + model +
         "/infer HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
         "Inference-Header-Content-Length: " +
         std::to_string(json.size()) + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

std::string http_bomb_answer(int port, const std::string& request) {
  RawSocket socket(port);
  socket.send(request, std::chrono::milliseconds(5000));
  std::string answer;
  for (int i = 0; i < 100 && answer.find("\r\n\r\n") == std::string::npos; ++i) {
    std::string more = socket.receive(std::chrono::milliseconds(100));
    answer += more;
  }
  // The body of an error: what follows the head, as much as came with it.
  const std::size_t line = answer.find("\r\n");
  const std::size_t head = answer.find("\r\n\r\n");
  if (line == std::string::npos) return {};
  return answer.substr(0, line) +
         (head == std::string::npos ? std::string() : " " + answer.substr(head + 4, 400));
}

}  // namespace sonic::test::attack
