// sonic Python bindings — the control calls.
#include "control.hpp"

#include <pybind11/stl.h>

namespace sonic::python {

namespace {

/// Runs a blocking control call of the client without the GIL.
template <typename Call>
auto without_gil(PyClient& self, Call call) {
  Client& client = self.client();
  py::gil_scoped_release nogil;
  return call(client);
}

py::list tensors(const std::vector<TensorMetadata>& all) {
  py::list list;
  for (const auto& t : all) {
    list.append(py::dict(py::arg("name") = t.name, py::arg("datatype") = to_string(t.dtype),
                         py::arg("shape") = t.shape));
  }
  return list;
}

py::dict duration(const Duration& d) {
  return py::dict(py::arg("count") = d.count, py::arg("ns") = d.ns);
}

/// A model's statistics with the field names of Triton's JSON (ModelStatistics in protobuf's
/// JSON mapping, numbers as numbers).
py::dict statistics(const ModelStatistics& s) {
  py::list batches;
  for (const auto& b : s.batch_stats) {
    batches.append(py::dict(py::arg("batch_size") = b.batch_size,
                            py::arg("compute_input") = duration(b.compute_input),
                            py::arg("compute_infer") = duration(b.compute_infer),
                            py::arg("compute_output") = duration(b.compute_output)));
  }
  py::dict inference(py::arg("success") = duration(s.success), py::arg("fail") = duration(s.fail),
                     py::arg("queue") = duration(s.queue),
                     py::arg("compute_input") = duration(s.compute_input),
                     py::arg("compute_infer") = duration(s.compute_infer),
                     py::arg("compute_output") = duration(s.compute_output));
  return py::dict(py::arg("name") = s.name, py::arg("version") = s.version,
                  py::arg("last_inference") = s.last_inference_ms,
                  py::arg("inference_count") = s.inference_count,
                  py::arg("execution_count") = s.execution_count,
                  py::arg("inference_stats") = std::move(inference),
                  py::arg("batch_stats") = std::move(batches));
}

}  // namespace

void bind_control_calls(py::class_<PyClient>& client) {
  client
      .def("server_live",
           [](PyClient& self) {
             return without_gil(self, [](Client& c) { return c.server_live(); });
           })
      .def("server_ready",
           [](PyClient& self) {
             return without_gil(self, [](Client& c) { return c.server_ready(); });
           })
      .def(
          "model_ready",
          [](PyClient& self, const std::string& model, const std::string& version) {
            return without_gil(self, [&](Client& c) { return c.model_ready(model, version); });
          },
          py::arg("model"), py::arg("version") = "")
      .def("server_metadata",
           [](PyClient& self) {
             ServerMetadata m = without_gil(self, [](Client& c) { return c.server_metadata(); });
             return py::dict(py::arg("name") = m.name, py::arg("version") = m.version,
                             py::arg("extensions") = m.extensions);
           })
      .def(
          "model_metadata",
          [](PyClient& self, const std::string& model, const std::string& version) {
            ModelMetadata m =
                without_gil(self, [&](Client& c) { return c.model_metadata(model, version); });
            return py::dict(py::arg("name") = m.name, py::arg("versions") = m.versions,
                            py::arg("platform") = m.platform, py::arg("inputs") = tensors(m.inputs),
                            py::arg("outputs") = tensors(m.outputs));
          },
          py::arg("model"), py::arg("version") = "")
      .def(
          "model_config",
          [](PyClient& self, const std::string& model, const std::string& version) {
            std::string json =
                without_gil(self, [&](Client& c) { return c.model_config(model, version); });
            return py::module_::import("json").attr("loads")(json);
          },
          py::arg("model"), py::arg("version") = "")
      .def(
          "model_config_checksum",
          [](PyClient& self, const std::string& model, const std::string& version) {
            std::string json =
                without_gil(self, [&](Client& c) { return c.model_config(model, version); });
            return model_config_checksum(json);
          },
          py::arg("model"), py::arg("version") = "",
          "The checksum of the model's configuration as the server reports it: what "
          "pins={model: {\"config_checksum\": ...}} expects.")
      .def(
          "model_statistics",
          [](PyClient& self, const std::string& model, const std::string& version) {
            auto all =
                without_gil(self, [&](Client& c) { return c.model_statistics(model, version); });
            py::list list;
            for (const auto& s : all) list.append(statistics(s));
            return list;
          },
          py::arg("model") = "", py::arg("version") = "")
      .def(
          "repository_index",
          [](PyClient& self, bool ready_only) {
            auto all = without_gil(self, [&](Client& c) { return c.repository_index(ready_only); });
            py::list list;
            for (const auto& m : all) {
              list.append(py::dict(py::arg("name") = m.name, py::arg("version") = m.version,
                                   py::arg("state") = std::string(model_state_name(m.state)),
                                   py::arg("reason") = m.reason));
            }
            return list;
          },
          py::arg("ready_only") = false)
      .def(
          "load_model",
          [](PyClient& self, const std::string& model, const std::string& config_json) {
            without_gil(self, [&](Client& c) {
              c.load_model(model, config_json);
              return true;
            });
          },
          py::arg("model"), py::arg("config") = "")
      .def(
          "call",
          [](PyClient& self, const std::string& method, const py::bytes& request) {
            std::string bytes = request;
            std::string answer =
                without_gil(self, [&](Client& c) { return c.call(method, bytes); });
            return py::bytes(answer);
          },
          py::arg("method"), py::arg("request"),
          "Any method of inference.GRPCInferenceService (\"SystemSharedMemoryStatus\", "
          "\"TraceSetting\", ...) with `request`, its serialized protobuf request; returns the "
          "serialized response (bytes). Raises sonic.Error as the other control calls do.")
      .def(
          "unload_model",
          [](PyClient& self, const std::string& model) {
            without_gil(self, [&](Client& c) {
              c.unload_model(model);
              return true;
            });
          },
          py::arg("model"));
}

}  // namespace sonic::python
