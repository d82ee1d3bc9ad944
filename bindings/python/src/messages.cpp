// sonic Python bindings — KServe's protobuf messages for sonic.tritonclient.
#include "messages.hpp"

#include <string>

#include "protocol/proto_json.hpp"
#include "protocol/proto_schema.hpp"

namespace sonic::python {

void bind_messages(py::module_& module) {
  module.def(
      "_kserve_descriptors",
      [] {
        const std::string_view set = protocol::schema::descriptor_set();
        return py::bytes(set.data(), set.size());
      },
      "The FileDescriptorSet of grpc_service.proto and model_config.proto: the fields of every "
      "message sonic.tritonclient answers with.");
  module.def(
      "_message_to_json",
      [](const std::string& message_type, const py::bytes& message) {
        std::string bytes = message;
        return protocol::message_to_json(message_type, bytes).value();
      },
      py::arg("message_type"), py::arg("message"),
      "The serialized message of `message_type` (\"inference.ModelConfigResponse\") as JSON, as "
      "protobuf's MessageToJson(preserving_proto_field_name=True) prints it.");
  module.def(
      "_message_from_json",
      [](const std::string& message_type, const std::string& json) {
        return py::bytes(protocol::message_from_json(message_type, json).value());
      },
      py::arg("message_type"), py::arg("json"),
      "The message of `message_type` that `json` writes in protobuf's JSON mapping, "
      "serialized.");
}

}  // namespace sonic::python
