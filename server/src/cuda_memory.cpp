#include "cuda_memory.hpp"

#ifdef SONIC_WITH_CUDA
#include <cuda_runtime_api.h>

#include <cstring>
#endif

namespace sonic::server::cuda {

#ifdef SONIC_WITH_CUDA

namespace {

Error cuda_error(const char* what, cudaError_t status) {
  return Error(StatusCode::Unavailable, std::string(what) + ": " + cudaGetErrorString(status) +
                                            " (CUDA error " +
                                            std::to_string(static_cast<int>(status)) + ")");
}

Result<void> use_device(std::int64_t device_id) {
  int count = 0;
  if (auto status = cudaGetDeviceCount(&count); status != cudaSuccess) {
    return cuda_error("no CUDA device usable", status);
  }
  if (device_id < 0 || device_id >= count) {
    return Error(StatusCode::InvalidArgument, "CUDA device " + std::to_string(device_id) +
                                                  " does not exist (" + std::to_string(count) +
                                                  " devices)");
  }
  if (auto status = cudaSetDevice(static_cast<int>(device_id)); status != cudaSuccess) {
    return cuda_error("cannot select the CUDA device", status);
  }
  return {};
}

}  // namespace

// Built with CUDA is not usable: a GPU-less node, or one whose driver is missing, has none.
// Asked once: the answer does not change while the server runs, and cudaGetDeviceCount()
// initialises the runtime.
bool available() {
  static const bool usable = [] {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  }();
  return usable;
}

// The size of the allocation that holds `pointer`, from the driver's cuMemGetAddressRange,
// reached through the runtime (cudaGetDriverEntryPoint*) so that the server never links libcuda
// and still starts on nodes without a GPU driver, as Triton does for the same check.
Result<std::size_t> allocation_size(void* pointer) {
  using GetAddressRange =
      int (*)(unsigned long long* base, std::size_t* size, unsigned long long pointer);
  void* entry = nullptr;
#if CUDART_VERSION >= 12050
  auto status = cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &entry, 12000,
                                                 cudaEnableDefault, nullptr);
#else
  auto status = cudaGetDriverEntryPoint("cuMemGetAddressRange", &entry, cudaEnableDefault);
#endif
  if (status != cudaSuccess || !entry) {
    return cuda_error("cannot reach the driver's cuMemGetAddressRange", status);
  }
  unsigned long long base = 0;
  std::size_t size = 0;
  auto get_range = reinterpret_cast<GetAddressRange>(entry);
  if (int result = get_range(&base, &size, reinterpret_cast<unsigned long long>(pointer));
      result != 0) {
    return Error(StatusCode::Internal,
                 "cuMemGetAddressRange failed (CUDA driver error " + std::to_string(result) + ")");
  }
  // The handle may name memory inside the allocation: what lies from it to the end counts.
  return size - static_cast<std::size_t>(reinterpret_cast<unsigned long long>(pointer) - base);
}

Result<std::shared_ptr<void>> open_ipc(const std::string& raw_handle, std::int64_t device_id,
                                       std::uint64_t byte_size, std::uint8_t** device_pointer) {
  if (raw_handle.size() != sizeof(cudaIpcMemHandle_t)) {
    return Error(StatusCode::InvalidArgument,
                 "a CUDA IPC handle has " + std::to_string(sizeof(cudaIpcMemHandle_t)) +
                     " bytes, got " + std::to_string(raw_handle.size()));
  }
  if (auto ok = use_device(device_id); !ok) return ok.error();
  cudaIpcMemHandle_t handle;
  std::memcpy(&handle, raw_handle.data(), sizeof handle);
  void* pointer = nullptr;
  if (auto status = cudaIpcOpenMemHandle(&pointer, handle, cudaIpcMemLazyEnablePeerAccess);
      status != cudaSuccess) {
    return Error(StatusCode::InvalidArgument,
                 std::string("cannot open the CUDA IPC handle: ") + cudaGetErrorString(status));
  }
  std::shared_ptr<void> owner(pointer, [device_id](void* p) {
    cudaSetDevice(static_cast<int>(device_id));
    cudaIpcCloseMemHandle(p);
  });
  // Triton's check (RegisterCUDASharedMemory: CheckCudaSharedMemoryRegionSize): a region may
  // not declare more bytes than its allocation holds; refused with INVALID_ARGUMENT.
  auto available_bytes = allocation_size(pointer);
  if (!available_bytes) return available_bytes.error();
  if (byte_size > *available_bytes) {
    return Error(StatusCode::InvalidArgument, "the CUDA allocation behind this handle holds " +
                                                  std::to_string(*available_bytes) +
                                                  " bytes, not the " + std::to_string(byte_size) +
                                                  " declared");
  }
  *device_pointer = static_cast<std::uint8_t*>(pointer);
  return owner;
}

Result<void> to_host(void* host, const void* device, std::size_t bytes, std::int64_t device_id) {
  if (auto ok = use_device(device_id); !ok) return ok;
  if (auto status = cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost);
      status != cudaSuccess) {
    return cuda_error("cannot copy from the CUDA region", status);
  }
  return {};
}

Result<void> to_device(void* device, const void* host, std::size_t bytes, std::int64_t device_id) {
  if (auto ok = use_device(device_id); !ok) return ok;
  if (auto status = cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
      status != cudaSuccess) {
    return cuda_error("cannot copy into the CUDA region", status);
  }
  // From pageable memory, cudaMemcpy returns once the bytes are staged, before the DMA into
  // the region is done (CUDA's API docs, "API synchronization behavior"): the client, another
  // process, reads the region as soon as the answer arrives, so the copy must be complete
  // first. Seen on an H200: without this, a client read the previous request's output.
  if (auto status = cudaStreamSynchronize(nullptr); status != cudaSuccess) {
    return cuda_error("cannot finish the copy into the CUDA region", status);
  }
  return {};
}

#else

namespace {
Error not_built() {
  return Error(StatusCode::Unavailable,
               "this server was built without CUDA: CUDA shared memory is not supported; use "
               "system shared memory");
}
}  // namespace

bool available() { return false; }
Result<std::shared_ptr<void>> open_ipc(const std::string&, std::int64_t, std::uint64_t,
                                       std::uint8_t**) {
  return not_built();
}
Result<void> to_host(void*, const void*, std::size_t, std::int64_t) { return not_built(); }
Result<void> to_device(void*, const void*, std::size_t, std::int64_t) { return not_built(); }

#endif

}  // namespace sonic::server::cuda
