#include "attacks.hpp"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "h2_frames.hpp"
#include "protocol/wire.hpp"

namespace sonic::test::attack {

namespace wire = sonic::protocol::wire;
using Clock = std::chrono::steady_clock;

namespace {

// `body` as one gRPC message in DATA frames, the last one ending the stream when `end`.
std::string data_frames(std::uint32_t stream, const std::string& body, bool end) {
  return h2::data_frames(stream, h2::grpc_message(body), end);
}

std::string call_frames(std::uint32_t stream, const std::string& method, const std::string& body) {
  return h2::headers(stream, h2::grpc_request_headers(method)) + data_frames(stream, body, true);
}

// Sends `unit` again and again until `total` bytes went or the server stops taking them.
Flood repeat(RawSocket& socket, const std::string& unit, std::size_t total) {
  Flood flood;
  std::string batch;
  while (batch.size() < 64 * 1024) batch += unit;
  while (flood.sent < total) {
    std::size_t n = socket.send(batch, milliseconds(1000));
    flood.sent += n;
    if (n < batch.size()) break;
  }
  flood.closed_by_server = socket.closed_by_peer(milliseconds(200));
  return flood;
}

void put_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// sonic's TCP frame header (proto/tcp_framing.md).
std::string tcp_header(std::uint8_t kind, std::uint64_t id, std::uint32_t envelope,
                       std::uint32_t tensors, std::uint64_t section) {
  std::string h = "SNCT";
  h.push_back(1);  // version
  h.push_back(static_cast<char>(kind));
  put_le(h, 0, 2);  // flags
  put_le(h, id, 8);
  put_le(h, envelope, 4);
  put_le(h, tensors, 4);
  put_le(h, section, 8);
  return h;
}

std::string tcp_record(std::uint8_t codec, std::uint64_t stored, std::uint64_t raw) {
  std::string r(1, static_cast<char>(codec));
  r.append(7, '\0');
  put_le(r, stored, 8);
  put_le(r, raw, 8);
  return r;
}

}  // namespace

std::string infer_envelope(const std::string& model, std::size_t floats) {
  std::string tensor;
  wire::put_string_field(tensor, 1, "INPUT0");
  wire::put_string_field(tensor, 2, "FP32");
  std::string shape;
  wire::put_varint(shape, 1);
  wire::put_varint(shape, floats);
  wire::put_len_field(tensor, 3, shape);
  std::string envelope;
  wire::put_string_field(envelope, 1, model);
  wire::put_len_field(envelope, 5, tensor);
  return envelope;
}

std::string identity_request(std::size_t floats) {
  std::string request = infer_envelope("identity_fp32", floats);
  std::string raw(floats * sizeof(float), '\0');
  for (std::size_t i = 0; i < floats; ++i) {
    float value = static_cast<float>(i % 1000);
    std::memcpy(&raw[i * sizeof(float)], &value, sizeof value);
  }
  wire::put_len_field(request, 7, raw);
  return request;
}

RawSocket h2_connect(int port, int receive_buffer) {
  RawSocket socket(port, receive_buffer);
  std::string hello = h2::preface() + h2::settings({{4, 0x7fffffff}, {2, 0}}) +
                      h2::window_update(0, 0x7fffffff - 65535);
  socket.send(hello);
  return socket;
}

Flood unread_answers(int port, std::size_t request_floats, std::size_t total_bytes) {
  RawSocket socket = h2_connect(port, 4096);
  const std::string body = identity_request(request_floats);
  Flood flood;
  for (std::uint32_t stream = 1; flood.sent < total_bytes && stream < 0x7fffffff; stream += 2) {
    std::string frames = call_frames(stream, "ModelInfer", body);
    std::size_t n = socket.send(frames, milliseconds(1000));
    flood.sent += n;
    if (n < frames.size()) break;
  }
  // No wait for the server to close: that would read the answers this client never reads.
  return flood;
}

Flood unread_stream_answers(int port, std::size_t request_floats, std::size_t total_bytes) {
  RawSocket socket = h2_connect(port, 4096);
  socket.send(h2::headers(1, h2::grpc_request_headers("ModelStreamInfer")));
  const std::string frames = data_frames(1, identity_request(request_floats), false);
  Flood flood;
  while (flood.sent < total_bytes) {
    std::size_t n = socket.send(frames, milliseconds(1000));
    flood.sent += n;
    if (n < frames.size()) break;  // the server stopped taking them: flow control holds
  }
  return flood;
}

Flood windowless_stream(int port, std::size_t request_floats, std::size_t total_bytes) {
  constexpr std::uint16_t kInitialWindowSetting = 4;
  constexpr std::uint32_t kStream = 1;
  constexpr std::int64_t kMaxFrameBytes = 16384;  // SETTINGS_MAX_FRAME_SIZE's default
  RawSocket socket(port);
  socket.send(h2::preface() + h2::settings({{kInitialWindowSetting, 0}}) +
              h2::headers(kStream, h2::grpc_request_headers("ModelStreamInfer")));
  // What the server lets this client send: RFC 9113's defaults until its SETTINGS and
  // WINDOW_UPDATEs say more.
  std::int64_t connection_window = 65535, stream_window = 65535;
  std::string unparsed;
  Flood flood;
  auto read_frames = [&](milliseconds wait) {
    const std::string bytes = socket.receive(wait);
    if (bytes.empty()) return;
    unparsed += bytes;
    for (const h2::Frame& frame : h2::take_frames(unparsed)) {
      if (frame.type == h2::kSettings && !(frame.flags & h2::kAck)) {
        const std::int64_t initial = h2::setting(frame, kInitialWindowSetting, 65535);
        stream_window += initial - 65535;  // RFC 9113 §6.9.2: the difference applies
        socket.send(h2::settings({}, true));
      } else if (frame.type == h2::kWindowUpdate && frame.payload.size() == 4) {
        const std::int64_t increment =
            (std::uint32_t{static_cast<std::uint8_t>(frame.payload[0])} << 24 |
             std::uint32_t{static_cast<std::uint8_t>(frame.payload[1])} << 16 |
             std::uint32_t{static_cast<std::uint8_t>(frame.payload[2])} << 8 |
             static_cast<std::uint8_t>(frame.payload[3])) &
            0x7fffffff;
        (frame.stream == 0 ? connection_window : stream_window) += increment;
      } else if ((frame.type == h2::kRstStream && frame.stream == kStream) ||
                 (frame.type == h2::kHeaders && frame.stream == kStream &&
                  (frame.flags & h2::kEndStream)) ||
                 frame.type == h2::kGoaway) {
        flood.closed_by_server = true;
      }
    }
  };
  const std::string message = h2::grpc_message(identity_request(request_floats));
  std::size_t at = 0;  // into `message`, sent again and again
  auto last_progress = Clock::now();
  while (flood.sent < total_bytes && !flood.closed_by_server &&
         Clock::now() - last_progress < std::chrono::seconds(3)) {
    const std::int64_t allowed = std::min({connection_window, stream_window, kMaxFrameBytes});
    if (allowed <= 0) {
      read_frames(milliseconds(50));
      continue;
    }
    const std::size_t n = std::min(static_cast<std::size_t>(allowed), message.size() - at);
    const std::string frame = h2::data(kStream, std::string_view(message).substr(at, n), false);
    if (socket.send(frame, milliseconds(1000)) < frame.size()) break;
    connection_window -= static_cast<std::int64_t>(n);
    stream_window -= static_cast<std::int64_t>(n);
    flood.sent += n;
    at = (at + n) % message.size();
    last_progress = Clock::now();
    read_frames(milliseconds(0));
  }
  return flood;
}

Flood ping_flood(int port, std::size_t total_bytes) {
  RawSocket socket = h2_connect(port, 4096);
  return repeat(socket, h2::ping(0x736f6e6963), total_bytes);
}

Flood settings_flood(int port, std::size_t total_bytes) {
  RawSocket socket = h2_connect(port, 4096);
  return repeat(socket, h2::settings({{3, 100}}), total_bytes);
}

RawSocket declared_and_stalled(int port, int streams, std::uint32_t declared) {
  RawSocket socket = h2_connect(port);
  // The message is one raw_input_contents field that fills it: its key, its length, 3 bytes.
  std::string start(1, '\x3a');
  std::size_t length = declared - 1 - wire::varint_size(declared);
  wire::put_varint(start, length);
  start += "xyz";
  std::string frames;
  for (int i = 0; i < streams; ++i) {
    auto stream = static_cast<std::uint32_t>(2 * i + 1);
    frames += h2::headers(stream, h2::grpc_request_headers("ModelInfer"));
    frames += h2::data(stream, h2::grpc_prefix(declared) + start, false);
  }
  socket.send(frames);
  return socket;
}

Flood empty_raw_fields(int port, std::size_t total_bytes) {
  RawSocket socket = h2_connect(port, 4096);
  std::string body = infer_envelope("identity_fp32", 0);
  body.reserve(total_bytes);
  while (body.size() + 2 <= total_bytes) body.append("\x3a\x00", 2);  // field 7, length 0
  Flood flood;
  std::string frames = call_frames(1, "ModelInfer", body);
  flood.sent = socket.send(frames, milliseconds(2000));
  flood.closed_by_server = socket.closed_by_peer(milliseconds(200));
  return flood;
}

std::vector<RawSocket> half_prefaces(int port, int connections) {
  std::vector<RawSocket> sockets;
  sockets.reserve(static_cast<std::size_t>(connections));
  const std::string half = h2::preface().substr(0, 12);
  for (int i = 0; i < connections; ++i) {
    sockets.emplace_back(port);
    sockets.back().send(half);
  }
  return sockets;
}

Flood hpack_bomb(int port, milliseconds duration, std::size_t bytes_per_second, int references) {
  RawSocket socket = h2_connect(port);
  Flood flood;
  // The first block puts a 4 KiB header in the dynamic table (index 62); each later block on a
  // new stream refers to it `references` times: a byte of the block, 4 KiB decoded.
  std::string first = h2::grpc_request_headers("ModelInfer") +
                      h2::literal_indexed("x-bomb", std::string(4000, 'b'));
  std::string later = h2::grpc_request_headers("ModelInfer");
  for (int i = 0; i < references; ++i) later += h2::indexed(62);
  std::uint32_t stream = 1;
  const auto start = Clock::now();
  const auto until = start + duration;
  while (Clock::now() < until) {
    std::string block = h2::headers(stream, stream == 1 ? first : later, true);
    stream += 2;
    std::size_t n = socket.send(block, milliseconds(500));
    flood.sent += n;
    if (n < block.size()) {
      flood.closed_by_server = socket.closed_by_peer(milliseconds(200));
      return flood;
    }
    socket.drain(milliseconds(0));
    // Pace: sleep until the rate allows the bytes sent so far.
    auto due = start + std::chrono::microseconds(static_cast<std::int64_t>(
                           1e6 * static_cast<double>(flood.sent) / bytes_per_second));
    std::this_thread::sleep_until(due);
  }
  flood.closed_by_server = socket.closed_by_peer(milliseconds(200));
  return flood;
}

Flood tcp_ping_flood(int port, std::size_t total_bytes) {
  RawSocket socket(port, 4096);
  return repeat(socket, tcp_header(4, 0, 0, 0, 0), total_bytes);
}

RawSocket tcp_declared_and_stalled(int port, std::uint64_t declared) {
  RawSocket socket(port);
  std::string envelope = infer_envelope("identity_fp32", declared / sizeof(float));
  std::string frame =
      tcp_header(1, 1, static_cast<std::uint32_t>(envelope.size()), 1, 24 + declared);
  frame += envelope;
  frame += tcp_record(0, declared, declared);
  frame += std::string(8, '\0');
  socket.send(frame);
  return socket;
}

RawSocket http_declared_and_stalled(int port, std::uint64_t declared) {
  RawSocket socket(port);
  socket.send("POST /v2/models/identity_fp32/infer HTTP/1.1\r\nHost: x\r\nContent-Length: " +
              std::to_string(declared) + "\r\n\r\n{\"inputs\"");
  return socket;
}

std::size_t http_unread_pipeline(int port, int requests) {
  RawSocket socket(port, 4096);
  const std::string body =
      R"({"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": )"
      R"([0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}, {"name": "INPUT1", "shape": [1, 16], )"
      R"("datatype": "INT32", "data": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]})";
  const std::string one = "POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string all;
  for (int i = 0; i < requests; ++i) all += one;
  return socket.send(all, std::chrono::milliseconds(500));
}

namespace {

// `raw` bytes of zeros as one zstd frame, compressed in 1 MiB steps so that the test itself
// does not hold `raw` bytes. Made once per size and kept: an attacker repeats the attack, and
// compressing hundreds of MiB each round would measure the attacker's CPU (on a 2-core machine,
// a sibling of the server's), not what the attack makes the server do.
const std::string& compressed_zeros(std::uint64_t raw) {
  static std::mutex mutex;
  static std::map<std::uint64_t, std::string> made;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, fresh] = made.try_emplace(raw);
  if (!fresh) return it->second;
  std::string& stored = it->second;
  ZSTD_CCtx* context = ZSTD_createCCtx();
  ZSTD_CCtx_setPledgedSrcSize(context, raw);
  std::string zeros(1 << 20, '\0');
  std::string out(ZSTD_CStreamOutSize(), '\0');
  std::uint64_t left = raw;
  do {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, zeros.size()));
    left -= n;
    ZSTD_inBuffer in{zeros.data(), n, 0};
    const bool last = left == 0;
    std::size_t pending = 0;
    do {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      pending = ZSTD_compressStream2(context, &o, &in, last ? ZSTD_e_end : ZSTD_e_continue);
      stored.append(out.data(), o.pos);
    } while (!ZSTD_isError(pending) && (last ? pending != 0 : in.pos < in.size));
  } while (left > 0);
  ZSTD_freeCCtx(context);
  return stored;
}

}  // namespace

