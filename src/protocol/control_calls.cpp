#include "control_calls.hpp"

#include <utility>

#include "control_codec.hpp"
#include "control_methods.hpp"
#include "overloaded.hpp"
#include "proto_json.hpp"

namespace sonic::protocol {

namespace {

// A decoded value as the answer variant, or the decoder's error.
template <typename T>
Result<ControlAnswer> answer(Result<T> decoded) {
  if (!decoded) return decoded.error();
  return ControlAnswer(std::move(*decoded));
}

}  // namespace

std::string encode_control_request(const ControlRequest& request) {
  return std::visit(Overloaded{
                        [](const ServerLiveRequest&) { return std::string(); },
                        [](const ServerReadyRequest&) { return std::string(); },
                        [](const ServerMetadataRequest&) { return std::string(); },
                        [](const ModelReadyRequest& r) { return encode_model_ref(r.model); },
                        [](const ModelMetadataRequest& r) { return encode_model_ref(r.model); },
                        [](const ModelConfigRequest& r) { return encode_model_ref(r.model); },
                        [](const ModelStatisticsRequest& r) { return encode_model_ref(r.model); },
                        [](const RepositoryIndexRequest& r) {
                          return encode_repository_query({std::string(), r.ready_only});
                        },
                        [](const RepositoryModelLoadRequest& r) {
                          RepositoryModelRequest load{std::string(), r.model, {}};
                          if (!r.config_json.empty()) load.parameters["config"] = r.config_json;
                          return encode_repository_model_request(load);
                        },
                        [](const RepositoryModelUnloadRequest& r) {
                          return encode_repository_model_request({std::string(), r.model, {}});
                        },
                        [](const RawControlRequest& r) { return r.message; },
                    },
                    request);
}

Result<ControlAnswer> decode_control_answer(const ControlRequest& request,
                                            std::string_view response) {
  return std::visit(
      Overloaded{
          [&](const ServerLiveRequest&) { return answer(decode_flag(response)); },
          [&](const ServerReadyRequest&) { return answer(decode_flag(response)); },
          [&](const ServerMetadataRequest&) { return answer(decode_server_metadata(response)); },
          [&](const ModelReadyRequest&) { return answer(decode_flag(response)); },
          [&](const ModelMetadataRequest&) { return answer(decode_model_metadata(response)); },
          [&](const ModelConfigRequest&) -> Result<ControlAnswer> {
            auto config = decode_model_config_response(response);
            if (!config) return config.error();
            return answer(message_to_json("inference.ModelConfig", *config));
          },
          [&](const ModelStatisticsRequest&) { return answer(decode_model_statistics(response)); },
          [&](const RepositoryIndexRequest&) { return answer(decode_repository_index(response)); },
          [&](const RepositoryModelLoadRequest&) { return answer(Result<bool>(true)); },
          [&](const RepositoryModelUnloadRequest&) { return answer(Result<bool>(true)); },
          [&](const RawControlRequest&) {
            return answer(Result<std::string>(std::string(response)));
          },
      },
      request);
}

void control_by_messages(ControlRequest request, const MessageCall& call,
                         Callback<ControlAnswer> done) {
  const ControlMethod method = method_of(request);
  std::string message = encode_control_request(request);
  call(
      method, std::move(message),
      [request = std::move(request), done = std::move(done)](Result<std::string> response) mutable {
        if (!response) return done(response.error());
        done(decode_control_answer(request, *response));
      });
}

}  // namespace sonic::protocol
