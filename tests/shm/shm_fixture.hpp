// Test fixture: a sonic::grpc::Server on 127.0.0.1 hosting an identity model per datatype, and
// grpc+shm:// URLs to it, directly or through a byte-counting FaultProxy.
#pragma once

#include <sonic/grpc/server.hpp>
#include <sonic/sonic.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace sonic::test {

inline std::string identity_name(DataType type) {
  return std::string("identity_") + std::string(to_string(type));
}

inline std::shared_ptr<CpuExecutor> identity_executor() {
  auto executor = CpuExecutor::with_models(models::builtin(), 4);
  for (DataType type : kAllDataTypes)
    executor->add_model(models::identity(identity_name(type), type));
  return executor;
}

class ShmServer {
 public:
  explicit ShmServer(std::uint16_t port = 0, bool shared_memory = true)
      : server_(identity_executor(), options(port, shared_memory)) {
    server_.start();
  }
  std::uint16_t port() const { return server_.port(); }
  std::string shm_url() const { return "grpc+shm://127.0.0.1:" + std::to_string(port()); }
  std::string grpc_url() const { return "grpc://127.0.0.1:" + std::to_string(port()); }
  grpc::Server& server() { return server_; }

 private:
  static grpc::ServerOptions options(std::uint16_t port, bool shared_memory) {
    grpc::ServerOptions o;
    o.host = "127.0.0.1";
    o.port = port;
    o.shared_memory = shared_memory;
    return o;
  }
  grpc::Server server_;
};

/// `n` elements of `type` with distinct values (strings for BYTES), seeded by `seed`.
inline Tensor sample(DataType type, std::size_t n, unsigned seed) {
  if (type == DataType::Bytes) {
    std::vector<std::string> strings;
    for (std::size_t i = 0; i < n; ++i) strings.push_back("s" + std::to_string(seed * 1000 + i));
    return Tensor::from_strings(strings, {1, static_cast<std::int64_t>(n)});
  }
  std::vector<std::uint8_t> bytes(n * element_size(type));
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::uint8_t>((i * 131 + seed * 17) & 0xff);
  }
  if (type == DataType::Bool) {
    for (auto& b : bytes) b &= 1;
  }
  return Tensor::copy_bytes(type, {1, static_cast<std::int64_t>(n)}, bytes.data(), bytes.size());
}

inline bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.byte_size() == b.byte_size() &&
         std::equal(a.data(), a.data() + a.byte_size(), b.data());
}

}  // namespace sonic::test
