// sonic Python bindings — the control calls (health, metadata, configuration, statistics,
// repository), with answers shaped as KServe's and Triton's JSON so that a tritonclient user
// finds the keys they know.
#pragma once

#include <pybind11/pybind11.h>

#include "client.hpp"

namespace sonic::python {

/// Adds server_live, server_ready, model_ready, server_metadata, model_metadata, model_config,
/// model_statistics, repository_index, load_model, unload_model and call (any other method,
/// serialized protobuf in and out) to sonic.Client's C++ class. Each releases the GIL while it
/// waits.
void bind_control_calls(py::class_<PyClient>& client);

}  // namespace sonic::python
