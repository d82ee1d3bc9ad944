// sonic Python bindings — requests from Python arguments, results and errors to Python objects.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "arrays.hpp"
#include "sonic/request.hpp"

namespace sonic::python {

namespace py = pybind11;

/// The Python arguments of one inference call, as infer(), infer_async() and Stream.send()
/// take them.
struct RequestArguments {
  std::string model;
  py::handle inputs;   ///< {name: array}, or a sequence of sonic.InferInput
  py::handle outputs;  ///< None (all), or names and sonic.InferRequestedOutput
  py::handle timeout;  ///< seconds, or None for the client's default
  std::string version;
  std::string request_id;
  py::handle parameters;  ///< {name: bool | int | float | str}, or None
  py::handle headers;     ///< {name: str}, or None
};

/// An attribute of the pure-Python half of the package ("sonic._types", "InferFuture"). Each
/// call imports: callers keep the result in a function-local static (made with the GIL held),
/// which lives as long as the process, since results may be built until its last moment.
py::object& package_attribute(const char* module, const char* name);

/// The request `arguments` describe; its borrowed inputs point into the arrays appended to
/// `keep_alive`. Throws sonic::Error(INVALID_ARGUMENT) or TypeError for a value it cannot send.
InferRequest build_request(const RequestArguments& arguments, KeepAlive& keep_alive);

/// A KServe parameter value from Python: bool, int (int64, or uint64 above its range), float,
/// str or bytes.
Parameter parameter_of(const std::string& name, py::handle value);

/// A result as sonic.InferResult: a dict of output arrays with the response's attributes.
py::object result_object(const InferResult& result);

/// A sonic.Error subclass instance for `error` (sonic.Unavailable for UNAVAILABLE, ...).
py::object error_object(const Error& error);

/// Raises `error` as its sonic.Error subclass (for pybind11's exception translator).
void raise_error(const Error& error);

/// Takes the GIL on any thread, sonic's own included. A thread Python does not know gets a
/// Python thread state the first time, kept for the thread's life: making one per callback
/// would cost an mmap and a munmap (a TLB shootdown on every core) per request.
class Gil {
 public:
  Gil() : adopt_(first_time_on_a_thread_python_does_not_know()) {
    if (adopt_) gil_.inc_ref();
  }

 private:
  // Before gil_ is made, which would give the thread a state.
  static bool first_time_on_a_thread_python_does_not_know() {
    static thread_local bool seen = false;
    bool first = !seen && PyGILState_GetThisThreadState() == nullptr;
    seen = true;
    return first;
  }

  bool adopt_;
  py::gil_scoped_acquire gil_;
};

/// Holds a Python object for a C++ callback that may be destroyed on a thread without the GIL.
class Held {
 public:
  explicit Held(py::object object) : object_(std::move(object)) {}
  ~Held() {
    if (!object_ || !Py_IsInitialized()) {
      object_.release();  // the interpreter is gone: nothing left to free it in
      return;
    }
    Gil gil;
    object_ = py::object();
  }
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;

  /// The object; only with the GIL held.
  py::object& get() { return object_; }

 private:
  py::object object_;
};

}  // namespace sonic::python
