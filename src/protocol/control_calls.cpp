#include "control_calls.hpp"

#include <utility>

#include "control_codec.hpp"
#include "proto_json.hpp"

namespace sonic::protocol {

namespace {

// Calls `method` and answers `done` with decode(response), or with the call's error.
template <typename T, typename Decode>
void ask(Transport& transport, const char* method, std::string request, Deadline deadline,
         Callback<T> done, Decode decode) {
  transport.call_async(method, std::move(request), deadline,
                       [done = std::move(done), decode](Result<std::string> response) mutable {
                         if (!response) return done(response.error());
                         done(decode(*response));
                       });
}

Result<std::string> config_as_json(std::string_view response) {
  auto config = decode_model_config_response(response);
  if (!config) return config.error();
  return message_to_json("inference.ModelConfig", *config);
}

}  // namespace

void ControlCalls::server_live_async(Deadline deadline, Callback<bool> done) {
  ask(*this, "ServerLive", std::string(), deadline, std::move(done), decode_flag);
}

void ControlCalls::server_ready_async(Deadline deadline, Callback<bool> done) {
  ask(*this, "ServerReady", std::string(), deadline, std::move(done), decode_flag);
}

void ControlCalls::model_ready_async(std::string model, std::string version, Deadline deadline,
                                     Callback<bool> done) {
  ask(*this, "ModelReady", encode_model_ref({std::move(model), std::move(version)}), deadline,
      std::move(done), decode_flag);
}

void ControlCalls::server_metadata_async(Deadline deadline, Callback<ServerMetadata> done) {
  ask(*this, "ServerMetadata", std::string(), deadline, std::move(done), decode_server_metadata);
}

void ControlCalls::model_metadata_async(std::string model, std::string version, Deadline deadline,
                                        Callback<ModelMetadata> done) {
  ask(*this, "ModelMetadata", encode_model_ref({std::move(model), std::move(version)}), deadline,
      std::move(done), decode_model_metadata);
}

void ControlCalls::model_config_async(std::string model, std::string version, Deadline deadline,
                                      Callback<std::string> done) {
  ask(*this, "ModelConfig", encode_model_ref({std::move(model), std::move(version)}), deadline,
      std::move(done), config_as_json);
}

void ControlCalls::model_statistics_async(std::string model, std::string version, Deadline deadline,
                                          Callback<std::vector<ModelStatistics>> done) {
  ask(*this, "ModelStatistics", encode_model_ref({std::move(model), std::move(version)}), deadline,
      std::move(done), decode_model_statistics);
}

void ControlCalls::repository_index_async(bool ready_only, Deadline deadline,
                                          Callback<std::vector<ModelIndex>> done) {
  ask(*this, "RepositoryIndex", encode_repository_query({std::string(), ready_only}), deadline,
      std::move(done), decode_repository_index);
}

void ControlCalls::load_model_async(std::string model, std::string config_json, Deadline deadline,
                                    Callback<bool> done) {
  RepositoryModelRequest request{std::string(), std::move(model), {}};
  if (!config_json.empty()) request.parameters["config"] = std::move(config_json);
  ask(*this, "RepositoryModelLoad", encode_repository_model_request(request), deadline,
      std::move(done), [](std::string_view) -> Result<bool> { return true; });
}

void ControlCalls::unload_model_async(std::string model, Deadline deadline, Callback<bool> done) {
  ask(*this, "RepositoryModelUnload",
      encode_repository_model_request({std::string(), std::move(model), {}}), deadline,
      std::move(done), [](std::string_view) -> Result<bool> { return true; });
}

}  // namespace sonic::protocol
