// Memory for received tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "sonic/detail/export.hpp"

namespace sonic::protocol {

/// A buffer of `bytes` bytes for a received tensor, aligned for any element type, released when
/// the last owner lets go. Pages are committed as they are written, so a peer that announces a
/// big tensor and stops costs address space, not memory. Throws std::bad_alloc when even the
/// address space cannot be had.
///
/// Tensors above 32 MiB get their own mapping with transparent huge pages: the C allocator maps
/// such blocks afresh for every message anyway, and faulting them in 4 KiB at a time cost about
/// a quarter of the CPU of a 64 MiB round trip. Smaller ones come from the allocator, whose heap
/// reuses freed blocks without new page faults.
SONIC_EXPORT std::shared_ptr<std::uint8_t> allocate_tensor_buffer(std::size_t bytes);

}  // namespace sonic::protocol
