#include "control_service.hpp"

#include <array>

#include "model_config.hpp"
#include "model_control.hpp"
#include "protocol/control_codec.hpp"
#include "protocol/control_methods.hpp"
#include "sonic/version.hpp"

namespace sonic::server {

namespace {

namespace pc = protocol;
using M = ControlMethod;

// One method's handler: the serialized response to its serialized request.
using Handler = Result<std::string> (*)(const ControlContext&, std::string_view request);

Result<std::string> server_live(const ControlContext&, std::string_view) {
  return pc::encode_flag(true);
}

Result<std::string> server_ready_answer(const ControlContext& context, std::string_view) {
  return pc::encode_flag(server_ready(context.executor, context.options.strict_readiness));
}

Result<std::string> server_metadata(const ControlContext& context, std::string_view) {
  ServerMetadata metadata{
      context.options.name,
      kVersion,
      {"classification", "sequence", "model_configuration", "statistics", "model_repository"}};
  if (context.shared_memory) {
    metadata.extensions.push_back("system_shared_memory");
    if (SharedMemoryRegistry::cuda_supported()) metadata.extensions.push_back("cuda_shared_memory");
  }
  return pc::encode_server_metadata(metadata);
}

Result<std::string> model_ready(const ControlContext& context, std::string_view bytes) {
  auto ref = pc::decode_model_ref(bytes);
  if (!ref) return ref.error();
  return pc::encode_flag(context.executor.has_model(ref->name, ref->version));
}

Result<std::string> model_metadata(const ControlContext& context, std::string_view bytes) {
  auto ref = pc::decode_model_ref(bytes);
  if (!ref) return ref.error();
  auto metadata = context.executor.metadata(ref->name, ref->version);
  if (!metadata) return metadata.error();
  return pc::encode_model_metadata(*metadata);
}

Result<std::string> model_config(const ControlContext& context, std::string_view bytes) {
  auto ref = pc::decode_model_ref(bytes);
  if (!ref) return ref.error();
  auto model = context.executor.model(ref->name, ref->version);
  if (!model) return model.error();
  return pc::encode_model_config_response(model_config_of(**model));
}

Result<std::string> model_statistics(const ControlContext& context, std::string_view bytes) {
  auto ref = pc::decode_model_ref(bytes);
  if (!ref) return ref.error();
  if (ref->name.empty()) return pc::encode_model_statistics(context.executor.all_statistics());
  auto stats = context.executor.statistics(ref->name, ref->version);
  if (!stats) return stats.error();
  return pc::encode_model_statistics({*stats});
}

Result<std::string> repository_index(const ControlContext& context, std::string_view bytes) {
  auto query = pc::decode_repository_query(bytes);
  if (!query) return query.error();
  if (!query->repository.empty()) {
    // Triton's words and code (UNSUPPORTED, UNIMPLEMENTED on gRPC).
    return Error(StatusCode::Unimplemented, "'repository_name' specification is not supported");
  }
  std::vector<ModelIndex> models;
  for (auto& model : context.executor.repository_index()) {
    if (!query->ready_only || model.state == ModelState::Ready) models.push_back(std::move(model));
  }
  return pc::encode_repository_index(models);
}

Result<std::string> load_model(const ControlContext& context, std::string_view bytes) {
  return load_or_unload(context, /*load=*/true, bytes);
}

Result<std::string> unload_model(const ControlContext& context, std::string_view bytes) {
  return load_or_unload(context, /*load=*/false, bytes);
}

// Triton's shared memory extension: register, unregister and list regions, of either kind.
template <bool kCuda>
Result<std::string> shm_status(const ControlContext& context, std::string_view bytes) {
  auto name = pc::decode_region_name(bytes);
  if (!name) return name.error();
  auto regions = context.shared_memory->status(context.client(), *name, kCuda);
  if (!regions) return regions.error();
  if constexpr (kCuda) {
    std::vector<pc::CudaRegionStatus> status;
    for (const auto& r : *regions) {
      status.push_back({r.name, static_cast<std::uint64_t>(r.device_id), r.byte_size});
    }
    return pc::encode_cuda_shm_status(status);
  } else {
    std::vector<pc::SystemRegionStatus> status;
    for (const auto& r : *regions) status.push_back({r.name, r.key, r.offset, r.byte_size});
    return pc::encode_system_shm_status(status);
  }
}

template <bool kCuda>
Result<std::string> shm_unregister(const ControlContext& context, std::string_view bytes) {
  auto name = pc::decode_region_name(bytes);
  if (!name) return name.error();
  context.shared_memory->unregister(context.client(), *name, kCuda);
  return std::string();
}

Result<std::string> system_shm_register(const ControlContext& context, std::string_view bytes) {
  auto request = pc::decode_system_shm_registration(bytes);
  if (!request) return request.error();
  auto ok = context.shared_memory->register_system(context.client(), request->name, request->key,
                                                   request->offset, request->byte_size);
  if (!ok) return ok.error();
  return std::string();
}

Result<std::string> cuda_shm_register(const ControlContext& context, std::string_view bytes) {
  auto request = pc::decode_cuda_shm_registration(bytes);
  if (!request) return request.error();
  auto ok = context.shared_memory->register_cuda(
      context.client(), request->name, request->raw_handle, request->device_id, request->byte_size);
  if (!ok) return ok.error();
  return std::string();
}

// The server's handlers, by method (null: not served).
constexpr std::array<Handler, pc::kControlMethods.size()> handlers() {
  std::array<Handler, pc::kControlMethods.size()> table{};
  auto set = [&table](M method, Handler handler) {
    table[static_cast<std::size_t>(method)] = handler;
  };
  set(M::ServerLive, server_live);
  set(M::ServerReady, server_ready_answer);
  set(M::ServerMetadata, server_metadata);
  set(M::ModelReady, model_ready);
  set(M::ModelMetadata, model_metadata);
  set(M::ModelConfig, model_config);
  set(M::ModelStatistics, model_statistics);
  set(M::RepositoryIndex, repository_index);
  set(M::RepositoryModelLoad, load_model);
  set(M::RepositoryModelUnload, unload_model);
  set(M::SystemSharedMemoryStatus, shm_status<false>);
  set(M::SystemSharedMemoryRegister, system_shm_register);
  set(M::SystemSharedMemoryUnregister, shm_unregister<false>);
  set(M::CudaSharedMemoryStatus, shm_status<true>);
  set(M::CudaSharedMemoryRegister, cuda_shm_register);
  set(M::CudaSharedMemoryUnregister, shm_unregister<true>);
  set(M::TraceSetting, answer_trace_setting);
  set(M::LogSettings, answer_log_settings);
  return table;
}

constexpr auto kHandlers = handlers();

bool serves(ControlMethod method, bool shared_memory) {
  if (!kHandlers[static_cast<std::size_t>(method)]) return false;
  return shared_memory || pc::spec_of(method).group != pc::ControlGroup::SharedMemory;
}

}  // namespace

// Triton's server.cc, IsReady() with strict readiness: a model whose version is not READY
// makes the server not ready, unless it was taken out of service on purpose (unloaded); a
// model with no version at all (it never loaded) is not ready either. Models of the repository
// never asked to load (explicit mode) are listed here as unloaded.
bool server_ready(const CpuExecutor& executor, bool strict) {
  if (!strict) return true;
  for (const auto& model : executor.repository_index()) {
    if (model.state != ModelState::Ready && !model.unloaded) return false;
  }
  return true;
}

Error unimplemented(std::string_view method) {
  return Error(StatusCode::Unimplemented,
               "method " + std::string(method) + " is not implemented by this server");
}

std::optional<ControlMethod> served_control(std::string_view name, bool shared_memory) {
  auto method = pc::find_control_method(name);
  if (!method || !serves(*method, shared_memory)) return std::nullopt;
  return method;
}

Result<std::string> answer_control(const ControlContext& context, ControlMethod method,
                                   std::string_view bytes) {
  if (!serves(method, context.shared_memory != nullptr)) {
    return unimplemented(pc::spec_of(method).name);
  }
  return kHandlers[static_cast<std::size_t>(method)](context, bytes);
}

}  // namespace sonic::server
