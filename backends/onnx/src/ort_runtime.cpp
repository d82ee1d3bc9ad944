#include "ort_runtime.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

namespace sonic::onnx::ort {

namespace {

// What to do when no library loads: the README's install step, and the explicit path.
constexpr const char* kInstallHint =
    "install ONNX Runtime with scripts/install-onnxruntime.sh (ONNX Runtime's official Linux "
    "build, from npm's onnxruntime-node package), or set SONIC_ONNXRUNTIME_LIBRARY to a "
    "libonnxruntime.so.1 of version 1.5 or later";

std::vector<std::string> candidates() {
  std::vector<std::string> paths;
  if (const char* chosen = std::getenv(kLibraryVariable); chosen && *chosen) {
    paths.emplace_back(chosen);  // an explicit choice: nothing else is tried
    return paths;
  }
#ifdef SONIC_ONNXRUNTIME_BUILD_LIBRARY
  paths.emplace_back(SONIC_ONNXRUNTIME_BUILD_LIBRARY);
#endif
  paths.emplace_back("libonnxruntime.so.1");
  return paths;
}

StatusCode sonic_code(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument:
    case ErrorCode::NoSuchFile:
    case ErrorCode::NoModel:
    case ErrorCode::InvalidProtobuf:
    case ErrorCode::InvalidGraph: return StatusCode::InvalidArgument;
    case ErrorCode::NotImplemented: return StatusCode::Unimplemented;
    default: return StatusCode::Internal;
  }
}

}  // namespace

Result<const Runtime*> Runtime::get() {
  // Loaded once: a failure is remembered too, so that a missing library costs one search.
  static const Result<const Runtime*> runtime = load();
  return runtime;
}

Result<const Runtime*> Runtime::load() {
  std::string tried;
  void* library = nullptr;
  std::string path;
  for (const auto& candidate : candidates()) {
    // RTLD_LOCAL: ONNX Runtime's symbols (its own protobuf among them) stay out of the
    // program's namespace, where they could collide with the libprotobuf a program links.
    library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library) {
      path = candidate;
      break;
    }
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(why ? why : candidate.c_str());
  }
  if (!library) {
    return Error(StatusCode::FailedPrecondition,
                 "ONNX Runtime is not installed (" + tried + "): " + kInstallHint);
  }
  auto entry = reinterpret_cast<EntryPoint>(dlsym(library, kEntryPoint));
  const ApiBase* base = entry ? entry() : nullptr;
  if (!base) {
    return Error(StatusCode::FailedPrecondition,
                 path + " is not ONNX Runtime (no " + kEntryPoint + "): " + kInstallHint);
  }
  const std::string version = base->GetVersionString();
  const AnyFunction* table = base->GetApi(kApiVersion);
  if (!table) {
    return Error(StatusCode::FailedPrecondition,
                 "ONNX Runtime " + version + " at " + path + " does not serve API version " +
                     std::to_string(kApiVersion) + ": " + kInstallHint);
  }
  // Never freed once loaded: the library is never unloaded, and a session may be released
  // during exit.
  std::unique_ptr<Runtime> runtime(new Runtime());
  bind(runtime->api_, table);
  const Api& api = runtime->api_;
  // Fatal errors only: what fails reaches the caller as a status, which the server logs and
  // answers; ONNX Runtime's own log would repeat each failed run on stderr, and its warnings (an
  // unused initializer, a node it cannot place) fill a server's log for every model loaded.
  if (auto ok = runtime->check(api.CreateEnv(LoggingLevel::Fatal, "sonic", &runtime->env_),
                               "creating ONNX Runtime's environment");
      !ok) {
    return ok.error();
  }
  // Telemetry is off in Linux builds; the call makes that explicit, whatever the build.
  (void)runtime->check(api.DisableTelemetryEvents(runtime->env_), "");
  if (auto ok = runtime->check(api.CreateCpuMemoryInfo(AllocatorType::Device, MemoryType::Default,
                                                       &runtime->cpu_memory_),
                               "describing CPU memory");
      !ok) {
    return ok.error();
  }
  if (auto ok = runtime->check(api.GetAllocatorWithDefaultOptions(&runtime->allocator_),
                               "getting ONNX Runtime's CPU allocator");
      !ok) {
    return ok.error();
  }
  return runtime.release();
}

Result<void> Runtime::check(OrtStatus* status, std::string_view what) const {
  if (!status) return {};
  std::string message = what.empty() ? "" : std::string(what) + ": ";
  message += api_.GetErrorMessage(status);
  const StatusCode code = sonic_code(api_.GetErrorCode(status));
  api_.ReleaseStatus(status);
  return Error(code, std::move(message));
}

}  // namespace sonic::onnx::ort
