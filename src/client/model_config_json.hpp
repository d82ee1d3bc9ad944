// sonic — what the client reads of a model's configuration as a server answers it (Triton's
// ModelConfig in protobuf's JSON mapping): its max_batch_size, for merged batches and chunks.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "sonic/detail/export.hpp"

namespace sonic::detail {

/// The top-level `max_batch_size` (or `maxBatchSize`) of a ModelConfig as JSON: 0 when absent,
/// as proto3 leaves out a zero; none when the text is not a JSON object or the value is not an
/// int32 of at least 0 (a number, or a string of digits as proto3's JSON allows). The same
/// words in a name, a parameter or a nested message are not it. Linear in the text; nesting
/// deeper than 64 levels is unreadable.
std::optional<std::int64_t> config_max_batch_size(std::string_view json);

}  // namespace sonic::detail
