// The typed control calls of sonic::Transport, for every transport that carries the inference
// service's messages (gRPC streams, TCP frames): each encodes its request with the control
// codec, sends it through the transport's generic call_async, and decodes the response.
#pragma once

#include <string>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/transport.hpp"

namespace sonic::protocol {

/// A Transport whose control calls are unary calls over call_async. Derived transports
/// implement infer_async and call_async; the contract of each call is call_async's.
class SONIC_EXPORT ControlCalls : public Transport {
 public:
  void server_live_async(Deadline deadline, Callback<bool> done) override;
  void server_ready_async(Deadline deadline, Callback<bool> done) override;
  void model_ready_async(std::string model, std::string version, Deadline deadline,
                         Callback<bool> done) override;
  void server_metadata_async(Deadline deadline, Callback<ServerMetadata> done) override;
  void model_metadata_async(std::string model, std::string version, Deadline deadline,
                            Callback<ModelMetadata> done) override;
  void model_config_async(std::string model, std::string version, Deadline deadline,
                          Callback<std::string> done) override;
  void model_statistics_async(std::string model, std::string version, Deadline deadline,
                              Callback<std::vector<ModelStatistics>> done) override;
  void repository_index_async(bool ready_only, Deadline deadline,
                              Callback<std::vector<ModelIndex>> done) override;
  void load_model_async(std::string model, std::string config_json, Deadline deadline,
                        Callback<bool> done) override;
  void unload_model_async(std::string model, Deadline deadline, Callback<bool> done) override;
};

}  // namespace sonic::protocol
