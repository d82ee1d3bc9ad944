#include "rest_control.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>

#include "protocol/control_calls.hpp"
#include "protocol/control_routes.hpp"
#include "protocol/names.hpp"
#include "protocol/overloaded.hpp"

namespace sonic::http {

namespace {

using nlohmann::json;
using M = ControlMethod;
using protocol::Overloaded;

// An answer that is not what the method answers.
Error malformed(std::string message) { return Error(StatusCode::Internal, std::move(message)); }

RestRequest rest(ControlMethod method, const protocol::RouteValues& values, json body = nullptr) {
  const bool post = protocol::spec_of(method).verb == protocol::RestVerb::Post;
  return {post ? "POST" : "GET",
          protocol::control_route_path(method, values),
          post ? (body.is_null() ? json::object() : body).dump() : std::string(),
          {},
          0};
}

protocol::RouteValues of_model(const ModelRef& model) {
  return {model.name, model.version, {}, {}};
}

// A JSON array of strings, or INTERNAL naming the field.
Result<std::vector<std::string>> strings(const json& answer, const char* field) {
  std::vector<std::string> out;
  auto found = answer.find(field);
  if (found == answer.end()) return out;
  if (!found->is_array()) return malformed(std::string("'") + field + "' is not a list");
  for (const auto& item : *found) {
    if (!item.is_string()) return malformed(std::string("'") + field + "' lists a non-string");
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::string text(const json& object, const char* field) {
  auto found = object.find(field);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

Result<ServerMetadata> server_metadata(const json& answer) {
  auto extensions = strings(answer, "extensions");
  if (!extensions) return extensions.error();
  return ServerMetadata{text(answer, "name"), text(answer, "version"), std::move(*extensions)};
}

Result<std::vector<TensorMetadata>> tensors(const json& answer, const char* field) {
  std::vector<TensorMetadata> out;
  auto found = answer.find(field);
  if (found == answer.end()) return out;
  if (!found->is_array()) return malformed(std::string("'") + field + "' is not a list");
  for (const auto& t : *found) {
    if (!t.is_object()) return malformed(std::string("'") + field + "' lists a non-object");
    const std::string datatype = text(t, "datatype");
    auto dtype = parse_datatype(datatype);
    if (!dtype)
      return malformed("unknown datatype '" + datatype + "' of tensor '" + text(t, "name") + "'");
    TensorMetadata tensor{text(t, "name"), *dtype, {}};
    auto shape = t.find("shape");
    if (shape == t.end() || !shape->is_array())
      return malformed("tensor '" + tensor.name + "' has no shape");
    for (const auto& d : *shape) {
      if (!d.is_number_integer())
        return malformed("tensor '" + tensor.name + "' has a shape of non-integers");
      tensor.shape.push_back(d.get<std::int64_t>());
    }
    out.push_back(std::move(tensor));
  }
  return out;
}

Result<ModelMetadata> model_metadata(const json& answer) {
  auto versions = strings(answer, "versions");
  if (!versions) return versions.error();
  auto inputs = tensors(answer, "inputs");
  if (!inputs) return inputs.error();
  auto outputs = tensors(answer, "outputs");
  if (!outputs) return outputs.error();
  return ModelMetadata{text(answer, "name"), std::move(*versions), text(answer, "platform"),
                       std::move(*inputs), std::move(*outputs)};
}

Result<std::vector<ModelIndex>> repository_index(const json& answer) {
  if (!answer.is_array()) return malformed("the repository index is not a list");
  std::vector<ModelIndex> models;
  for (const auto& m : answer) {
    if (!m.is_object()) return malformed("the repository index lists a non-object");
    ModelIndex& model = models.emplace_back();
    model.name = text(m, "name");
    model.version = text(m, "version");
    model.state = model_state_named(text(m, "state"));
    model.reason = text(m, "reason");
    model.unloaded = model.reason == protocol::reason::kUnloaded;
  }
  return models;
}

// An answer as its message, decoded as the gRPC transports decode it.
Result<ControlAnswer> through_message(const ControlRequest& request, int status,
                                      std::string_view body) {
  auto message = decode_rest_control(method_of(request), status, body);
  if (!message) return message.error();
  return protocol::decode_control_answer(request, *message);
}

template <typename T>
Result<ControlAnswer> answer(Result<T> value) {
  if (!value) return value.error();
  return ControlAnswer(std::move(*value));
}

}  // namespace

Result<RestRequest> encode_rest_request(const ControlRequest& request) {
  return std::visit(
      Overloaded{
          [](const RawControlRequest& r) { return encode_rest_control(r.method, r.message); },
          [](const ServerLiveRequest&) -> Result<RestRequest> { return rest(M::ServerLive, {}); },
          [](const ServerReadyRequest&) -> Result<RestRequest> { return rest(M::ServerReady, {}); },
          [](const ServerMetadataRequest&) -> Result<RestRequest> {
            return rest(M::ServerMetadata, {});
          },
          [](const ModelReadyRequest& r) -> Result<RestRequest> {
            return rest(M::ModelReady, of_model(r.model));
          },
          [](const ModelMetadataRequest& r) -> Result<RestRequest> {
            return rest(M::ModelMetadata, of_model(r.model));
          },
          [](const ModelConfigRequest& r) -> Result<RestRequest> {
            return rest(M::ModelConfig, of_model(r.model));
          },
          [](const ModelStatisticsRequest& r) -> Result<RestRequest> {
            return rest(M::ModelStatistics, of_model(r.model));
          },
          [](const RepositoryIndexRequest& r) -> Result<RestRequest> {
            return rest(M::RepositoryIndex, {}, {{"ready", r.ready_only}});
          },
          [](const RepositoryModelLoadRequest& r) -> Result<RestRequest> {
            json body = json::object();
            if (!r.config_json.empty()) body["parameters"] = {{"config", r.config_json}};
            return rest(M::RepositoryModelLoad, {r.model, {}, {}, {}}, body);
          },
          [](const RepositoryModelUnloadRequest& r) -> Result<RestRequest> {
            return rest(M::RepositoryModelUnload, {r.model, {}, {}, {}});
          },
      },
      request);
}

Result<ControlAnswer> decode_rest_answer(const ControlRequest& request, int status,
                                         std::string_view body) {
  const ControlMethod method = method_of(request);
  // Health and readiness are the status alone: 200, or 400 (Triton's answer when not).
  if (!std::holds_alternative<RawControlRequest>(request) &&
      (method == M::ServerLive || method == M::ServerReady || method == M::ModelReady) &&
      (status == 200 || status == 400)) {
    return ControlAnswer(status == 200);
  }
  if (std::holds_alternative<RawControlRequest>(request) || method == M::ModelConfig ||
      method == M::ModelStatistics) {
    return through_message(request, status, body);
  }
  if (status != 200) return rest_error(status, body);
  if (method == M::RepositoryModelLoad || method == M::RepositoryModelUnload) {
    return ControlAnswer(true);
  }
  const json parsed = json::parse(body.begin(), body.end(), nullptr, false);
  if (parsed.is_discarded()) {
    return malformed("the " + std::string(method_name(method)) + " answer is not JSON");
  }
  switch (method) {
    case M::ServerMetadata: return answer(server_metadata(parsed));
    case M::ModelMetadata: return answer(model_metadata(parsed));
    case M::RepositoryIndex: return answer(repository_index(parsed));
    default: return malformed("no typed REST answer for " + std::string(method_name(method)));
  }
}

}  // namespace sonic::http
