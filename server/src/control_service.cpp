#include "control_service.hpp"

#include "model_config.hpp"
#include "model_control.hpp"
#include "protocol/control_codec.hpp"
#include "sonic/version.hpp"

namespace sonic::server {

namespace {

namespace pc = protocol;

// Triton's shared memory extension: register, unregister and list regions.
Result<std::string> shared_memory(SharedMemoryRegistry& registry, const ShmClient& client,
                                  std::string_view method, std::string_view bytes) {
  const bool cuda = method.rfind("Cuda", 0) == 0;
  std::string_view verb = method.substr(cuda ? 4 : 6);  // after "Cuda" or "System"
  if (verb == "SharedMemoryRegister") {
    if (cuda) {
      auto request = pc::decode_cuda_shm_registration(bytes);
      if (!request) return request.error();
      auto ok = registry.register_cuda(client, request->name, request->raw_handle,
                                       request->device_id, request->byte_size);
      if (!ok) return ok.error();
      return std::string();
    }
    auto request = pc::decode_system_shm_registration(bytes);
    if (!request) return request.error();
    auto ok = registry.register_system(client, request->name, request->key, request->offset,
                                       request->byte_size);
    if (!ok) return ok.error();
    return std::string();
  }
  auto name = pc::decode_region_name(bytes);
  if (!name) return name.error();
  if (verb == "SharedMemoryUnregister") {
    registry.unregister(client, *name, cuda);
    return std::string();
  }
  if (verb != "SharedMemoryStatus") return unimplemented(method);
  auto regions = registry.status(client, *name, cuda);
  if (!regions) return regions.error();
  if (cuda) {
    std::vector<pc::CudaRegionStatus> status;
    for (const auto& r : *regions) {
      status.push_back({r.name, static_cast<std::uint64_t>(r.device_id), r.byte_size});
    }
    return pc::encode_cuda_shm_status(status);
  }
  std::vector<pc::SystemRegionStatus> status;
  for (const auto& r : *regions) status.push_back({r.name, r.key, r.offset, r.byte_size});
  return pc::encode_system_shm_status(status);
}

}  // namespace

// Triton's server.cc, IsReady() with strict readiness: a model whose version is not READY
// makes the server not ready, unless its reason is "unloaded" (taken out of service on
// purpose); a model with no version at all (it never loaded) is not ready either. Models of
// the repository never asked to load (explicit mode) are listed here as "unloaded".
bool server_ready(const CpuExecutor& executor, bool strict) {
  if (!strict) return true;
  for (const auto& model : executor.repository_index()) {
    if (model.state != "READY" && model.reason != "unloaded") return false;
  }
  return true;
}

Error unimplemented(std::string_view method) {
  return Error(StatusCode::Unimplemented,
               "method " + std::string(method) + " is not implemented by this server");
}

bool serves_control(std::string_view method, bool shared_memory) {
  static constexpr std::string_view kMethods[] = {
      "ServerLive",          "ServerReady",          "ServerMetadata",  "ModelReady",
      "ModelMetadata",       "ModelConfig",          "ModelStatistics", "RepositoryIndex",
      "RepositoryModelLoad", "RepositoryModelUnload"};
  static constexpr std::string_view kSharedMemoryMethods[] = {
      "SystemSharedMemoryRegister", "SystemSharedMemoryUnregister", "SystemSharedMemoryStatus",
      "CudaSharedMemoryRegister",   "CudaSharedMemoryUnregister",   "CudaSharedMemoryStatus"};
  for (auto m : kMethods) {
    if (m == method) return true;
  }
  if (!shared_memory) return false;
  for (auto m : kSharedMemoryMethods) {
    if (m == method) return true;
  }
  return false;
}

Result<std::string> answer_control(const ControlContext& context, std::string_view method,
                                   std::string_view bytes) {
  if (!serves_control(method, context.shared_memory != nullptr)) return unimplemented(method);
  CpuExecutor& executor = context.executor;
  if (method == "ServerLive") return pc::encode_flag(true);
  if (method == "ServerReady") {
    return pc::encode_flag(server_ready(executor, context.options.strict_readiness));
  }
  if (method == "ServerMetadata") {
    ServerMetadata metadata{
        context.options.name,
        kVersion,
        {"classification", "sequence", "model_configuration", "statistics", "model_repository"}};
    if (context.shared_memory) {
      metadata.extensions.push_back("system_shared_memory");
      if (SharedMemoryRegistry::cuda_supported()) {
        metadata.extensions.push_back("cuda_shared_memory");
      }
    }
    return pc::encode_server_metadata(metadata);
  }
  if (method == "RepositoryIndex") {
    auto query = pc::decode_repository_query(bytes);
    if (!query) return query.error();
    if (!query->repository.empty()) {
      // Triton's words and code (UNSUPPORTED, UNIMPLEMENTED on gRPC).
      return Error(StatusCode::Unimplemented, "'repository_name' specification is not supported");
    }
    std::vector<ModelIndex> models;
    for (auto& model : executor.repository_index()) {
      if (!query->ready_only || model.state == "READY") models.push_back(std::move(model));
    }
    return pc::encode_repository_index(models);
  }
  if (method == "RepositoryModelLoad" || method == "RepositoryModelUnload") {
    return load_or_unload(context, method == "RepositoryModelLoad", bytes);
  }
  if (method.find("SharedMemory") != std::string_view::npos && context.shared_memory) {
    return shared_memory(*context.shared_memory, context.client(), method, bytes);
  }
  if (method != "ModelReady" && method != "ModelMetadata" && method != "ModelConfig" &&
      method != "ModelStatistics") {
    return unimplemented(method);
  }
  auto ref = pc::decode_model_ref(bytes);
  if (!ref) return ref.error();
  if (method == "ModelReady") return pc::encode_flag(executor.has_model(ref->name, ref->version));
  if (method == "ModelStatistics") {
    if (ref->name.empty()) return pc::encode_model_statistics(executor.all_statistics());
    auto stats = executor.statistics(ref->name, ref->version);
    if (!stats) return stats.error();
    return pc::encode_model_statistics({*stats});
  }
  if (method == "ModelMetadata") {
    auto metadata = executor.metadata(ref->name, ref->version);
    if (!metadata) return metadata.error();
    return pc::encode_model_metadata(*metadata);
  }
  auto model = executor.model(ref->name, ref->version);
  if (!model) return model.error();
  return pc::encode_model_config_response(model_config_of(**model));
}

}  // namespace sonic::server
