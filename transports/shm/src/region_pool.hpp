// The regions a grpc+shm:// transport copies inputs into and receives outputs in: created on
// demand in power-of-two sizes, registered with the server once, and reused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "system_region.hpp"

namespace sonic::shm {

class RegionPool;

/// One region, lent to one request at a time. Returned to the pool when the last holder (the
/// request, or an output tensor viewing it) lets go.
struct Lease {
  SystemRegion* region = nullptr;
  std::shared_ptr<RegionPool> pool;
  bool registered = false;  ///< the server knows the region (as of the pool's generation)
};

/// Thread-safe.
class RegionPool : public std::enable_shared_from_this<RegionPool> {
 public:
  /// At most `max_bytes` of regions in all; none smaller than `min_region_bytes`.
  RegionPool(std::size_t max_bytes, std::size_t min_region_bytes)
      : max_bytes_(max_bytes), min_region_bytes_(min_region_bytes) {}

  /// A free region of at least `bytes` bytes, created if needed. Null when the pool is at its
  /// limit (the caller sends without shared memory) or the system refuses a new region.
  std::shared_ptr<Lease> acquire(std::size_t bytes);
  /// Marks that the lease's region is registered with the server.
  void mark_registered(const Lease& lease);
  /// The server lost its registrations (a restart): every region must register again.
  void forget_registrations();
  /// Names of the regions registered now (to unregister them at the end).
  std::vector<std::string> registered_names() const;
  /// Registered regions dropped to make room since the last call: the server must forget them.
  std::vector<std::string> take_evicted();
  /// Bytes of regions in existence (free and lent).
  std::size_t bytes() const;

 private:
  struct Entry {
    std::unique_ptr<SystemRegion> region;
    bool registered = false;
    bool lent = false;
  };
  void give_back(SystemRegion* region);

  const std::size_t max_bytes_;
  const std::size_t min_region_bytes_;
  mutable std::mutex mutex_;
  std::size_t bytes_ = 0;
  std::vector<Entry> entries_;
  std::vector<std::string> evicted_;
};

}  // namespace sonic::shm
