// gRPC compression checked the same way against sonic-server and the Triton-like
// python_server.py (where grpcio compresses and inflates, not sonic): a proxy between client and
// server counts the bytes each way, so that a message said to be compressed must be.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <sonic/sonic.hpp>

#include "fault_proxy.hpp"

namespace sonic::test {

namespace compression_detail {

constexpr std::int64_t kFloats = 262144;  // 1 MiB of FP32

// Tensor values that compress, as real tensors often do: small repeating values.
inline const std::vector<float>& ramp() {
  static const std::vector<float> values = [] {
    std::vector<float> v(kFloats);
    for (std::int64_t i = 0; i < kFloats; ++i) v[i] = static_cast<float>(i % 64);
    return v;
  }();
  return values;
}

inline InferRequest identity_request() {
  return std::move(
      InferRequest("identity_fp32").input("INPUT0", Tensor::view(ramp(), {1, kFloats})));
}

inline void check_identity(const InferResult& result) {
  auto out = result.output("OUTPUT0").as<float>();
  REQUIRE(out.size() == ramp().size());
  CHECK(std::equal(out.begin(), out.end(), ramp().begin()));
}

}  // namespace compression_detail

/// Requests sonic's client compresses reach the server at `server_port` compressed and are
/// answered right; answers come compressed exactly when `server_compresses` (it was told to
/// compress ModelInfer answers) and read right either way.
inline void check_compression(std::uint16_t server_port, bool server_compresses) {
  using namespace compression_detail;
  constexpr std::size_t kMiB = 1 << 20;
  FaultProxy proxy(server_port);
  auto answer_bytes_ok = [&](std::size_t to_client) {
    if (server_compresses) {
      CHECK(to_client < kMiB / 4);
    } else {
      CHECK(to_client > kMiB);
    }
  };

  for (Compression how : {Compression::Gzip, Compression::Deflate}) {
    CAPTURE(static_cast<int>(how));
    ClientOptions options;
    options.compression.grpc = how;
    Client client(proxy.url(), options);
    const std::size_t to_server = proxy.bytes_to_server(), to_client = proxy.bytes_to_client();
    check_identity(client.infer(identity_request()));
    CHECK(proxy.bytes_to_server() - to_server < kMiB / 4);
    answer_bytes_ok(proxy.bytes_to_client() - to_client);
  }

  // Per request, on a client that does not compress.
  Client plain(proxy.url());
  std::size_t to_server = proxy.bytes_to_server();
  check_identity(plain.infer(identity_request().compression(Compression::Gzip)));
  CHECK(proxy.bytes_to_server() - to_server < kMiB / 4);
  to_server = proxy.bytes_to_server();
  check_identity(plain.infer(identity_request()));
  CHECK(proxy.bytes_to_server() - to_server > kMiB);

  // A stream's requests.
  ClientOptions gzip;
  gzip.compression.grpc = Compression::Gzip;
  Client streaming(proxy.url(), gzip);
  std::vector<Result<InferResult>> results;
  std::mutex mutex;
  auto stream = streaming.open_stream([&](StreamResponse response) {
    std::lock_guard<std::mutex> lock(mutex);
    results.push_back(std::move(response.result));
  });
  to_server = proxy.bytes_to_server();
  for (int i = 0; i < 4; ++i) REQUIRE(stream.send(identity_request()).ok());
  stream.close();
  REQUIRE(stream.wait().ok());
  CHECK(proxy.bytes_to_server() - to_server < kMiB);  // 4 MiB before compression
  std::lock_guard<std::mutex> lock(mutex);
  REQUIRE(results.size() == 4);
  for (auto& result : results) {
    REQUIRE(result.ok());
    check_identity(*result);
  }
}

}  // namespace sonic::test
