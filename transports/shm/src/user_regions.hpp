// The regions users allocate (SharedBuffer, CudaBuffer), known process-wide by name and by
// address, so that a client finds them in the tensors and parameters of a request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace sonic::shm {

/// What a server needs to register a user region, and where it is here.
struct UserRegion {
  std::string name;
  bool cuda = false;
  std::string key;         ///< system: the shm_open key
  std::string ipc_handle;  ///< CUDA: the bytes of its cudaIpcMemHandle_t
  int device = 0;          ///< CUDA: its device
  std::uint8_t* base = nullptr;
  std::size_t size = 0;
};

/// Adds a region (the directory holds it weakly: it leaves when its owner goes).
void publish(const std::shared_ptr<const UserRegion>& region);
/// The live region of that name, or null.
std::shared_ptr<const UserRegion> find_region(const std::string& name);
/// The live system region holding [data, data + bytes), or null; `offset` receives the place.
std::shared_ptr<const UserRegion> region_holding(const void* data, std::size_t bytes,
                                                 std::size_t* offset);

}  // namespace sonic::shm
