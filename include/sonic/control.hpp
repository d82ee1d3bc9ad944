// sonic — the control plane of the inference service: its methods, and the typed requests and
// answers a Transport carries for them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/metadata.hpp"

namespace sonic {

/// The control methods of KServe v2's inference service and of Triton's extensions to it:
/// every method of inference.GRPCInferenceService but ModelInfer and ModelStreamInfer. Each has
/// one gRPC name, one REST route, and one request and one response message, in one table
/// (src/protocol/control_methods.hpp).
enum class ControlMethod : std::uint8_t {
  ServerLive,
  ServerReady,
  ServerMetadata,
  ModelReady,
  ModelMetadata,
  ModelConfig,
  ModelStatistics,
  RepositoryIndex,
  RepositoryModelLoad,
  RepositoryModelUnload,
  SystemSharedMemoryStatus,
  SystemSharedMemoryRegister,
  SystemSharedMemoryUnregister,
  CudaSharedMemoryStatus,
  CudaSharedMemoryRegister,
  CudaSharedMemoryUnregister,
  TraceSetting,
  LogSettings,
};

/// Its name in inference.GRPCInferenceService ("ModelReady").
SONIC_EXPORT std::string_view method_name(ControlMethod method) noexcept;
/// The control method of that name in inference.GRPCInferenceService; none for another name.
SONIC_EXPORT std::optional<ControlMethod> control_method_named(std::string_view name) noexcept;

// The typed requests: each names its method and the type of its answer.

struct ServerLiveRequest {
  static constexpr ControlMethod method = ControlMethod::ServerLive;
  using Answer = bool;  ///< whether the server is live
};
struct ServerReadyRequest {
  static constexpr ControlMethod method = ControlMethod::ServerReady;
  using Answer = bool;  ///< whether it is ready for inference
};
struct ServerMetadataRequest {
  static constexpr ControlMethod method = ControlMethod::ServerMetadata;
  using Answer = ServerMetadata;
};
struct ModelReadyRequest {
  static constexpr ControlMethod method = ControlMethod::ModelReady;
  using Answer = bool;
  ModelRef model;
};
struct ModelMetadataRequest {
  static constexpr ControlMethod method = ControlMethod::ModelMetadata;
  using Answer = ModelMetadata;
  ModelRef model;
};
struct ModelConfigRequest {
  static constexpr ControlMethod method = ControlMethod::ModelConfig;
  using Answer = std::string;  ///< Triton's ModelConfig as JSON text
  ModelRef model;
};
struct ModelStatisticsRequest {
  static constexpr ControlMethod method = ControlMethod::ModelStatistics;
  using Answer = std::vector<ModelStatistics>;
  ModelRef model;  ///< an empty name: every model
};
struct RepositoryIndexRequest {
  static constexpr ControlMethod method = ControlMethod::RepositoryIndex;
  using Answer = std::vector<ModelIndex>;
  bool ready_only = false;  ///< READY models only
};
struct RepositoryModelLoadRequest {
  static constexpr ControlMethod method = ControlMethod::RepositoryModelLoad;
  using Answer = bool;  ///< true: loaded
  std::string model;
  std::string config_json;  ///< unless empty, the configuration to load it with ("config")
};
struct RepositoryModelUnloadRequest {
  static constexpr ControlMethod method = ControlMethod::RepositoryModelUnload;
  using Answer = bool;  ///< true: unloaded
  std::string model;
};
/// Any control method as its gRPC message: `message` is its serialized protobuf request, and
/// the answer its serialized response (for callers that speak the service's messages, as
/// tritonclient does).
struct RawControlRequest {
  using Answer = std::string;
  ControlMethod method = ControlMethod::ServerLive;
  std::string message;
};

/// A control call, as Transport::control_async() takes it.
using ControlRequest =
    std::variant<ServerLiveRequest, ServerReadyRequest, ServerMetadataRequest, ModelReadyRequest,
                 ModelMetadataRequest, ModelConfigRequest, ModelStatisticsRequest,
                 RepositoryIndexRequest, RepositoryModelLoadRequest, RepositoryModelUnloadRequest,
                 RawControlRequest>;

/// A control call's answer: the Answer type of its request.
using ControlAnswer = std::variant<bool, ServerMetadata, ModelMetadata, std::string,
                                   std::vector<ModelStatistics>, std::vector<ModelIndex>>;

/// The method a request calls.
SONIC_EXPORT ControlMethod method_of(const ControlRequest& request) noexcept;

}  // namespace sonic
