// The server half of Triton's shared memory extension: regions clients register, and the
// binding of request inputs and outputs to them, every name, offset and size checked.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sonic/request.hpp"

namespace sonic::server {

/// A registered region as the server maps it.
struct SharedRegion {
  std::string name;
  std::string key;              ///< system: the shm_open key
  std::uint64_t offset = 0;     ///< system: where the region starts in the shm object
  std::uint64_t byte_size = 0;  ///< usable bytes from `base`
  bool cuda = false;
  std::int64_t device_id = 0;     ///< CUDA: the device of the memory
  std::uint8_t* base = nullptr;   ///< host mapping (system) or device pointer (CUDA)
  std::shared_ptr<void> mapping;  ///< unmaps or closes the IPC handle when the last user goes
};

/// Where one requested output must be written.
struct OutputTarget {
  std::string output;
  std::shared_ptr<SharedRegion> region;
  std::uint64_t offset = 0;
  std::uint64_t byte_size = 0;
};

/// Thread-safe. A region stays mapped while a request that uses it runs, even if it is
/// unregistered meanwhile.
class SharedMemoryRegistry {
 public:
  /// Maps `byte_size` bytes at `offset` of the POSIX shared memory object `key`.
  /// ALREADY_EXISTS for a name in use; INVALID_ARGUMENT for a key that cannot be opened or an
  /// offset/size beyond the object.
  Result<void> register_system(const std::string& name, const std::string& key,
                               std::uint64_t offset, std::uint64_t byte_size);
  /// Opens a cudaIpcMemHandle_t (the raw bytes) on `device_id`. UNAVAILABLE when this server
  /// was built without CUDA or has no such device.
  Result<void> register_cuda(const std::string& name, const std::string& raw_handle,
                             std::int64_t device_id, std::uint64_t byte_size);
  /// Unregisters one region of that kind, or every region of that kind for an empty name.
  /// Unknown names are ignored, as Triton does.
  void unregister(const std::string& name, bool cuda);
  /// Regions of one kind: all, or the one named (NOT_FOUND when unknown).
  Result<std::vector<SharedRegion>> status(const std::string& name, bool cuda) const;

  /// Replaces every input carrying shared_memory_* parameters by a view of (or, for CUDA, a
  /// host copy of) its bytes. INVALID_ARGUMENT for one parameter without the other, an unknown
  /// region, an offset or size outside it, or a size that does not fit the tensor's shape.
  Result<InferRequest> bind_inputs(const InferRequest& request) const;
  /// The requested outputs that go to regions, checked like inputs.
  Result<std::vector<OutputTarget>> output_targets(const InferRequest& request) const;
  /// Writes those outputs into their regions and leaves in the result only their name, type
  /// and shape plus the parameters that say where they went. INVALID_ARGUMENT when an output
  /// is larger than its region space.
  Result<void> place_outputs(InferResult& result, const std::vector<OutputTarget>& targets) const;

  /// Whether CUDA regions can be registered (the server was built with CUDA).
  static bool cuda_supported();

 private:
  Result<OutputTarget> locate(const std::string& tensor, const Parameters& parameters) const;

  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<SharedRegion>> regions_;  // both kinds, one namespace
};

}  // namespace sonic::server
