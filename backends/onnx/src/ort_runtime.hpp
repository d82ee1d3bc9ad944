// The process's ONNX Runtime: the library loaded at run time, its API table bound, one
// environment (ONNX Runtime's logging and global thread state) for every session.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "ort_api.hpp"
#include "sonic/error.hpp"

namespace sonic::onnx::ort {

/// Where the library is looked for, in order: the file named by this environment variable; the
/// one the build found (CMake's SONIC_ONNXRUNTIME_LIBRARY); libonnxruntime.so.1 on the dynamic
/// loader's search path (scripts/install-onnxruntime.sh puts it in /usr/local/lib).
inline constexpr const char* kLibraryVariable = "SONIC_ONNXRUNTIME_LIBRARY";

class Runtime {
 public:
  /// The runtime, loaded on the first call; later calls answer the same (or the same error).
  /// FAILED_PRECONDITION when no library loads, naming what was tried and how to install it.
  /// Thread-safe. The library stays loaded until the process exits: sessions may outlive any
  /// owner that could unload it.
  static Result<const Runtime*> get();

  const Api& api() const noexcept { return api_; }
  const OrtEnv* env() const noexcept { return env_; }
  /// Describes caller-owned CPU buffers handed to CreateTensorWithDataAsOrtValue.
  const OrtMemoryInfo* cpu_memory() const noexcept { return cpu_memory_; }
  /// The CPU allocator for names and tensors ONNX Runtime allocates for sonic.
  OrtAllocator* allocator() const noexcept { return allocator_; }

  /// Nothing for a null status; otherwise the status as an Error, `what` first, and released.
  Result<void> check(OrtStatus* status, std::string_view what) const;

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

 private:
  Runtime() = default;
  static Result<const Runtime*> load();

  Api api_{};
  OrtEnv* env_ = nullptr;
  OrtMemoryInfo* cpu_memory_ = nullptr;
  OrtAllocator* allocator_ = nullptr;
};

/// Releases a handle of type T through `release`, the API's member that releases a T.
template <typename T, auto release>
struct Releaser {
  const Api* api = nullptr;
  void operator()(T* handle) const {
    if (handle) (api->*release)(handle);
  }
};

using SessionHandle = std::unique_ptr<OrtSession, Releaser<OrtSession, &Api::ReleaseSession>>;
using SessionOptionsHandle =
    std::unique_ptr<OrtSessionOptions, Releaser<OrtSessionOptions, &Api::ReleaseSessionOptions>>;
using ValueHandle = std::unique_ptr<OrtValue, Releaser<OrtValue, &Api::ReleaseValue>>;
using TypeInfoHandle = std::unique_ptr<OrtTypeInfo, Releaser<OrtTypeInfo, &Api::ReleaseTypeInfo>>;
using TensorInfoHandle =
    std::unique_ptr<OrtTensorTypeAndShapeInfo,
                    Releaser<OrtTensorTypeAndShapeInfo, &Api::ReleaseTensorTypeAndShapeInfo>>;

}  // namespace sonic::onnx::ort
