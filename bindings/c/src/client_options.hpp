// sonic C API — sonic_client_options as the C++ client's ClientOptions.
#pragma once

#include <cstddef>

#include "sonic.h"
#include "sonic/options.hpp"

namespace sonic::c_api {

/// The ClientOptions of a client of `urls` made with `given`: every string and array copied.
/// Throws sonic::Error (INVALID_ARGUMENT, naming the field) for a value sonic cannot take.
ClientOptions client_options_of(const char* const* urls, std::size_t url_count,
                                const sonic_client_options& given);

/// sonic_model_options' defaults, from BatchingOptions'.
void init_model_options(sonic_model_options& options);

}  // namespace sonic::c_api
