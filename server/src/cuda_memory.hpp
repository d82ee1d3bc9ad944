// Device memory shared between processes through CUDA IPC handles: what the server needs to
// use a client's CUDA shared memory region. Without CUDA at build time every call says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sonic/error.hpp"

namespace sonic::server::cuda {

/// Whether CUDA shared memory can be served: built with CUDA, and a device is usable.
bool available();

/// Opens another process's allocation from the bytes of its cudaIpcMemHandle_t, refusing one
/// smaller than the `byte_size` the client declares (the server would read and write past it).
/// The pointer stays valid while the returned owner lives.
Result<std::shared_ptr<void>> open_ipc(const std::string& raw_handle, std::int64_t device_id,
                                       std::uint64_t byte_size, std::uint8_t** device_pointer);

/// Copies between device memory (on `device_id`) and host memory.
Result<void> to_host(void* host, const void* device, std::size_t bytes, std::int64_t device_id);
Result<void> to_device(void* device, const void* host, std::size_t bytes, std::int64_t device_id);

}  // namespace sonic::server::cuda
