#include "control_service.hpp"

#include "grpc_service.pb.h"
#include "pb_convert.hpp"
#include "sonic/version.hpp"

namespace sonic::grpc {

namespace {

template <typename Request>
Result<void> parse(const std::string& bytes, Request& request) {
  if (request.ParseFromString(bytes)) return {};
  return Error(StatusCode::InvalidArgument, "malformed " + request.GetTypeName());
}

template <typename Message>
Result<std::string> serialized(const Message& message) {
  return message.SerializeAsString();
}

// Triton's shared memory extension: register, unregister and list regions.
Result<std::string> shared_memory(SharedMemoryRegistry& registry, const std::string& method,
                                  const std::string& bytes) {
  auto answer = [&](const Result<void>& outcome, const auto& response) -> Result<std::string> {
    if (!outcome) return outcome.error();
    return serialized(response);
  };
  if (method == "SystemSharedMemoryRegister") {
    inference::SystemSharedMemoryRegisterRequest request;
    if (auto ok = parse(bytes, request); !ok) return ok.error();
    return answer(registry.register_system(request.name(), request.key(), request.offset(),
                                           request.byte_size()),
                  inference::SystemSharedMemoryRegisterResponse{});
  }
  if (method == "CudaSharedMemoryRegister") {
    inference::CudaSharedMemoryRegisterRequest request;
    if (auto ok = parse(bytes, request); !ok) return ok.error();
    return answer(registry.register_cuda(request.name(), request.raw_handle(), request.device_id(),
                                         request.byte_size()),
                  inference::CudaSharedMemoryRegisterResponse{});
  }
  if (method == "SystemSharedMemoryUnregister") {
    inference::SystemSharedMemoryUnregisterRequest request;
    if (auto ok = parse(bytes, request); !ok) return ok.error();
    registry.unregister(request.name(), false);
    return serialized(inference::SystemSharedMemoryUnregisterResponse{});
  }
  if (method == "CudaSharedMemoryUnregister") {
    inference::CudaSharedMemoryUnregisterRequest request;
    if (auto ok = parse(bytes, request); !ok) return ok.error();
    registry.unregister(request.name(), true);
    return serialized(inference::CudaSharedMemoryUnregisterResponse{});
  }
  if (method == "SystemSharedMemoryStatus") {
    inference::SystemSharedMemoryStatusRequest request;
    if (auto ok = parse(bytes, request); !ok) return ok.error();
    auto regions = registry.status(request.name(), false);
    if (!regions) return regions.error();
    inference::SystemSharedMemoryStatusResponse response;
    for (const auto& r : *regions) {
      auto& status = (*response.mutable_regions())[r.name];
      status.set_name(r.name);
      status.set_key(r.key);
      status.set_offset(r.offset);
      status.set_byte_size(r.byte_size);
    }
    return serialized(response);
  }
  if (method == "CudaSharedMemoryStatus") {
    inference::CudaSharedMemoryStatusRequest request;
    if (auto ok = parse(bytes, request); !ok) return ok.error();
    auto regions = registry.status(request.name(), true);
    if (!regions) return regions.error();
    inference::CudaSharedMemoryStatusResponse response;
    for (const auto& r : *regions) {
      auto& status = (*response.mutable_regions())[r.name];
      status.set_name(r.name);
      status.set_device_id(static_cast<std::uint64_t>(r.device_id));
      status.set_byte_size(r.byte_size);
    }
    return serialized(response);
  }
  return Error(StatusCode::Unimplemented,
               "method " + method + " is not implemented by this server");
}

}  // namespace

Result<std::string> answer_control(const ControlContext& context, const std::string& method,
                                   const std::string& bytes) {
  CpuExecutor& executor = context.executor;
  if (method == "ServerLive") {
    inference::ServerLiveResponse response;
    response.set_live(true);
    return serialized(response);
  }
  if (method == "ServerReady") {
    inference::ServerReadyResponse response;
    response.set_ready(true);
    return serialized(response);
  }
  if (method == "ModelReady") {
    inference::ModelReadyRequest request;
    if (auto ok = parse(bytes, request); !ok) return ok.error();
    inference::ModelReadyResponse response;
    response.set_ready(executor.has_model(request.name(), request.version()));
    return serialized(response);
  }
  if (method == "ServerMetadata") {
    inference::ServerMetadataResponse response;
    response.set_name(context.options.name);
    response.set_version(kVersion);
    response.add_extensions("model_configuration");
    response.add_extensions("statistics");
    if (context.shared_memory) {
      response.add_extensions("system_shared_memory");
      if (SharedMemoryRegistry::cuda_supported()) response.add_extensions("cuda_shared_memory");
    }
    return serialized(response);
  }
  if (method == "ModelMetadata") {
    inference::ModelMetadataRequest request;
    if (auto ok = parse(bytes, request); !ok) return ok.error();
    auto model = executor.model(request.name(), request.version());
    if (!model) return model.error();
    inference::ModelMetadataResponse response;
    to_pb((*model)->metadata(), &response);
    return serialized(response);
  }
  if (method == "ModelConfig") {
    inference::ModelConfigRequest request;
    if (auto ok = parse(bytes, request); !ok) return ok.error();
    auto model = executor.model(request.name(), request.version());
    if (!model) return model.error();
    inference::ModelConfigResponse response;
    *response.mutable_config() = model_config_of(**model);
    return serialized(response);
  }
  if (method == "ModelStatistics") {
    inference::ModelStatisticsRequest request;
    if (auto ok = parse(bytes, request); !ok) return ok.error();
    inference::ModelStatisticsResponse response;
    if (request.name().empty()) {
      for (const auto& s : executor.all_statistics()) to_pb(s, response.add_model_stats());
    } else {
      auto stats = executor.statistics(request.name(), request.version());
      if (!stats) return stats.error();
      to_pb(*stats, response.add_model_stats());
    }
    return serialized(response);
  }
  if (method == "RepositoryIndex") {
    inference::RepositoryIndexRequest request;
    if (auto ok = parse(bytes, request); !ok) return ok.error();
    inference::RepositoryIndexResponse response;
    for (const auto& name : executor.model_names()) {
      auto* index = response.add_models();
      index->set_name(name);
      auto model = executor.model(name);
      if (model) index->set_version((*model)->version);
      index->set_state("READY");
    }
    return serialized(response);
  }
  if (method.find("SharedMemory") != std::string::npos && context.shared_memory) {
    return shared_memory(*context.shared_memory, method, bytes);
  }
  return Error(StatusCode::Unimplemented,
               "method " + method + " is not implemented by this server");
}

}  // namespace sonic::grpc
