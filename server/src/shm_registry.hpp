// The server half of Triton's shared memory extension: regions clients register, and the
// binding of request inputs and outputs to them, every name, offset and size checked. Who may
// register what, how many, and how long it lasts is sonic's (docs/shared-memory-security.md).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sonic/request.hpp"
#include "sonic/server.hpp"

namespace sonic::server {

class GuardedMapping;

/// Who registers or uses regions: a connection, and the local user on its other end.
struct ShmClient {
  /// Who registrations count under, and go with: a gRPC or TCP connection (unique in the
  /// process; its regions go when it ends), or an HTTP client's user (http_registrant()).
  std::uint64_t connection = 0;
  /// The user the kernel says owns the peer's socket; nothing for a peer that is not local.
  std::optional<uid_t> user;
};

/// The registrant of regions registered over HTTP: the client's user, or one for every client
/// of no known user. Never a connection's id (those count up from 1), so nothing drops them
/// but an unregister or the server's end; the per-connection bounds bound them per user.
inline std::uint64_t http_registrant(std::optional<uid_t> user) {
  constexpr std::uint64_t kHttp = std::uint64_t{1} << 63;
  return kHttp | (user ? static_cast<std::uint64_t>(*user) : std::uint64_t{1} << 32);
}

/// A registered region as the server maps it.
struct SharedRegion {
  std::string name;
  std::string key;              ///< system: the shm_open key
  std::uint64_t offset = 0;     ///< system: where the region starts in the shm object
  std::uint64_t byte_size = 0;  ///< usable bytes from `base`
  bool cuda = false;
  std::int64_t device_id = 0;    ///< CUDA: the device of the memory
  std::uint8_t* base = nullptr;  ///< host mapping (system) or device pointer (CUDA)
  std::uint64_t connection = 0;  ///< the connection that registered it
  /// System: the mapping (it may be truncated by its owner, see GuardedMapping). CUDA: closes
  /// the IPC handle. Released when the last user goes.
  std::shared_ptr<void> mapping;
  std::shared_ptr<GuardedMapping> guarded;  ///< system regions: the same mapping, typed
  /// Whether the object shrank under a use of the region.
  bool truncated() const;
};

/// Where one requested output must be written.
struct OutputTarget {
  std::string output;
  std::shared_ptr<SharedRegion> region;
  std::uint64_t offset = 0;
  std::uint64_t byte_size = 0;
};

/// The regions one request uses: those its inputs view, and those its outputs go to.
struct ShmUse {
  std::vector<OutputTarget> outputs;
  std::vector<std::shared_ptr<SharedRegion>> inputs;
  bool empty() const noexcept { return outputs.empty() && inputs.empty(); }
};

/// Thread-safe. A region stays mapped while a request that uses it runs, even if it is
/// unregistered meanwhile.
class SharedMemoryRegistry {
 public:
  SharedMemoryRegistry(SharedMemoryAccess access, const ServerLimits& limits)
      : access_(access), limits_(limits) {}

  /// Maps `byte_size` bytes at `offset` of the POSIX shared memory object `key` for `client`.
  /// PERMISSION_DENIED when the client may not (not its object, or not a local client);
  /// ALREADY_EXISTS for a name the client's user has in use; RESOURCE_EXHAUSTED past a limit;
  /// INVALID_ARGUMENT for a key that cannot be opened or an offset/size beyond the object.
  Result<void> register_system(const ShmClient& client, const std::string& name,
                               const std::string& key, std::uint64_t offset,
                               std::uint64_t byte_size);
  /// Opens a cudaIpcMemHandle_t (the raw bytes) on `device_id`. INVALID_ARGUMENT, in Triton's
  /// words, when it cannot: no usable device or no CUDA build ("GPUs not supported"), a handle
  /// that opens nothing, an allocation smaller than `byte_size`.
  Result<void> register_cuda(const ShmClient& client, const std::string& name,
                             const std::string& raw_handle, std::int64_t device_id,
                             std::uint64_t byte_size);
  /// Unregisters one region of that kind the client can see, or every such region for an empty
  /// name. Unknown names are ignored, as Triton does.
  void unregister(const ShmClient& client, const std::string& name, bool cuda);
  /// Regions of one kind the client can see: all, or the one named (NOT_FOUND when unknown).
  Result<std::vector<SharedRegion>> status(const ShmClient& client, const std::string& name,
                                           bool cuda) const;
  /// Every region the connection registered goes (it ended).
  void drop_connection(std::uint64_t connection);
  /// Regions registered now, by everyone.
  std::size_t size() const;

  /// Whether any input or requested output of `request` names shared memory.
  static bool uses_shared_memory(const InferRequest& request);
  /// Replaces every input of `request` carrying shared_memory_* parameters by a view of (or,
  /// for CUDA, a host copy of) its bytes, and finds the outputs bound for regions.
  /// INVALID_ARGUMENT for one parameter without the other, a region the client cannot see, an
  /// offset or size outside it, or a size that does not fit the tensor's shape.
  Result<ShmUse> bind(const ShmClient& client, InferRequest& request) const;
  /// Once the model ran: writes the outputs bound for regions there and leaves in the result
  /// only their name, type and shape, plus the parameters that say where they went.
  /// INVALID_ARGUMENT when an output is larger than its space, or when a region the request used
  /// shrank under it (the region is dropped).
  Result<void> complete(const ShmUse& use, InferResult& result);

  /// Whether CUDA regions can be registered (the server was built with CUDA).
  static bool cuda_supported();

 private:
  // Regions are named within a scope: the user's (Owner access) or everyone's (Any).
  using Key = std::pair<std::int64_t, std::string>;
  static constexpr std::int64_t kEveryone = -1;

  Result<std::int64_t> scope_of(const ShmClient& client) const;
  std::int64_t visible_scope(const ShmClient& client) const;
  // Checks the limits and adds the region; ALREADY_EXISTS or RESOURCE_EXHAUSTED otherwise.
  Result<void> add(std::int64_t scope, std::shared_ptr<SharedRegion> region);
  void remove_locked(std::map<Key, std::shared_ptr<SharedRegion>>::iterator it);
  Result<OutputTarget> locate(const ShmClient& client, const std::string& tensor,
                              const Parameters& parameters) const;
  Result<void> check_intact(const ShmUse& use);

  struct Usage {
    std::size_t regions = 0;
    std::uint64_t bytes = 0;
  };

  const SharedMemoryAccess access_;
  const ServerLimits limits_;
  mutable std::mutex mutex_;
  std::map<Key, std::shared_ptr<SharedRegion>> regions_;  // both kinds, one namespace per scope
  std::map<std::uint64_t, Usage> by_connection_;
  Usage total_;
};

}  // namespace sonic::server
