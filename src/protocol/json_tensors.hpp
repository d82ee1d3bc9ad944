// KServe v2 REST's JSON forms of tensors and parameters (the HTTP/REST protocol's "data" and
// "parameters"), read and written with nlohmann/json: one reading for sonic-server's HTTP port
// and the http:// client transport. Only those two include it; they link nlohmann/json.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/request.hpp"
#include "sonic/tensor.hpp"

namespace sonic::protocol {

/// A JSON parameter as a KServe parameter: a boolean, an integer (int64, or uint64 past its
/// range), a double or a string. INVALID_ARGUMENT, in Triton's words, for anything else.
SONIC_EXPORT Result<Parameter> parameter_from_json(const std::string& name,
                                                   const nlohmann::json& value);

/// A JSON object's members as parameters; none for null. INVALID_ARGUMENT for a value that is
/// not a parameter, or for anything but an object.
SONIC_EXPORT Result<Parameters> parameters_from_json(const nlohmann::json& object);

/// Parameters as a JSON object.
SONIC_EXPORT nlohmann::json parameters_to_json(const Parameters& parameters);

/// The tensor of `type` and `shape` whose elements `data` lists, flat or nested in row-major
/// order (nesting is walked without recursion: its depth is the peer's choice). INVALID_ARGUMENT
/// naming `name` when the count or an element's kind does not fit, and for FP16 and BF16,
/// which JSON does not carry (Triton's rule).
SONIC_EXPORT Result<Tensor> tensor_from_json(const std::string& name, DataType type,
                                             const Shape& shape, const nlohmann::json& data);

/// The tensor's elements as a flat JSON array, in row-major order. INVALID_ARGUMENT for FP16
/// and BF16.
SONIC_EXPORT Result<nlohmann::json> tensor_to_json(const Tensor& tensor);

}  // namespace sonic::protocol
