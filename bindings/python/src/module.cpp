// sonic Python bindings — the extension module sonic._sonic. The package sonic (pure Python)
// wraps it: sonic.Client subclasses _sonic.Client, and the exception classes live there.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <cstdint>

#include "client.hpp"
#include "control.hpp"
#include "messages.hpp"
#include "options.hpp"
#include "sonic/version.hpp"

namespace py = pybind11;
using namespace sonic::python;

namespace {

/// Binds a method taking one request's arguments, with the keywords of Client.infer, and
/// keywords `extra_args` of types `Extra` after them, which `method` takes after the arguments.
template <typename... Extra, typename Class, typename Method, typename... ExtraArgs>
void def_request_method(Class& cls, const char* name, Method method, const char* doc,
                        ExtraArgs... extra_args) {
  cls.def(
      name,
      [method](typename Class::type& self, std::string model, py::handle inputs, py::handle outputs,
               py::handle timeout, std::string version, std::string request_id,
               py::handle parameters, py::handle headers, Extra... extra) {
        RequestArguments arguments{
            std::move(model),      inputs,     outputs, timeout, std::move(version),
            std::move(request_id), parameters, headers};
        return method(self, arguments, extra...);
      },
      py::arg("model"), py::arg("inputs"), py::arg("outputs") = py::none(),
      py::arg("timeout") = py::none(), py::kw_only(), py::arg("version") = "",
      py::arg("request_id") = "", py::arg("parameters") = py::none(),
      py::arg("headers") = py::none(), extra_args..., doc);
}

}  // namespace

PYBIND11_MODULE(_sonic, module) {
  module.doc() = "sonic's C++ client, for the sonic package";
  module.attr("__version__") = sonic::kVersion;

  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const sonic::Error& error) {
      raise_error(error);
    }
  });

  py::class_<sonic::RequestHandle>(module, "RequestHandle")
      .def("cancel", &sonic::RequestHandle::cancel,
           "Cancels the request if still under way (on the wire too); true if this call did.");

  py::class_<PyStream> stream(module, "Stream");
  def_request_method(
      stream, "send", [](PyStream& self, const RequestArguments& a) { self.send(a); },
      "Sends a request on the stream (its inputs are copied: the arrays are free at once).");
  stream.def("close", &PyStream::close, "No more requests; the stream ends once all are answered.")
      .def("cancel", &PyStream::cancel, "Ends the stream now; undelivered responses are dropped.")
      .def("wait", &PyStream::wait,
           "Blocks until the stream ended; raises why unless it ended well.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyStream& self, py::handle type, py::handle, py::handle) {
        if (!type.is_none()) {
          self.cancel();
          return false;
        }
        self.close();
        self.wait();
        return false;
      });

  py::class_<PyClient> client(module, "Client");
  client.def(py::init<py::handle, const py::kwargs&>(), py::arg("urls"))
      .def("close", &PyClient::close,
           "Completes requests in flight with CANCELLED and closes the client.")
      .def(
          "open_stream",
          [](PyClient& self, py::object callback, py::handle timeout) {
            return std::make_unique<PyStream>(self.client(), std::move(callback), timeout);
          },
          py::arg("callback"), py::arg("timeout") = py::none())
      .def("_stats_json", [](PyClient& self) { return self.client().stats().to_json(); });
  def_request_method(
      client, "infer", [](PyClient& self, const RequestArguments& a) { return self.infer(a); },
      "Sends a request and waits for its result (the GIL is released meanwhile).");
  def_request_method<std::int64_t, std::size_t, std::size_t>(
      client, "infer_chunked",
      [](PyClient& self, const RequestArguments& a, std::int64_t rows, std::size_t chunk_bytes,
         std::size_t max_in_flight) {
        if (rows < 0 || max_in_flight < 1 || chunk_bytes < 1) {
          throw sonic::Error(sonic::StatusCode::InvalidArgument,
                             "infer_chunked: rows must be 0 or more, target_chunk_bytes and "
                             "max_in_flight 1 or more");
        }
        sonic::ChunkOptions chunks;
        chunks.rows = rows;
        chunks.target_chunk_bytes = chunk_bytes;
        chunks.max_in_flight = max_in_flight;
        return self.infer_chunked(a, chunks);
      },
      "Sends a request with a large batch as chunks of `rows` rows (0: about "
      "`target_chunk_bytes` of inputs each, at most the model's max_batch_size), "
      "`max_in_flight` at once, and joins their outputs in order: one result, as if the model "
      "had taken the whole batch, or the first error. The inputs are borrowed, not copied.",
      py::arg("rows") = 0, py::arg("target_chunk_bytes") = sonic::ChunkOptions{}.target_chunk_bytes,
      py::arg("max_in_flight") = sonic::ChunkOptions{}.max_in_flight);
  def_request_method(
      client, "infer_async",
      [](PyClient& self, const RequestArguments& a) { return self.infer_async(a); },
      "Sends a request; returns a concurrent.futures.Future of its result.");
  def_request_method(
      client, "_ainfer_start",
      [](PyClient& self, const RequestArguments& a) { return self.ainfer_start(a); },
      "For ainfer(), in a coroutine: sends a request; returns (an asyncio future of the "
      "running loop, the RequestHandle).");
  bind_control_calls(client);

  bind_messages(module);

  module.def("client_option_names", &client_option_names,
             "The keyword arguments sonic.Client accepts.");
  module.def(
      "_input_addresses",
      [](py::handle inputs) {
        // For tests of the zero-copy promise: where each input's bytes would be sent from.
        KeepAlive keep_alive;
        RequestArguments arguments{"", inputs, py::none(), py::none(),
                                   "", "",     py::none(), py::none()};
        py::dict addresses;
        sonic::InferRequest request = build_request(arguments, keep_alive);
        for (const auto& input : request.inputs()) {
          addresses[py::str(input.name)] = reinterpret_cast<std::uintptr_t>(input.tensor.data());
        }
        return addresses;
      },
      py::arg("inputs"));
}
