// libFuzzer target: a hostile client's request body, through the server path end to end
// without sockets. The input is cut into chunks (sizes taken from its first bytes, so chunk
// boundaries are fuzzed too) and fed to a MessageReader; every completed message goes through
// decode_infer_request and, when it decodes, through a CpuExecutor holding the built-in models
// (synchronous infer) and encode_infer_response, as sonic-server does. Nothing may crash, leak,
// throw or trip UBSan.
//
// Input: byte 0 & 7 = k chunk-size bytes follow (k == 0: one chunk); chunk i has size
// 1 + byte[1 + i % k]; (byte 0 >> 3) % 3 is the call's grpc-encoding (identity, deflate, gzip);
// the rest of the input is the stream of gRPC length-prefixed messages.
#include <sonic/builtin_models.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "chunked_reader.hpp"
#include "protocol/grpc_wire.hpp"
#include "protocol/infer_codec.hpp"

namespace {

constexpr std::size_t kMaxMessageBytes = 64u << 20;

sonic::CpuExecutor& executor() {
  // One pool thread: infer() runs the model on the calling thread.
  static const auto instance = sonic::CpuExecutor::with_models(sonic::models::builtin(), 1);
  return *instance;
}

// Reads every tensor the way a model or caller would.
std::size_t touch(const std::vector<sonic::NamedTensor>& tensors) {
  std::size_t sum = 0;
  for (const auto& named : tensors) {
    const sonic::Tensor& tensor = named.tensor;
    sum += named.name.size() + tensor.byte_size() + tensor.shape().size();
    if (!tensor.check()) continue;
    if (tensor.dtype() == sonic::DataType::Bytes) {
      for (std::string_view item : tensor.string_views()) sum += item.size();
    } else if (tensor.byte_size() > 0) {
      sum += tensor.data()[0] + tensor.data()[tensor.byte_size() - 1];
    }
  }
  return sum;
}

std::size_t serve(sonic::protocol::ReceivedMessage message) {
  auto request = sonic::protocol::decode_infer_request(std::move(message));
  if (!request) return 0;
  std::size_t sum = touch(request->inputs()) + request->outputs().size();
  auto result = executor().infer(*request);
  if (!result) return sum;
  sum += touch(result->outputs());
  auto body = sonic::protocol::encode_infer_response(*result, kMaxMessageBytes);
  if (!body) return sum;
  for (const auto& piece : (*body)->pieces()) {
    if (piece.size > 0) sum += (*body)->piece_data(piece)[piece.size - 1];
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  volatile std::size_t sink = feed_in_fuzzed_chunks(
      data, size, sonic::protocol::kRawInputField, kMaxMessageBytes,
      [](sonic::protocol::ReceivedMessage message) { return serve(std::move(message)); });
  (void)sink;
  return 0;
}
