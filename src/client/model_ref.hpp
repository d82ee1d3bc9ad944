// sonic — the model a request names, for the client's maps and routing.
#pragma once

#include "sonic/metadata.hpp"
#include "sonic/request.hpp"

namespace sonic::detail {

/// The model `request` names: the key of the metadata cache, of an endpoint's models known to
/// be missing, and of routing.
inline ModelRef model_ref_of(const InferRequest& request) {
  return {request.model_name(), request.model_version()};
}

}  // namespace sonic::detail
