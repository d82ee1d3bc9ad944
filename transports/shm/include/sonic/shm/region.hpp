// sonic::shm — memory a grpc+shm:// client sends to a server on the same host without copying:
// system shared memory the caller fills in place, and CUDA device memory shared by IPC handle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sonic/detail/export.hpp"
#include "sonic/request.hpp"
#include "sonic/tensor.hpp"

namespace sonic::shm {

/// A POSIX shared memory region owned by this process. Build input tensors in it and a
/// grpc+shm:// client sends only their place (region, offset, size): no byte is copied. Each
/// server it goes to registers it once; it is unregistered when the client goes away, and
/// unlinked when the last copy of the buffer (or of a tensor viewing it) is gone.
///
///   sonic::shm::SharedBuffer buffer(n * sizeof(float));
///   float* x = buffer.as<float>();  fill(x, n);
///   client.infer(sonic::InferRequest("m").input("INPUT0", buffer.tensor(DataType::Fp32, {1, n})));
class SONIC_EXPORT SharedBuffer {
 public:
  /// Creates and maps a region of at least `bytes` bytes. Throws sonic::Error(Unavailable)
  /// when the system refuses (no /dev/shm, or its size limit).
  explicit SharedBuffer(std::size_t bytes);

  std::uint8_t* data() const noexcept;
  std::size_t size() const noexcept;
  template <typename T>
  T* as() const noexcept {
    return reinterpret_cast<T*>(data());
  }
  /// A tensor viewing `offset` onwards; it keeps the region alive. Throws
  /// sonic::Error(InvalidArgument) when the shape does not fit in the buffer.
  Tensor tensor(DataType type, Shape shape, std::size_t offset = 0) const;
  /// The region's name, as servers know it.
  const std::string& name() const noexcept;

  struct Region;

 private:
  std::shared_ptr<Region> region_;
};

/// Device memory on one GPU, shared with a server on this host through a CUDA IPC handle
/// (Triton's CudaSharedMemoryRegister). sonic never reads it on the host: attach parameters()
/// to an input given as Tensor::descriptor(...) and to requested outputs, and the client
/// registers the region with each server it uses. The server, another process, reads the
/// inputs as soon as the request arrives: the writes into them must be complete before it is
/// sent (synchronize the stream that wrote them; a cudaMemcpy from pageable memory returns
/// before its DMA is done). Outputs are complete when the result arrives.
///
///   sonic::shm::CudaBuffer gpu(bytes);            // cudaMemcpy into gpu.device_pointer(),
///   cudaDeviceSynchronize();                      // ... done before the request goes
///   request.input("INPUT0", sonic::Tensor::descriptor(DataType::Fp32, {1, n}),
///                 gpu.parameters(0, n * 4))
///          .output("OUTPUT0", gpu.parameters(n * 4, n * 4));
class SONIC_EXPORT CudaBuffer {
 public:
  /// Allocates `bytes` on `device`. Throws sonic::Error(Unavailable) when sonic was built
  /// without CUDA or the device is not usable.
  explicit CudaBuffer(std::size_t bytes, int device = 0);

  void* device_pointer() const noexcept;
  std::size_t size() const noexcept;
  int device() const noexcept;
  const std::string& name() const noexcept;
  /// Parameters placing a tensor at `offset`, `bytes` long, in this region. Throws
  /// sonic::Error(InvalidArgument) when that does not fit.
  Parameters parameters(std::size_t offset, std::size_t bytes) const;

  /// Whether this build has CUDA and a device is usable now.
  static bool available();

  struct Region;

 private:
  std::shared_ptr<Region> region_;
};

}  // namespace sonic::shm
