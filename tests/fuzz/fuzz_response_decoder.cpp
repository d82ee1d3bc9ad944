// libFuzzer target: a hostile server's response body. The input is cut into chunks (sizes taken
// from its first bytes, so chunk boundaries are fuzzed too) and fed to the client's
// MessageReader; every completed message goes through decode_infer_response (a unary call's) or
// decode_stream_infer_response (a stream's, whose tensors are one message further in), and
// every output of a decoded result is read. Nothing may crash, leak or trip UBSan.
//
// Input: byte 0 & 7 = k chunk-size bytes follow (k == 0: one chunk); chunk i has size
// 1 + byte[1 + i % k]; (byte 0 >> 3) % 3 is the call's grpc-encoding (identity, deflate, gzip);
// byte 0 >> 7 chooses a stream's responses; the rest of the input is the stream of gRPC
// length-prefixed messages.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "chunked_reader.hpp"
#include "protocol/grpc_wire.hpp"
#include "protocol/infer_codec.hpp"

namespace {

constexpr std::size_t kMaxMessageBytes = 64u << 20;

// Reads every output the way a caller would: check(), then the strings of a BYTES output.
std::size_t touch(const sonic::InferResult& result) {
  std::size_t sum =
      result.model_name().size() + result.model_version().size() + result.request_id().size();
  for (const auto& output : result.outputs()) {
    sum += output.name.size() + output.tensor.byte_size() + output.tensor.shape().size();
    if (!output.tensor.check()) continue;
    if (output.tensor.dtype() == sonic::DataType::Bytes) {
      for (std::string_view item : output.tensor.string_views()) sum += item.size();
    } else if (output.tensor.byte_size() > 0) {
      sum += output.tensor.data()[0] + output.tensor.data()[output.tensor.byte_size() - 1];
    }
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool stream = size > 0 && (data[0] >> 7) != 0;
  volatile std::size_t sink = feed_in_fuzzed_chunks(
      data, size,
      stream ? sonic::protocol::kStreamResponseRawField
             : sonic::protocol::RawFieldPath(sonic::protocol::kRawOutputField),
      kMaxMessageBytes, [stream](sonic::protocol::ReceivedMessage message) -> std::size_t {
        auto result = stream ? sonic::protocol::decode_stream_infer_response(std::move(message))
                             : sonic::protocol::decode_infer_response(std::move(message));
        return result ? touch(*result) : 0;
      });
  (void)sink;
  return 0;
}
