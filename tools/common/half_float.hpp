// 16-bit floats on a command line: C++17 has no 16-bit float types, so sonic-infer and
// sonic-perf convert FP16 and BF16 values to and from float here.
#pragma once

#include <sonic/tensor.hpp>

#include <cstdint>
#include <cstring>

namespace sonic::tools {

/// The float a binary16 bit pattern stands for (exact).
inline float half_to_float(std::uint16_t half) {
  std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
  std::uint32_t exponent = (half >> 10) & 0x1fu;
  std::uint32_t mantissa = half & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // infinity or NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal: shift the mantissa up until its leading 1 becomes the implicit bit.
    std::uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// The binary16 nearest to a float (ties to even); overflow gives infinity, NaN stays NaN.
inline std::uint16_t float_to_half(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  std::uint32_t exponent = (bits >> 23) & 0xffu;
  std::uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xff) {
    return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
  }
  int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 0x1f) return static_cast<std::uint16_t>(sign | 0x7c00u);  // too large: infinity
  if (e <= 0) {
    if (e < -10) return sign;  // below half the smallest subnormal: zero
    // Subnormal: the implicit bit joins the mantissa, which is shifted right with rounding.
    mantissa |= 0x800000u;
    auto shift = static_cast<std::uint32_t>(14 - e);
    std::uint32_t half_mantissa = mantissa >> shift;
    std::uint32_t rest = mantissa & ((1u << shift) - 1);
    std::uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half_mantissa & 1u))) ++half_mantissa;
    return static_cast<std::uint16_t>(sign | half_mantissa);
  }
  std::uint32_t half_bits = (static_cast<std::uint32_t>(e) << 10) | (mantissa >> 13);
  std::uint32_t rest = mantissa & 0x1fffu;
  // Rounding may carry into the exponent, up to infinity, which is the right answer.
  if (rest > 0x1000u || (rest == 0x1000u && (half_bits & 1u))) ++half_bits;
  return static_cast<std::uint16_t>(sign | half_bits);
}

/// The bfloat16 nearest to a float (ties to even); NaN stays NaN.
inline std::uint16_t float_to_bf16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

/// The float a bfloat16 bit pattern stands for (exact).
inline float bf16_to_float(std::uint16_t bf16) { return sonic::BFloat16{bf16}.to_float(); }

}  // namespace sonic::tools
