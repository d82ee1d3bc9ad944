// The control methods of sonic::Transport for every transport that carries the inference
// service's protobuf messages (gRPC streams, TCP frames): each is one unary call, sent the way
// the transport sends them, and its response converted to sonic's own types.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "grpc_service.pb.h"
#include "pb_convert.hpp"
#include "sonic/transport.hpp"

namespace sonic::grpc {

/// Derived provides, publicly,
///   template <typename Response, typename Request, typename Handler>
///   void unary(const char* method, const Request& request, Deadline deadline, Handler handler);
/// which calls `handler(Result<Response>)` exactly once, as the Transport contract says.
template <typename Derived>
class ProtobufControlCalls : public Transport {
 public:
  void server_live_async(Deadline deadline, Callback<bool> done) override {
    ask<inference::ServerLiveResponse>("ServerLive", inference::ServerLiveRequest{}, deadline,
                                       std::move(done), [](const auto& r) { return r.live(); });
  }

  void server_ready_async(Deadline deadline, Callback<bool> done) override {
    ask<inference::ServerReadyResponse>("ServerReady", inference::ServerReadyRequest{}, deadline,
                                        std::move(done), [](const auto& r) { return r.ready(); });
  }

  void model_ready_async(std::string model, std::string version, Deadline deadline,
                         Callback<bool> done) override {
    ask<inference::ModelReadyResponse>(
        "ModelReady", naming<inference::ModelReadyRequest>(std::move(model), std::move(version)),
        deadline, std::move(done), [](const auto& r) { return r.ready(); });
  }

  void server_metadata_async(Deadline deadline, Callback<ServerMetadata> done) override {
    ask<inference::ServerMetadataResponse>("ServerMetadata", inference::ServerMetadataRequest{},
                                           deadline, std::move(done),
                                           [](const auto& r) { return from_pb(r); });
  }

  void model_metadata_async(std::string model, std::string version, Deadline deadline,
                            Callback<ModelMetadata> done) override {
    ask<inference::ModelMetadataResponse>(
        "ModelMetadata",
        naming<inference::ModelMetadataRequest>(std::move(model), std::move(version)), deadline,
        std::move(done), [](const auto& r) { return from_pb(r); });
  }

  void model_config_async(std::string model, std::string version, Deadline deadline,
                          Callback<std::string> done) override {
    ask<inference::ModelConfigResponse>(
        "ModelConfig", naming<inference::ModelConfigRequest>(std::move(model), std::move(version)),
        deadline, std::move(done), [](const auto& r) { return config_to_json(r.config()); });
  }

  void model_statistics_async(std::string model, std::string version, Deadline deadline,
                              Callback<std::vector<ModelStatistics>> done) override {
    ask<inference::ModelStatisticsResponse>(
        "ModelStatistics",
        naming<inference::ModelStatisticsRequest>(std::move(model), std::move(version)), deadline,
        std::move(done), [](const auto& r) {
          std::vector<ModelStatistics> all;
          for (const auto& s : r.model_stats()) all.push_back(from_pb(s));
          return all;
        });
  }

 private:
  // Sends `method` and answers `done` with `convert(response)` (a value or a Result), or the
  // call's error.
  template <typename Response, typename Request, typename T, typename Convert>
  void ask(const char* method, const Request& request, Deadline deadline, Callback<T> done,
           Convert convert) {
    static_cast<Derived*>(this)->template unary<Response>(
        method, request, deadline,
        [done = std::move(done), convert](Result<Response> response) mutable {
          if (!response) return done(response.error());
          done(convert(*response));
        });
  }

  // A request naming a model and version (ModelReady, ModelMetadata, ...).
  template <typename Request>
  static Request naming(std::string model, std::string version) {
    Request request;
    request.set_name(std::move(model));
    request.set_version(std::move(version));
    return request;
  }
};

}  // namespace sonic::grpc
