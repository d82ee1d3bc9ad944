// Test support: an identity model for every datatype, and tensors of distinct values to send
// through them. Header-only; needs sonic's public headers alone.
#pragma once

#include <sonic/builtin_models.hpp>
#include <sonic/executor.hpp>
#include <sonic/sonic.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace sonic::test {

using models::identity_name;

/// sonic-server's models, among them an identity of every datatype.
inline std::shared_ptr<CpuExecutor> identity_executor() {
  return CpuExecutor::with_models(models::builtin(), 4);
}

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
