// sonic Python bindings — KServe's protobuf messages for sonic.tritonclient: their schema (the
// descriptors of proto/, embedded at build time) and their JSON, as libprotobuf prints it.
#pragma once

#include <pybind11/pybind11.h>

namespace sonic::python {

namespace py = pybind11;

/// Adds _kserve_descriptors(), _message_to_json() and _message_from_json() to the module.
void bind_messages(py::module_& module);

}  // namespace sonic::python
