// What a connection has to send, as one gathered write at a time: bytes copied in (protocol
// frames, small runs) and bytes referenced where their owner keeps them (tensors), so that large
// tensors go from their memory to the socket without a copy.
#pragma once

#include <asio.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sonic/detail/export.hpp"

namespace sonic::net {

/// Two batches: the pending one fills while the active one is written. A referenced run is
/// covered by a hold (a shared pointer to whatever owns that memory, or tracks who waits for
/// it): the batch keeps its holds until its write is over, then hands them back, so that the
/// owner learns when the socket no longer reads its bytes. Not thread-safe.
class SONIC_EXPORT GatherWriter {
 public:
  /// Appends a copy of the bytes.
  void copy(const void* data, std::size_t size);
  /// Appends the bytes by reference; `hold` must keep them valid (see keep()).
  void reference(const void* data, std::size_t size);
  /// The pending batch keeps `hold` until it has been written.
  void keep(std::shared_ptr<void> hold);

  /// Whether a write is under way.
  bool writing() const noexcept { return writing_; }
  /// Whether anything waits to be written.
  bool has_pending() const noexcept { return !pending_.spans.empty(); }
  /// Bytes waiting to be written, and being written.
  std::size_t pending_bytes() const noexcept { return pending_.bytes; }
  std::size_t active_bytes() const noexcept { return active_.bytes; }
  /// Bytes copied into the pending batch.
  std::size_t pending_copied_bytes() const noexcept { return pending_.copied.size(); }

  /// Makes the pending batch the active one; its buffers are what to write. Precondition:
  /// !writing().
  const std::vector<asio::const_buffer>& begin_write();
  /// The active write is over (written or failed): its holds, to release.
  std::vector<std::shared_ptr<void>> end_write();
  /// Forgets the pending batch (the connection is gone): its holds, to release.
  std::vector<std::shared_ptr<void>> drop_pending();

 private:
  struct Batch {
    std::string copied;  // every copied run, back to back
    struct Span {
      const std::uint8_t* external;  // null: `offset` into `copied`
      std::size_t offset;
      std::size_t size;
    };
    std::vector<Span> spans;
    std::vector<std::shared_ptr<void>> holds;
    std::vector<asio::const_buffer> buffers;
    std::size_t bytes = 0;
    void clear();
  };

  Batch pending_;  // being filled
  Batch active_;   // being written
  bool writing_ = false;
};

}  // namespace sonic::net
