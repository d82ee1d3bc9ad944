#include "ort_api.hpp"

namespace sonic::onnx::ort {

namespace {

template <typename Function>
void take(Function& member, const AnyFunction* table, int slot) {
  member = reinterpret_cast<Function>(table[slot]);
}

}  // namespace

// Each slot is the function's position in ONNX Runtime's OrtApi, counted from 0 (CreateStatus).
void bind(Api& api, const AnyFunction* table) {
  take(api.GetErrorCode, table, 1);
  take(api.GetErrorMessage, table, 2);
  take(api.CreateEnv, table, 3);
  take(api.DisableTelemetryEvents, table, 6);
  take(api.CreateSession, table, 7);
  take(api.Run, table, 9);
  take(api.CreateSessionOptions, table, 10);
  take(api.SetSessionExecutionMode, table, 13);
  take(api.EnableMemPattern, table, 16);
  take(api.DisableMemPattern, table, 17);
  take(api.EnableCpuMemArena, table, 18);
  take(api.DisableCpuMemArena, table, 19);
  take(api.SetSessionGraphOptimizationLevel, table, 23);
  take(api.SetIntraOpNumThreads, table, 24);
  take(api.SetInterOpNumThreads, table, 25);
  take(api.SessionGetInputCount, table, 30);
  take(api.SessionGetOutputCount, table, 31);
  take(api.SessionGetInputTypeInfo, table, 33);
  take(api.SessionGetOutputTypeInfo, table, 34);
  take(api.SessionGetInputName, table, 36);
  take(api.SessionGetOutputName, table, 37);
  take(api.CreateTensorAsOrtValue, table, 48);
  take(api.CreateTensorWithDataAsOrtValue, table, 49);
  take(api.GetTensorMutableData, table, 51);
  take(api.FillStringTensor, table, 52);
  take(api.GetStringTensorDataLength, table, 53);
  take(api.GetStringTensorContent, table, 54);
  take(api.CastTypeInfoToTensorInfo, table, 55);
  take(api.GetOnnxTypeFromTypeInfo, table, 56);
  take(api.GetTensorElementType, table, 60);
  take(api.GetDimensionsCount, table, 61);
  take(api.GetDimensions, table, 62);
  take(api.GetTensorShapeElementCount, table, 64);
  take(api.GetTensorTypeAndShape, table, 65);
  take(api.CreateCpuMemoryInfo, table, 69);
  take(api.AllocatorFree, table, 76);
  take(api.GetAllocatorWithDefaultOptions, table, 78);
  take(api.ReleaseEnv, table, 92);
  take(api.ReleaseStatus, table, 93);
  take(api.ReleaseMemoryInfo, table, 94);
  take(api.ReleaseSession, table, 95);
  take(api.ReleaseValue, table, 96);
  take(api.ReleaseTypeInfo, table, 98);
  take(api.ReleaseTensorTypeAndShapeInfo, table, 99);
  take(api.ReleaseSessionOptions, table, 100);
  take(api.AddSessionConfigEntry, table, 130);
}

}  // namespace sonic::onnx::ort
