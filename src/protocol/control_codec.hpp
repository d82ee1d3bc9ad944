// The control messages of inference.GRPCInferenceService (proto/grpc_service.proto), encoded
// and decoded by hand: health, metadata, configuration, statistics, the model repository and
// the shared memory extension. Requests are encoded by clients and decoded by servers; responses
// the other way round. A request that does not parse is INVALID_ARGUMENT (the client sent it);
// a response that does not parse is INTERNAL (the server sent it). Unknown fields are skipped,
// as protobuf requires, so newer peers stay readable.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/metadata.hpp"

namespace sonic::protocol {

// ---- Requests ----------------------------------------------------------------------------

/// ModelReadyRequest, ModelMetadataRequest, ModelConfigRequest and ModelStatisticsRequest all
/// name a model (name = 1) and a version (version = 2; empty: the server's choice).
SONIC_EXPORT std::string encode_model_ref(const ModelRef& model);
SONIC_EXPORT Result<ModelRef> decode_model_ref(std::string_view bytes);

/// RepositoryIndexRequest.
struct RepositoryQuery {
  std::string repository;   ///< repository_name = 1; empty: all
  bool ready_only = false;  ///< ready = 2
};
SONIC_EXPORT std::string encode_repository_query(const RepositoryQuery& query);
SONIC_EXPORT Result<RepositoryQuery> decode_repository_query(std::string_view bytes);

/// A ModelRepositoryParameter: bool, int64, string, or bytes (which stay bytes on the wire).
struct RepositoryBytes {
  std::string value;
  bool operator==(const RepositoryBytes& other) const { return value == other.value; }
};
using RepositoryParameter = std::variant<bool, std::int64_t, std::string, RepositoryBytes>;

/// RepositoryModelLoadRequest and RepositoryModelUnloadRequest.
struct RepositoryModelRequest {
  std::string repository;                                 ///< repository_name = 1
  std::string model;                                      ///< model_name = 2
  std::map<std::string, RepositoryParameter> parameters;  ///< parameters = 3 ("config", ...)
};
SONIC_EXPORT std::string encode_repository_model_request(const RepositoryModelRequest& request);
SONIC_EXPORT Result<RepositoryModelRequest> decode_repository_model_request(std::string_view bytes);

/// SystemSharedMemoryRegisterRequest.
struct SystemShmRegistration {
  std::string name;
  std::string key;
  std::uint64_t offset = 0;
  std::uint64_t byte_size = 0;
};
SONIC_EXPORT std::string encode_system_shm_registration(const SystemShmRegistration& request);
SONIC_EXPORT Result<SystemShmRegistration> decode_system_shm_registration(std::string_view bytes);

/// CudaSharedMemoryRegisterRequest.
struct CudaShmRegistration {
  std::string name;
  std::string raw_handle;  ///< the bytes of a cudaIpcMemHandle_t
  std::int64_t device_id = 0;
  std::uint64_t byte_size = 0;
};
SONIC_EXPORT std::string encode_cuda_shm_registration(const CudaShmRegistration& request);
SONIC_EXPORT Result<CudaShmRegistration> decode_cuda_shm_registration(std::string_view bytes);

/// The Status and Unregister requests of both shared memory kinds name one region (name = 1;
/// empty: every region).
SONIC_EXPORT std::string encode_region_name(const std::string& name);
SONIC_EXPORT Result<std::string> decode_region_name(std::string_view bytes);

// ---- Responses ---------------------------------------------------------------------------

/// ServerLiveResponse, ServerReadyResponse and ModelReadyResponse: one bool (field 1).
SONIC_EXPORT std::string encode_flag(bool value);
SONIC_EXPORT Result<bool> decode_flag(std::string_view bytes);

/// ServerMetadataResponse.
SONIC_EXPORT std::string encode_server_metadata(const ServerMetadata& metadata);
SONIC_EXPORT Result<ServerMetadata> decode_server_metadata(std::string_view bytes);

/// ModelMetadataResponse; a datatype sonic does not know is INTERNAL, naming it.
SONIC_EXPORT std::string encode_model_metadata(const ModelMetadata& metadata);
SONIC_EXPORT Result<ModelMetadata> decode_model_metadata(std::string_view bytes);

/// ModelConfigResponse: the serialized ModelConfig it carries (config = 1).
SONIC_EXPORT std::string encode_model_config_response(std::string_view config);
SONIC_EXPORT Result<std::string> decode_model_config_response(std::string_view bytes);

/// ModelStatisticsResponse.
SONIC_EXPORT std::string encode_model_statistics(const std::vector<ModelStatistics>& all);
SONIC_EXPORT Result<std::vector<ModelStatistics>> decode_model_statistics(std::string_view bytes);

/// RepositoryIndexResponse.
SONIC_EXPORT std::string encode_repository_index(const std::vector<ModelIndex>& models);
SONIC_EXPORT Result<std::vector<ModelIndex>> decode_repository_index(std::string_view bytes);

/// One region in SystemSharedMemoryStatusResponse.
struct SystemRegionStatus {
  std::string name;
  std::string key;
  std::uint64_t offset = 0;
  std::uint64_t byte_size = 0;
};
SONIC_EXPORT std::string encode_system_shm_status(const std::vector<SystemRegionStatus>& regions);
SONIC_EXPORT Result<std::vector<SystemRegionStatus>> decode_system_shm_status(
    std::string_view bytes);

/// One region in CudaSharedMemoryStatusResponse.
struct CudaRegionStatus {
  std::string name;
  std::uint64_t device_id = 0;
  std::uint64_t byte_size = 0;
};
SONIC_EXPORT std::string encode_cuda_shm_status(const std::vector<CudaRegionStatus>& regions);
SONIC_EXPORT Result<std::vector<CudaRegionStatus>> decode_cuda_shm_status(std::string_view bytes);

}  // namespace sonic::protocol
