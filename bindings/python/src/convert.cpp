// sonic Python bindings — requests from Python arguments, results and errors to Python objects.
#include "convert.hpp"

#include <pybind11/stl.h>

#include <limits>
#include <optional>

#include "options.hpp"

namespace sonic::python {

py::object& package_attribute(const char* module, const char* name) {
  auto* found = new py::object(py::module_::import(module).attr(name));
  return *found;
}

namespace {

py::object& infer_result_type() {
  static py::object& type = package_attribute("sonic._types", "InferResult");
  return type;
}

std::optional<Shape> shape_from_python(py::handle shape) {
  if (shape.is_none()) return std::nullopt;
  Shape dims;
  for (py::handle dim : shape) dims.push_back(dim.cast<std::int64_t>());
  return dims;
}

/// The KServe parameters of a tensor from an object's `_parameters` ({name: value}), if it has
/// such a dict.
Parameters tensor_parameters(py::handle tensor) {
  Parameters parameters;
  py::object given = py::getattr(tensor, "_parameters", py::none());
  if (given.is_none()) return parameters;
  for (auto item : given.cast<py::dict>()) {
    auto name = item.first.cast<std::string>();
    parameters[name] = parameter_of(name, item.second);
  }
  return parameters;
}

/// One input given as a sonic.InferInput (tritonclient's spelling): name(), datatype(),
/// shape(), the array set_data_from_numpy() stored and, if the object has them, the tensor's
/// parameters (`_parameters`). An input without data whose parameters name a
/// shared_memory_region (tritonclient's set_shared_memory()) travels as a descriptor: its bytes
/// are in a region the server reads.
void add_declared_input(InferRequest& request, py::handle input, KeepAlive& keep_alive) {
  auto name = input.attr("name")().cast<std::string>();
  auto datatype_name = input.attr("datatype")().cast<std::string>();
  auto datatype = parse_datatype(datatype_name);
  if (!datatype) {
    throw Error(StatusCode::InvalidArgument,
                "input '" + name + "': '" + datatype_name + "' is not a KServe datatype");
  }
  Parameters parameters = tensor_parameters(input);
  std::optional<Shape> shape = shape_from_python(input.attr("shape")());
  py::object data = input.attr("_data");
  if (data.is_none()) {
    if (parameters.count("shared_memory_region") == 0) {
      throw Error(StatusCode::InvalidArgument,
                  "input '" + name + "' has no data: call set_data_from_numpy() first");
    }
    request.input(name, Tensor::descriptor(*datatype, shape.value_or(Shape{})),
                  std::move(parameters));
    return;
  }
  request.input(name, input_tensor(name, data, datatype, shape, keep_alive), std::move(parameters));
}

void add_inputs(InferRequest& request, py::handle inputs, KeepAlive& keep_alive) {
  if (py::isinstance<py::dict>(inputs)) {
    for (auto item : py::reinterpret_borrow<py::dict>(inputs)) {
      auto name = item.first.cast<std::string>();
      request.input(name, input_tensor(name, item.second, std::nullopt, std::nullopt, keep_alive));
    }
    return;
  }
  if (py::isinstance<py::str>(inputs) || !py::isinstance<py::iterable>(inputs)) {
    throw py::type_error("inputs must be a dict {name: numpy array} or a list of sonic.InferInput");
  }
  for (py::handle input : inputs) add_declared_input(request, input, keep_alive);
}

void add_outputs(InferRequest& request, py::handle outputs) {
  if (outputs.is_none()) return;
  if (py::isinstance<py::str>(outputs)) {
    throw py::type_error("outputs must be a list of names, not one string");
  }
  for (py::handle output : outputs) {
    if (py::isinstance<py::str>(output)) {
      request.output(output.cast<std::string>());
      continue;
    }
    // sonic.InferRequestedOutput: name(), and its parameters.
    request.output(output.attr("name")().cast<std::string>(), tensor_parameters(output));
  }
}

py::object python_value(const Parameter& value) {
  return std::visit([](const auto& v) -> py::object { return py::cast(v); }, value);
}

}  // namespace

Parameter parameter_of(const std::string& name, py::handle value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) {
    int overflow = 0;
    long long number = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0) return static_cast<std::int64_t>(number);
    if (overflow > 0) return value.cast<std::uint64_t>();  // OverflowError past 2**64 - 1
    throw Error(StatusCode::InvalidArgument, "parameter '" + name + "' is below int64's range");
  }
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value)) {
    return value.cast<std::string>();
  }
  throw py::type_error("parameter '" + name + "' must be bool, int, float or str, not " +
                       std::string(Py_TYPE(value.ptr())->tp_name));
}

