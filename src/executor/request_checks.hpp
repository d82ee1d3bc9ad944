// sonic — the checks before anything runs: that a model has the functions its scheduling
// needs, and that a request fits its model (inputs, datatypes, shapes, batch size, outputs).
#pragma once

#include <cstdint>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/metadata.hpp"
#include "sonic/model.hpp"
#include "sonic/request.hpp"

namespace sonic::detail {

/// A model the executor can run: exactly one function (compute or decoupled), and
/// sequence_batching only with compute and without dynamic_batching. INVALID_ARGUMENT
/// otherwise, naming the model.
SONIC_EXPORT Result<void> check_functions(const Model& model);

/// Checks a request against its model before it runs: every input known, of the right
/// datatype and shape, and every output asked for known (validate_request() against
/// `metadata`, the model's own, made once by the caller so that no request builds it); a
/// valid classification count on each output; every required input present. INVALID_ARGUMENT
/// in Triton's words otherwise. Allocates nothing for a valid request.
SONIC_EXPORT Result<void> check_against_model(const Model& model, const ModelMetadata& metadata,
                                              const InferRequest& request);

/// A request of `batch` elements (its inputs' shared first dimension) for a model that merges
/// requests: at most the model's max_batch_size, else INVALID_ARGUMENT in Triton's words.
SONIC_EXPORT Result<void> check_batch_size(const Model& model, std::int64_t batch);

}  // namespace sonic::detail
