// sonic's own declarations of the part of ONNX Runtime's C ABI that the ONNX backend calls.
//
// ONNX Runtime's C API is a table of function pointers (its struct OrtApi) that the library hands
// out from OrtGetApiBase()->GetApi(version). The table only ever grows at its end and a slot
// never changes meaning, so a function is named by its slot index and its signature: those are
// facts of the ABI, written here from the API's documentation, and checked by the tests against
// the installed library (a wrong slot cannot pass them). The library is loaded at run time
// (ort_runtime.hpp): sonic builds without ONNX Runtime's headers, which no registry reachable
// from a Debian machine ships.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sonic::onnx::ort {

// The API's opaque handles: declared, never defined.
struct OrtStatus;
struct OrtEnv;
struct OrtSession;
struct OrtSessionOptions;
struct OrtRunOptions;
struct OrtValue;
struct OrtTypeInfo;
struct OrtTensorTypeAndShapeInfo;
struct OrtMemoryInfo;
struct OrtAllocator;

/// The oldest API version whose table holds every slot below: AddSessionConfigEntry, slot 130,
/// the newest used, came with version 5 (slots 127 to 149), so ONNX Runtime 1.5 and later serve
/// it. Asking for a newer version than needed would refuse older libraries for nothing.
inline constexpr std::uint32_t kApiVersion = 5;

/// ONNXTensorElementDataType: the same numbers as onnx.proto's TensorProto.DataType.
enum class ElementType : int {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
};

/// ONNXType: what a graph value is.
enum class ValueKind : int {
  Unknown = 0,
  Tensor = 1,
  Sequence = 2,
  Map = 3,
  Opaque = 4,
  SparseTensor = 5,
  Optional = 6,
};

/// OrtErrorCode.
enum class ErrorCode : int {
  Ok = 0,
  Fail = 1,
  InvalidArgument = 2,
  NoSuchFile = 3,
  NoModel = 4,
  EngineError = 5,
  RuntimeException = 6,
  InvalidProtobuf = 7,
  ModelLoaded = 8,
  NotImplemented = 9,
  InvalidGraph = 10,
  ExecutionProviderFail = 11,
};

/// OrtLoggingLevel.
enum class LoggingLevel : int { Verbose = 0, Info = 1, Warning = 2, Error = 3, Fatal = 4 };

/// GraphOptimizationLevel.
enum class GraphOptimization : int { Disabled = 0, Basic = 1, Extended = 2, All = 99 };

/// ExecutionMode.
enum class ExecutionMode : int { Sequential = 0, Parallel = 1 };

/// OrtAllocatorType and OrtMemType, for CreateCpuMemoryInfo.
enum class AllocatorType : int { Device = 0, Arena = 1 };
enum class MemoryType : int { Default = 0 };

