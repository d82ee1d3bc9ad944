// The control plane's one table: each method of inference.GRPCInferenceService other than
// inference itself, with its gRPC name, its protobuf request and response messages, its REST
// verb and route (as Triton's HTTP frontend serves them: server src/http_server.cc), and
// Triton's protocol group (the groups --grpc-restricted-protocol and --http-restricted-api
// name). Clients, transports and the server's ports all read it: adding a method is an entry
// here, its codec, and its server handler.
//
// Header-only and constexpr, so that every library reads the same table without linking one
// another.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "sonic/control.hpp"

namespace sonic::protocol {

/// The service's two inference methods, which are not control methods: one request and its
/// answer, and a stream of them.
inline constexpr std::string_view kModelInfer = "ModelInfer";
inline constexpr std::string_view kModelStreamInfer = "ModelStreamInfer";

/// How a method's REST request is sent.
enum class RestVerb : std::uint8_t {
  Get,
  Post,
  /// GET to read the settings, POST with the changes to make (Triton's trace and log settings).
  GetOrPost,
};

/// Triton's protocol groups (server src/restricted_features.h): a restricted group's calls
/// need its header.
enum class ControlGroup : std::uint8_t {
  Health,
  Metadata,
  ModelConfig,
  ModelRepository,
  Statistics,
  SharedMemory,
  Trace,
  Logging,
};

/// One control method.
///
/// A route is "/"-separated segments; a segment in braces stands for several:
///   {model}        models/NAME[/versions/VERSION]
///   {model?}       {model}, or nothing
///   {models}       models[/NAME[/versions/VERSION]]
///   {region?}      region/NAME, or nothing
///   {repository?}  REPOSITORY, or nothing
struct ControlMethodSpec {
  ControlMethod method;
  std::string_view name;           ///< in inference.GRPCInferenceService, and sonic's TCP frames
  std::string_view request_type;   ///< its protobuf request message
  std::string_view response_type;  ///< its protobuf response message
  RestVerb verb;
  std::string_view route;
  ControlGroup group;
};

// In the order of ControlMethod (checked below).
inline constexpr std::array<ControlMethodSpec, 18> kControlMethods = {{
    {ControlMethod::ServerLive, "ServerLive", "inference.ServerLiveRequest",
     "inference.ServerLiveResponse", RestVerb::Get, "v2/health/live", ControlGroup::Health},
    {ControlMethod::ServerReady, "ServerReady", "inference.ServerReadyRequest",
     "inference.ServerReadyResponse", RestVerb::Get, "v2/health/ready", ControlGroup::Health},
    {ControlMethod::ServerMetadata, "ServerMetadata", "inference.ServerMetadataRequest",
     "inference.ServerMetadataResponse", RestVerb::Get, "v2", ControlGroup::Metadata},
    {ControlMethod::ModelReady, "ModelReady", "inference.ModelReadyRequest",
     "inference.ModelReadyResponse", RestVerb::Get, "v2/{model}/ready", ControlGroup::Health},
    {ControlMethod::ModelMetadata, "ModelMetadata", "inference.ModelMetadataRequest",
     "inference.ModelMetadataResponse", RestVerb::Get, "v2/{model}", ControlGroup::Metadata},
    {ControlMethod::ModelConfig, "ModelConfig", "inference.ModelConfigRequest",
     "inference.ModelConfigResponse", RestVerb::Get, "v2/{model}/config",
     ControlGroup::ModelConfig},
    {ControlMethod::ModelStatistics, "ModelStatistics", "inference.ModelStatisticsRequest",
     "inference.ModelStatisticsResponse", RestVerb::Get, "v2/{models}/stats",
     ControlGroup::Statistics},
    {ControlMethod::RepositoryIndex, "RepositoryIndex", "inference.RepositoryIndexRequest",
     "inference.RepositoryIndexResponse", RestVerb::Post, "v2/repository/{repository?}/index",
     ControlGroup::ModelRepository},
    {ControlMethod::RepositoryModelLoad, "RepositoryModelLoad",
     "inference.RepositoryModelLoadRequest", "inference.RepositoryModelLoadResponse",
     RestVerb::Post, "v2/repository/{repository?}/models/{name}/load",
     ControlGroup::ModelRepository},
    {ControlMethod::RepositoryModelUnload, "RepositoryModelUnload",
     "inference.RepositoryModelUnloadRequest", "inference.RepositoryModelUnloadResponse",
     RestVerb::Post, "v2/repository/{repository?}/models/{name}/unload",
     ControlGroup::ModelRepository},
    {ControlMethod::SystemSharedMemoryStatus, "SystemSharedMemoryStatus",
     "inference.SystemSharedMemoryStatusRequest", "inference.SystemSharedMemoryStatusResponse",
     RestVerb::Get, "v2/systemsharedmemory/{region?}/status", ControlGroup::SharedMemory},
    {ControlMethod::SystemSharedMemoryRegister, "SystemSharedMemoryRegister",
     "inference.SystemSharedMemoryRegisterRequest", "inference.SystemSharedMemoryRegisterResponse",
     RestVerb::Post, "v2/systemsharedmemory/{region?}/register", ControlGroup::SharedMemory},
    {ControlMethod::SystemSharedMemoryUnregister, "SystemSharedMemoryUnregister",
     "inference.SystemSharedMemoryUnregisterRequest",
     "inference.SystemSharedMemoryUnregisterResponse", RestVerb::Post,
     "v2/systemsharedmemory/{region?}/unregister", ControlGroup::SharedMemory},
    {ControlMethod::CudaSharedMemoryStatus, "CudaSharedMemoryStatus",
     "inference.CudaSharedMemoryStatusRequest", "inference.CudaSharedMemoryStatusResponse",
     RestVerb::Get, "v2/cudasharedmemory/{region?}/status", ControlGroup::SharedMemory},
    {ControlMethod::CudaSharedMemoryRegister, "CudaSharedMemoryRegister",
     "inference.CudaSharedMemoryRegisterRequest", "inference.CudaSharedMemoryRegisterResponse",
     RestVerb::Post, "v2/cudasharedmemory/{region?}/register", ControlGroup::SharedMemory},
    {ControlMethod::CudaSharedMemoryUnregister, "CudaSharedMemoryUnregister",
     "inference.CudaSharedMemoryUnregisterRequest", "inference.CudaSharedMemoryUnregisterResponse",
     RestVerb::Post, "v2/cudasharedmemory/{region?}/unregister", ControlGroup::SharedMemory},
    {ControlMethod::TraceSetting, "TraceSetting", "inference.TraceSettingRequest",
     "inference.TraceSettingResponse", RestVerb::GetOrPost, "v2/{model?}/trace/setting",
     ControlGroup::Trace},
    {ControlMethod::LogSettings, "LogSettings", "inference.LogSettingsRequest",
     "inference.LogSettingsResponse", RestVerb::GetOrPost, "v2/logging", ControlGroup::Logging},
}};

namespace control_methods_detail {
constexpr bool in_order() {
  for (std::size_t i = 0; i < kControlMethods.size(); ++i) {
    if (static_cast<std::size_t>(kControlMethods[i].method) != i) return false;
  }
  return true;
}
}  // namespace control_methods_detail
static_assert(control_methods_detail::in_order(),
              "kControlMethods lists the methods in the order of ControlMethod");
static_assert(static_cast<std::size_t>(ControlMethod::LogSettings) + 1 == kControlMethods.size(),
              "every ControlMethod has its entry");

/// The entry of `method`.
constexpr const ControlMethodSpec& spec_of(ControlMethod method) {
  return kControlMethods[static_cast<std::size_t>(method)];
}

/// The method of that gRPC name; none for a name that is no control method.
constexpr std::optional<ControlMethod> find_control_method(std::string_view name) {
  for (const auto& spec : kControlMethods) {
    if (spec.name == name) return spec.method;
  }
  return std::nullopt;
}

}  // namespace sonic::protocol
