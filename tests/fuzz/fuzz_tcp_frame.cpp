// libFuzzer target: a hostile peer of the TCP transport. The input is cut into chunks (sizes
// taken from its first bytes) and fed to a FrameReader; every completed frame is read the way
// the transport would: error frames decoded, request and response envelopes decoded with their
// tensors. Nothing may crash, leak, allocate without bound or trip UBSan.
//
// Input: byte 0 & 7 = k chunk-size bytes follow (k == 0: one chunk); chunk i has size
// 1 + byte[1 + i % k]; the rest is the byte stream of frames (proto/tcp_framing.md).
#include <cstddef>
#include <cstdint>

#include "chunked_reader.hpp"
#include "protocol/infer_codec.hpp"
#include "protocol/tcp_frame.hpp"

namespace {

constexpr std::size_t kMaxMessageBytes = 64u << 20;

std::size_t use(sonic::protocol::tcp::Frame& frame) {
  using sonic::protocol::tcp::FrameKind;
  std::size_t sum = frame.envelope.size() + frame.tensors.size();
  if (frame.kind == FrameKind::Error)
    return sum + sonic::protocol::tcp::decode_error(frame).message().size();
  sonic::protocol::ReceivedMessage message{std::move(frame.envelope), std::move(frame.tensors), {}};
  if (frame.kind == FrameKind::Response) {
    if (auto result = sonic::protocol::decode_infer_response(std::move(message))) {
      for (const auto& out : result->outputs()) sum += out.tensor.byte_size();
    }
  } else if (frame.kind == FrameKind::Request) {
    if (auto request = sonic::protocol::decode_infer_request(std::move(message))) {
      sum += request->inputs().size();
    }
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sonic::protocol::tcp::FrameReader reader(kMaxMessageBytes);
  volatile std::size_t sum = 0;
  in_fuzzed_chunks(data, size, [&](const std::uint8_t* chunk, std::size_t n) {
    auto fed = reader.feed(chunk, n);
    for (auto& frame : reader.frames()) sum = sum + use(frame);
    reader.frames().clear();
    return fed.ok();
  });
  return 0;
}