InferRequest build_request(const RequestArguments& arguments, KeepAlive& keep_alive) {
  InferRequest request(arguments.model, arguments.version);
  add_inputs(request, arguments.inputs, keep_alive);
  add_outputs(request, arguments.outputs);
  if (!arguments.request_id.empty()) request.id(arguments.request_id);
  if (!arguments.timeout.is_none()) {
    request.timeout(microseconds_from_seconds(arguments.timeout, "timeout"));
  }
  if (!arguments.parameters.is_none()) {
    for (auto item : py::reinterpret_borrow<py::dict>(arguments.parameters)) {
      auto name = item.first.cast<std::string>();
      request.parameter(name, parameter_of(name, item.second));
    }
  }
  if (!arguments.headers.is_none()) {
    for (auto item : py::reinterpret_borrow<py::dict>(arguments.headers)) {
      request.header(item.first.cast<std::string>(), item.second.cast<std::string>());
    }
  }
  return request;
}

namespace {

/// Whether the server wrote an output into a shared memory region the request named: the
/// response carries its datatype and shape, and no bytes.
bool in_shared_memory(const NamedTensor& output) {
  return output.tensor.byte_size() == 0 && output.parameters.count("shared_memory_region") != 0;
}

/// Every output as (name, datatype, shape, parameters), in the response's order: what the
/// arrays alone cannot tell (BF16 travels as uint16, parameters, outputs in shared memory).
py::tuple output_descriptions(const InferResult& result) {
  py::tuple all(result.outputs().size());
  std::size_t i = 0;
  for (const auto& output : result.outputs()) {
    py::dict parameters;
    for (const auto& [name, value] : output.parameters) {
      parameters[py::str(name)] = python_value(value);
    }
    all[i++] = py::make_tuple(output.name, to_string(output.tensor.dtype()),
                              py::cast(output.tensor.shape()), std::move(parameters));
  }
  return all;
}

}  // namespace

py::object result_object(const InferResult& result) {
  py::object object = infer_result_type()();
  auto* outputs = object.ptr();
  bool plain = true;  // every output an array of its own datatype, without parameters
  for (const auto& output : result.outputs()) {
    plain = plain && output.parameters.empty() && output.tensor.dtype() != DataType::Bf16;
    if (in_shared_memory(output)) continue;  // no array: its bytes are in the region
    py::str name(output.name);
    if (PyDict_SetItem(outputs, name.ptr(), output_array(output.tensor).ptr()) != 0) {
      throw py::error_already_set();
    }
  }
  // One attribute, read by InferResult's properties: setting each by name costs more than
  // a request's Python side otherwise does.
  py::dict parameters;
  for (const auto& [name, value] : result.parameters())
    parameters[py::str(name)] = python_value(value);
  const InferTiming& t = result.timing();
  static auto* meta = new py::str("_meta");
  object.attr(*meta) = py::make_tuple(
      result.model_name(), result.model_version(), result.request_id(), std::move(parameters),
      result.executed_on() == ExecutedOn::Local ? "local" : "remote",
      py::make_tuple(t.serialize.count(), t.queue.count(), t.send.count(), t.wait.count(),
                     t.receive.count(), t.deserialize.count(), t.server_queue.count(),
                     t.server_compute.count(), t.total.count()),
      // The common answer needs no descriptions: the arrays say it all (None, at no cost).
      plain ? py::object(py::none()) : py::object(output_descriptions(result)));
  return object;
}

py::object error_object(const Error& error) {
  static py::object& make = package_attribute("sonic._errors", "error_for_code");
  return make(static_cast<int>(error.code()), error.message(), error.reason());
}

void raise_error(const Error& error) {
  py::object instance = error_object(error);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(instance.ptr())), instance.ptr());
}

}  // namespace sonic::python
