// CudaBuffer: device memory exported through a CUDA IPC handle. Compiled with CUDA when the
// toolkit is found; without it, constructing one says so.
#include <string>

#include "sonic/shm/region.hpp"
#include "user_regions.hpp"

#ifdef SONIC_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace sonic::shm {

struct CudaBuffer::Region {
  UserRegion entry;
  ~Region() {
#ifdef SONIC_WITH_CUDA
    if (entry.base) {
      cudaSetDevice(entry.device);
      cudaFree(entry.base);
    }
#endif
  }
};

bool CudaBuffer::available() {
#ifdef SONIC_WITH_CUDA
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
  return false;
#endif
}

CudaBuffer::CudaBuffer(std::size_t bytes, int device) : region_(std::make_shared<Region>()) {
#ifdef SONIC_WITH_CUDA
  auto fail = [&](const char* what, cudaError_t status) {
    throw Error(StatusCode::Unavailable, std::string(what) + " on CUDA device " +
                                             std::to_string(device) + ": " +
                                             cudaGetErrorString(status));
  };
  if (auto status = cudaSetDevice(device); status != cudaSuccess) fail("cannot select", status);
  void* pointer = nullptr;
  if (auto status = cudaMalloc(&pointer, bytes == 0 ? 1 : bytes); status != cudaSuccess) {
    fail("cannot allocate", status);
  }
  region_->entry.base = static_cast<std::uint8_t*>(pointer);
  region_->entry.size = bytes;
  region_->entry.device = device;
  region_->entry.cuda = true;
  cudaIpcMemHandle_t handle;
  if (auto status = cudaIpcGetMemHandle(&handle, pointer); status != cudaSuccess) {
    fail("cannot export an IPC handle", status);
  }
  region_->entry.ipc_handle.assign(reinterpret_cast<const char*>(&handle), sizeof handle);
  static int counter = 0;
  region_->entry.name = "sonic-cuda-" + std::to_string(reinterpret_cast<std::uintptr_t>(pointer)) +
                        "-" + std::to_string(counter++);
  publish(std::shared_ptr<const UserRegion>(region_, &region_->entry));
#else
  (void)bytes;
  (void)device;
  throw Error(StatusCode::Unavailable,
              "sonic was built without CUDA: CudaBuffer is not available (install the CUDA "
              "toolkit and rebuild, or use SharedBuffer)");
#endif
}

void* CudaBuffer::device_pointer() const noexcept { return region_->entry.base; }
std::size_t CudaBuffer::size() const noexcept { return region_->entry.size; }
int CudaBuffer::device() const noexcept { return region_->entry.device; }
const std::string& CudaBuffer::name() const noexcept { return region_->entry.name; }

Parameters CudaBuffer::parameters(std::size_t offset, std::size_t bytes) const {
  if (offset > size() || bytes > size() - offset) {
    throw Error(StatusCode::InvalidArgument, std::to_string(bytes) + " bytes at offset " +
                                                 std::to_string(offset) +
                                                 " do not fit in CUDA buffer '" + name() + "' of " +
                                                 std::to_string(size()) + " bytes");
  }
  Parameters where;
  where["shared_memory_region"] = name();
  where["shared_memory_byte_size"] = static_cast<std::int64_t>(bytes);
  where["shared_memory_offset"] = static_cast<std::int64_t>(offset);
  return where;
}

}  // namespace sonic::shm
