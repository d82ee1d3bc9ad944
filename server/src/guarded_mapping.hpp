// Shared memory a client owns, mapped by the server: the client may shrink the object under us
// (ftruncate), and a touch past its new end raises SIGBUS, which would kill the server. While
// such mappings exist, a SIGBUS inside one of them replaces the whole mapping with zero pages
// (the touch goes on, harmlessly) and marks it truncated; the request that used it then fails
// and the region is dropped. Faults anywhere else go to the handler that was there before (by
// default, the process dies as it would have).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "sonic/error.hpp"

namespace sonic::server {

class GuardedMapping {
 public:
  /// Mappings that can exist at once in a process (each region is one).
  static constexpr std::size_t kMaxMappings = 16384;

  /// Maps `length` bytes at `offset` (page-aligned) of the open object `fd`, read and write.
  /// RESOURCE_EXHAUSTED when the process cannot map more, INVALID_ARGUMENT when mmap refuses.
  static Result<std::shared_ptr<GuardedMapping>> map(int fd, std::size_t length, off_t offset);

  ~GuardedMapping();
  GuardedMapping(const GuardedMapping&) = delete;
  GuardedMapping& operator=(const GuardedMapping&) = delete;

  std::uint8_t* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return length_; }
  /// Whether a touch faulted because the object shrank: the mapping holds zeros since.
  bool truncated() const noexcept;

 private:
  GuardedMapping(std::uint8_t* data, std::size_t length, std::size_t slot)
      : data_(data), length_(length), slot_(slot) {}

  std::uint8_t* data_;
  std::size_t length_;
  std::size_t slot_;  // in the table the signal handler reads
};

}  // namespace sonic::server
