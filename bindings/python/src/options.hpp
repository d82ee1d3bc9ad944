// sonic Python bindings — ClientOptions from the keyword arguments of sonic.Client.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "sonic/options.hpp"

namespace sonic::python {

namespace py = pybind11;

/// Options for `urls` from Client's keyword arguments (durations in seconds, as Python's
/// libraries and tritonclient take them). Completions run where ClientOptions' default says, on
/// the network thread, which hands them to the completion thread (completions.hpp) and so never
/// waits for the GIL. Throws TypeError for an unknown keyword and
/// sonic::Error(INVALID_ARGUMENT) for a value out of range.
ClientOptions client_options(std::vector<std::string> urls, const py::kwargs& options);

/// The keywords client_options understands, for help texts and error messages.
const std::vector<const char*>& client_option_names();

/// Microseconds from a duration in seconds; None is zero (no limit).
std::chrono::microseconds microseconds_from_seconds(py::handle seconds, const char* what);

}  // namespace sonic::python
