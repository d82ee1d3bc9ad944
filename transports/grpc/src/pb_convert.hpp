// Conversions between the generated protobuf messages of the control calls and sonic's
// standard-library types. Only this transport sees protobuf.
#pragma once

#include "grpc_service.pb.h"
#include "model_config.pb.h"
#include "sonic/executor.hpp"
#include "sonic/metadata.hpp"

namespace sonic::grpc {

/// A model's metadata from the wire; an unknown datatype is an error.
Result<ModelMetadata> from_pb(const inference::ModelMetadataResponse& pb);
void to_pb(const ModelMetadata& metadata, inference::ModelMetadataResponse* pb);

ServerMetadata from_pb(const inference::ServerMetadataResponse& pb);

ModelStatistics from_pb(const inference::ModelStatistics& pb);
void to_pb(const ModelStatistics& stats, inference::ModelStatistics* pb);

/// The Triton ModelConfig describing an executor model.
inference::ModelConfig model_config_of(const Model& model);
/// A ModelConfig in protobuf's JSON mapping (proto field names), as Client::model_config gives.
Result<std::string> config_to_json(const inference::ModelConfig& config);

}  // namespace sonic::grpc