void prepare_zstd_tensor(std::uint64_t raw) { (void)compressed_zeros(raw); }

std::string tcp_zstd_tensor(int port, std::uint64_t raw, bool real) {
  RawSocket socket(port);
  const std::string stored =
      real ? compressed_zeros(raw)
           : std::string("\x28\xb5\x2f\xfd", 4) + std::string(12, 'x');  // magic, then nonsense
  std::string envelope = infer_envelope("identity_fp32", raw / sizeof(float));
  std::string frame =
      tcp_header(1, 7, static_cast<std::uint32_t>(envelope.size()), 1, 24 + stored.size());
  frame += envelope;
  frame += tcp_record(1, stored.size(), raw);
  frame += stored;
  socket.send(frame);
  std::string answer;
  const auto until = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < until) {
    std::string more = socket.receive(milliseconds(100));
    if (more.empty() && socket.closed_by_peer(milliseconds(0))) break;
    answer += more;
    if (answer.size() >= 32) {
      std::uint64_t envelope_bytes = 0, section = 0;
      for (int i = 0; i < 4; ++i)
        envelope_bytes |= std::uint64_t{std::uint8_t(answer[16 + i])} << (8 * i);
      for (int i = 0; i < 8; ++i) section |= std::uint64_t{std::uint8_t(answer[24 + i])} << (8 * i);
      if (answer.size() >= 32 + envelope_bytes + section) break;
    }
  }
  return answer;
}

int tcp_error_code(const std::string& frame) {
  if (frame.size() < 36 || frame.compare(0, 4, "SNCT") != 0 || frame[5] != 3) return -1;
  int code = 0;
  for (int i = 0; i < 4; ++i) code |= std::uint8_t(frame[32 + i]) << (8 * i);
  return code;
}

}  // namespace sonic::test::attack