/// The functions sonic calls, each bound from its slot (ort_api.cpp). Every one returning
/// OrtStatus* returns null on success, else a status the caller releases.
struct Api {
  ErrorCode (*GetErrorCode)(const OrtStatus* status);                             // slot 1
  const char* (*GetErrorMessage)(const OrtStatus* status);                        // slot 2
  OrtStatus* (*CreateEnv)(LoggingLevel level, const char* log_id, OrtEnv** out);  // slot 3
  OrtStatus* (*DisableTelemetryEvents)(const OrtEnv* env);                        // slot 6
  OrtStatus* (*CreateSession)(const OrtEnv* env, const char* model_path,
                              const OrtSessionOptions* options, OrtSession** out);  // slot 7
  OrtStatus* (*Run)(OrtSession* session, const OrtRunOptions* run_options,
                    const char* const* input_names, const OrtValue* const* inputs,
                    std::size_t input_count, const char* const* output_names,
                    std::size_t output_count, OrtValue** outputs);  // slot 9
  OrtStatus* (*CreateSessionOptions)(OrtSessionOptions** out);      // slot 10
  OrtStatus* (*SetSessionExecutionMode)(OrtSessionOptions* options,
                                        ExecutionMode mode);     // slot 13
  OrtStatus* (*EnableMemPattern)(OrtSessionOptions* options);    // slot 16
  OrtStatus* (*DisableMemPattern)(OrtSessionOptions* options);   // slot 17
  OrtStatus* (*EnableCpuMemArena)(OrtSessionOptions* options);   // slot 18
  OrtStatus* (*DisableCpuMemArena)(OrtSessionOptions* options);  // slot 19
  OrtStatus* (*SetSessionGraphOptimizationLevel)(OrtSessionOptions* options,
                                                 GraphOptimization level);           // slot 23
  OrtStatus* (*SetIntraOpNumThreads)(OrtSessionOptions* options, int threads);       // slot 24
  OrtStatus* (*SetInterOpNumThreads)(OrtSessionOptions* options, int threads);       // slot 25
  OrtStatus* (*SessionGetInputCount)(const OrtSession* session, std::size_t* out);   // slot 30
  OrtStatus* (*SessionGetOutputCount)(const OrtSession* session, std::size_t* out);  // slot 31
  OrtStatus* (*SessionGetInputTypeInfo)(const OrtSession* session, std::size_t index,
                                        OrtTypeInfo** out);  // slot 33
  OrtStatus* (*SessionGetOutputTypeInfo)(const OrtSession* session, std::size_t index,
                                         OrtTypeInfo** out);  // slot 34
  /// The name is allocated with `allocator`, and freed with AllocatorFree by the caller.
  OrtStatus* (*SessionGetInputName)(const OrtSession* session, std::size_t index,
                                    OrtAllocator* allocator, char** out);  // slot 36
  OrtStatus* (*SessionGetOutputName)(const OrtSession* session, std::size_t index,
                                     OrtAllocator* allocator, char** out);  // slot 37
  /// A tensor whose buffer `allocator` allocates and the value owns.
  OrtStatus* (*CreateTensorAsOrtValue)(OrtAllocator* allocator, const std::int64_t* shape,
                                       std::size_t rank, ElementType type,
                                       OrtValue** out);  // slot 48
  /// A tensor over the caller's buffer, which must outlive the value; never freed by it.
  OrtStatus* (*CreateTensorWithDataAsOrtValue)(const OrtMemoryInfo* info, void* data,
                                               std::size_t byte_size, const std::int64_t* shape,
                                               std::size_t rank, ElementType type,
                                               OrtValue** out);     // slot 49
  OrtStatus* (*GetTensorMutableData)(OrtValue* value, void** out);  // slot 51
  OrtStatus* (*FillStringTensor)(OrtValue* value, const char* const* strings,
                                 std::size_t count);  // slot 52
  /// The total length of a string tensor's elements, without terminators.
  OrtStatus* (*GetStringTensorDataLength)(const OrtValue* value, std::size_t* out);  // slot 53
  /// Copies the elements one after another into `bytes` and each one's start into `offsets`.
  OrtStatus* (*GetStringTensorContent)(const OrtValue* value, void* bytes, std::size_t byte_size,
                                       std::size_t* offsets, std::size_t count);  // slot 54
  /// A view into `info`, valid while it lives; not released.
  OrtStatus* (*CastTypeInfoToTensorInfo)(const OrtTypeInfo* info,
                                         const OrtTensorTypeAndShapeInfo** out);   // slot 55
  OrtStatus* (*GetOnnxTypeFromTypeInfo)(const OrtTypeInfo* info, ValueKind* out);  // slot 56
  OrtStatus* (*GetTensorElementType)(const OrtTensorTypeAndShapeInfo* info,
                                     ElementType* out);  // slot 60
  OrtStatus* (*GetDimensionsCount)(const OrtTensorTypeAndShapeInfo* info,
                                   std::size_t* out);  // slot 61
  /// -1 for a symbolic or unknown dimension.
  OrtStatus* (*GetDimensions)(const OrtTensorTypeAndShapeInfo* info, std::int64_t* dims,
                              std::size_t rank);  // slot 62
  OrtStatus* (*GetTensorShapeElementCount)(const OrtTensorTypeAndShapeInfo* info,
                                           std::size_t* out);  // slot 64
  OrtStatus* (*GetTensorTypeAndShape)(const OrtValue* value,
                                      OrtTensorTypeAndShapeInfo** out);  // slot 65
  OrtStatus* (*CreateCpuMemoryInfo)(AllocatorType allocator, MemoryType memory,
                                    OrtMemoryInfo** out);             // slot 69
  OrtStatus* (*AllocatorFree)(OrtAllocator* allocator, void* block);  // slot 76
  /// The process's CPU allocator: never released.
  OrtStatus* (*GetAllocatorWithDefaultOptions)(OrtAllocator** out);        // slot 78
  void (*ReleaseEnv)(OrtEnv* env);                                         // slot 92
  void (*ReleaseStatus)(OrtStatus* status);                                // slot 93
  void (*ReleaseMemoryInfo)(OrtMemoryInfo* info);                          // slot 94
  void (*ReleaseSession)(OrtSession* session);                             // slot 95
  void (*ReleaseValue)(OrtValue* value);                                   // slot 96
  void (*ReleaseTypeInfo)(OrtTypeInfo* info);                              // slot 98
  void (*ReleaseTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo* info);  // slot 99
  void (*ReleaseSessionOptions)(OrtSessionOptions* options);               // slot 100
  /// A "session.*" key of ONNX Runtime's session options (its config keys header).
  OrtStatus* (*AddSessionConfigEntry)(OrtSessionOptions* options, const char* key,
                                      const char* value);  // slot 130
};

/// One function pointer of the table, whatever its type: the table is read as an array of these.
using AnyFunction = void (*)();

/// Binds every member of `api` from `table`, which GetApi(kApiVersion) returned.
void bind(Api& api, const AnyFunction* table);

/// OrtApiBase, what the library's one exported symbol, OrtGetApiBase, returns.
struct ApiBase {
  const AnyFunction* (*GetApi)(std::uint32_t version);  ///< null for a version it lacks
  const char* (*GetVersionString)();
};

/// The library's entry point's name and type.
inline constexpr const char* kEntryPoint = "OrtGetApiBase";
using EntryPoint = const ApiBase* (*)();

}  // namespace sonic::onnx::ort
