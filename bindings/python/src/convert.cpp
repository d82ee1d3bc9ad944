// sonic Python bindings — requests from Python arguments, results and errors to Python objects.
#include "convert.hpp"

#include <limits>

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

std::optional<Shape> shape_of(py::handle shape) {
  if (shape.is_none()) return std::nullopt;
  Shape dims;
  for (py::handle dim : shape) dims.push_back(dim.cast<std::int64_t>());
  return dims;
}

/// One input given as a sonic.InferInput (tritonclient's spelling): name(), datatype(),
/// shape() and the array set_data_from_numpy() stored.
void add_declared_input(InferRequest& request, py::handle input, KeepAlive& keep_alive) {
  auto name = input.attr("name")().cast<std::string>();
  auto datatype_name = input.attr("datatype")().cast<std::string>();
  auto datatype = parse_datatype(datatype_name);
  if (!datatype) {
    throw Error(StatusCode::InvalidArgument,
                "input '" + name + "': '" + datatype_name + "' is not a KServe datatype");
  }
  py::object data = input.attr("_data");
  if (data.is_none()) {
    throw Error(StatusCode::InvalidArgument,
                "input '" + name + "' has no data: call set_data_from_numpy() first");
  }
  request.input(name,
                input_tensor(name, data, datatype, shape_of(input.attr("shape")()), keep_alive));
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
    Parameters parameters;  // sonic.InferRequestedOutput: name(), and its parameters
    py::object given = py::getattr(output, "_parameters", py::none());
    if (!given.is_none()) {
      for (auto item : given.cast<py::dict>()) {
        auto name = item.first.cast<std::string>();
        parameters[name] = parameter_of(name, item.second);
      }
    }
    request.output(output.attr("name")().cast<std::string>(), std::move(parameters));
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

py::object result_object(const InferResult& result) {
  py::object object = infer_result_type()();
  auto* outputs = object.ptr();
  for (const auto& output : result.outputs()) {
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
                     t.server_compute.count(), t.total.count()));
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
