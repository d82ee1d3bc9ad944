// The DataType enum of proto/model_config.proto (Triton's TYPE_BOOL ... TYPE_BF16) and sonic's
// DataType: the numbers a ModelConfig carries.
#pragma once

#include <cstdint>
#include <optional>

#include "sonic/tensor.hpp"

namespace sonic::protocol {

/// The ModelConfig number of a type (TYPE_STRING for BYTES, as Triton names it).
inline std::uint64_t config_data_type(DataType type) {
  switch (type) {
    case DataType::Bool: return 1;
    case DataType::UInt8: return 2;
    case DataType::UInt16: return 3;
    case DataType::UInt32: return 4;
    case DataType::UInt64: return 5;
    case DataType::Int8: return 6;
    case DataType::Int16: return 7;
    case DataType::Int32: return 8;
    case DataType::Int64: return 9;
    case DataType::Fp16: return 10;
    case DataType::Fp32: return 11;
    case DataType::Fp64: return 12;
    case DataType::Bytes: return 13;
    case DataType::Bf16: return 14;
  }
  return 0;
}

/// The type of a ModelConfig number; none for TYPE_INVALID (0) and numbers past TYPE_BF16.
inline std::optional<DataType> data_type_of_config(std::uint64_t number) {
  static constexpr DataType kTypes[] = {
      DataType::Bool, DataType::UInt8, DataType::UInt16, DataType::UInt32, DataType::UInt64,
      DataType::Int8, DataType::Int16, DataType::Int32,  DataType::Int64,  DataType::Fp16,
      DataType::Fp32, DataType::Fp64,  DataType::Bytes,  DataType::Bf16};
  if (number < 1 || number > 14) return std::nullopt;
  return kTypes[number - 1];
}

}  // namespace sonic::protocol
