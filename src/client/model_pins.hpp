// Versions pinned per model (ClientOptions::routing.pins): what a request is sent with, and
// whether an answer came from the pinned version.
#pragma once

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/request.hpp"
#include "sonic/routing.hpp"

namespace sonic::detail {

/// Gives a request that names no version its model's pinned one; refuses (FAILED_PRECONDITION)
/// one that names another.
SONIC_EXPORT Result<void> apply_pin(const Routing& routing, InferRequest& request);

/// An answer from another version than the pinned one (a server that ignored the version it
/// was asked for) is not the model the job expects: FAILED_PRECONDITION.
SONIC_EXPORT Result<void> check_pin(const Routing& routing, const InferRequest& request,
                                    const InferResult& result);

}  // namespace sonic::detail
