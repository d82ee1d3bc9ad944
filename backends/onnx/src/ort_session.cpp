#include "ort_session.hpp"

namespace sonic::onnx::ort {

namespace {

Result<SessionOptionsHandle> session_options(const Runtime& runtime,
                                             const SessionSettings& settings) {
  const Api& api = runtime.api();
  OrtSessionOptions* raw = nullptr;
  if (auto ok = runtime.check(api.CreateSessionOptions(&raw), "creating session options"); !ok) {
    return ok.error();
  }
  SessionOptionsHandle options(raw, {&api});
  OrtStatus* statuses[] = {
      api.SetIntraOpNumThreads(raw, settings.intra_op_threads),
      api.SetInterOpNumThreads(raw, settings.inter_op_threads),
      api.SetSessionExecutionMode(raw, settings.execution_mode),
      api.SetSessionGraphOptimizationLevel(raw, settings.optimization),
      settings.memory_arena ? api.EnableCpuMemArena(raw) : api.DisableCpuMemArena(raw),
      settings.memory_pattern ? api.EnableMemPattern(raw) : api.DisableMemPattern(raw),
  };
  Result<void> first_failure;
  for (OrtStatus* status : statuses) {
    auto ok = runtime.check(status, "setting session options");
    if (!ok && first_failure) first_failure = ok.error();  // later statuses are released too
  }
  if (!first_failure) return first_failure.error();
  for (const auto& [key, value] : settings.entries) {
    if (auto ok = runtime.check(api.AddSessionConfigEntry(raw, key.c_str(), value.c_str()),
                                "session option '" + key + "'");
        !ok) {
      return ok.error();
    }
  }
  return options;
}

// The description of one input (or output: `output` true) of `session`.
Result<ValueInfo> value_info(const Runtime& runtime, const OrtSession* session, std::size_t index,
                             bool output) {
  const Api& api = runtime.api();
  ValueInfo info;
  char* name = nullptr;
  auto named =
      runtime.check(output ? api.SessionGetOutputName(session, index, runtime.allocator(), &name)
                           : api.SessionGetInputName(session, index, runtime.allocator(), &name),
                    "reading the graph's names");
  if (!named) return named.error();
  info.name = name;
  (void)runtime.check(api.AllocatorFree(runtime.allocator(), name), "");
  OrtTypeInfo* raw_type = nullptr;
  auto typed = runtime.check(output ? api.SessionGetOutputTypeInfo(session, index, &raw_type)
                                    : api.SessionGetInputTypeInfo(session, index, &raw_type),
                             "reading the graph's types");
  if (!typed) return typed.error();
  TypeInfoHandle type(raw_type, {&api});
  if (auto ok = runtime.check(api.GetOnnxTypeFromTypeInfo(raw_type, &info.kind), "");
      !ok || info.kind != ValueKind::Tensor) {
    return info;  // not a tensor: the backend says why it cannot serve it
  }
  const OrtTensorTypeAndShapeInfo* tensor = nullptr;  // a view into `type`
  std::size_t rank = 0;
  auto described = runtime.check(api.CastTypeInfoToTensorInfo(raw_type, &tensor), "");
  if (described) described = runtime.check(api.GetTensorElementType(tensor, &info.element), "");
  if (described) described = runtime.check(api.GetDimensionsCount(tensor, &rank), "");
  info.shape.resize(rank);
  if (described) {
    described = runtime.check(api.GetDimensions(tensor, info.shape.data(), rank), "");
  }
  if (!described) return described.error();
  for (auto& d : info.shape) d = d < 0 ? -1 : d;
  return info;
}

}  // namespace

Result<Session> Session::open(const Runtime& runtime, const std::string& model_path,
                              const SessionSettings& settings) {
  auto options = session_options(runtime, settings);
  if (!options) return options.error();
  OrtSession* raw = nullptr;
  if (auto ok = runtime.check(
          runtime.api().CreateSession(runtime.env(), model_path.c_str(), options->get(), &raw),
          "ONNX Runtime cannot load the model");
      !ok) {
    return ok.error();
  }
  Session session(runtime, SessionHandle(raw, {&runtime.api()}));
  if (auto ok = session.describe(); !ok) return ok.error();
  return session;
}

Result<void> Session::describe() {
  const Api& api = runtime_->api();
  std::size_t input_count = 0;
  std::size_t output_count = 0;
  if (auto ok = runtime_->check(api.SessionGetInputCount(session_.get(), &input_count), ""); !ok) {
    return ok.error();
  }
  if (auto ok = runtime_->check(api.SessionGetOutputCount(session_.get(), &output_count), "");
      !ok) {
    return ok.error();
  }
  for (std::size_t i = 0; i < input_count + output_count; ++i) {
    const bool output = i >= input_count;
    auto info = value_info(*runtime_, session_.get(), output ? i - input_count : i, output);
    if (!info) return info.error();
    (output ? outputs_ : inputs_).push_back(std::move(*info));
  }
  return {};
}

Result<std::vector<ValueHandle>> Session::run(const std::vector<const char*>& input_names,
                                              const std::vector<const OrtValue*>& inputs,
                                              const std::vector<const char*>& output_names) const {
  const Api& api = runtime_->api();
  std::vector<OrtValue*> raw(output_names.size(), nullptr);
  auto ran =
      runtime_->check(api.Run(session_.get(), nullptr, input_names.data(), inputs.data(),
                              inputs.size(), output_names.data(), output_names.size(), raw.data()),
                      "ONNX Runtime failed to run the model");
  std::vector<ValueHandle> outputs;
  outputs.reserve(raw.size());
  for (OrtValue* value : raw) outputs.emplace_back(value, ValueHandle::deleter_type{&api});
  if (!ran) return ran.error();
  return outputs;
}

}  // namespace sonic::onnx::ort
