#include "pb_convert.hpp"

#include <google/protobuf/util/json_util.h>

namespace sonic::grpc {

namespace {

Result<TensorMetadata> from_pb(const inference::ModelMetadataResponse::TensorMetadata& pb) {
  auto dtype = parse_datatype(pb.datatype());
  if (!dtype) {
    return Error(StatusCode::Internal, "model metadata names unknown datatype '" + pb.datatype() +
                                           "' for tensor '" + pb.name() + "'");
  }
  return TensorMetadata{pb.name(), *dtype, Shape(pb.shape().begin(), pb.shape().end())};
}

void to_pb(const TensorMetadata& t, inference::ModelMetadataResponse::TensorMetadata* pb) {
  pb->set_name(t.name);
  pb->set_datatype(to_string(t.dtype));
  for (auto d : t.shape) pb->add_shape(d);
}

Duration from_pb(const inference::StatisticDuration& pb) { return {pb.count(), pb.ns()}; }

void to_pb(const Duration& d, inference::StatisticDuration* pb) {
  pb->set_count(d.count);
  pb->set_ns(d.ns);
}

inference::DataType config_type(DataType type) {
  switch (type) {
    case DataType::Bool: return inference::TYPE_BOOL;
    case DataType::UInt8: return inference::TYPE_UINT8;
    case DataType::UInt16: return inference::TYPE_UINT16;
    case DataType::UInt32: return inference::TYPE_UINT32;
    case DataType::UInt64: return inference::TYPE_UINT64;
    case DataType::Int8: return inference::TYPE_INT8;
    case DataType::Int16: return inference::TYPE_INT16;
    case DataType::Int32: return inference::TYPE_INT32;
    case DataType::Int64: return inference::TYPE_INT64;
    case DataType::Fp16: return inference::TYPE_FP16;
    case DataType::Bf16: return inference::TYPE_BF16;
    case DataType::Fp32: return inference::TYPE_FP32;
    case DataType::Fp64: return inference::TYPE_FP64;
    case DataType::Bytes: return inference::TYPE_STRING;
  }
  return inference::TYPE_INVALID;
}

}  // namespace

Result<ModelMetadata> from_pb(const inference::ModelMetadataResponse& pb) {
  ModelMetadata m;
  m.name = pb.name();
  m.versions.assign(pb.versions().begin(), pb.versions().end());
  m.platform = pb.platform();
  for (const auto& t : pb.inputs()) {
    auto tensor = from_pb(t);
    if (!tensor) return tensor.error();
    m.inputs.push_back(std::move(*tensor));
  }
  for (const auto& t : pb.outputs()) {
    auto tensor = from_pb(t);
    if (!tensor) return tensor.error();
    m.outputs.push_back(std::move(*tensor));
  }
  return m;
}

void to_pb(const ModelMetadata& m, inference::ModelMetadataResponse* pb) {
  pb->set_name(m.name);
  for (const auto& v : m.versions) pb->add_versions(v);
  pb->set_platform(m.platform);
  for (const auto& t : m.inputs) to_pb(t, pb->add_inputs());
  for (const auto& t : m.outputs) to_pb(t, pb->add_outputs());
}

ServerMetadata from_pb(const inference::ServerMetadataResponse& pb) {
  return {pb.name(), pb.version(), {pb.extensions().begin(), pb.extensions().end()}};
}

ModelStatistics from_pb(const inference::ModelStatistics& pb) {
  ModelStatistics s;
  s.name = pb.name();
  s.version = pb.version();
  s.last_inference_ms = pb.last_inference();
  s.inference_count = pb.inference_count();
  s.execution_count = pb.execution_count();
  const auto& st = pb.inference_stats();
  s.success = from_pb(st.success());
  s.fail = from_pb(st.fail());
  s.queue = from_pb(st.queue());
  s.compute_input = from_pb(st.compute_input());
  s.compute_infer = from_pb(st.compute_infer());
  s.compute_output = from_pb(st.compute_output());
  return s;
}

void to_pb(const ModelStatistics& s, inference::ModelStatistics* pb) {
  pb->set_name(s.name);
  pb->set_version(s.version);
  pb->set_last_inference(s.last_inference_ms);
  pb->set_inference_count(s.inference_count);
  pb->set_execution_count(s.execution_count);
  auto* st = pb->mutable_inference_stats();
  to_pb(s.success, st->mutable_success());
  to_pb(s.fail, st->mutable_fail());
  to_pb(s.queue, st->mutable_queue());
  to_pb(s.compute_input, st->mutable_compute_input());
  to_pb(s.compute_infer, st->mutable_compute_infer());
  to_pb(s.compute_output, st->mutable_compute_output());
}

inference::ModelConfig model_config_of(const Model& model) {
  inference::ModelConfig config;
  config.set_name(model.name);
  config.set_platform(model.platform);
  config.set_backend("sonic");
  config.set_max_batch_size(model.max_batch_size);
  // With batching, Triton's dims leave out the batch dimension that metadata shows.
  auto dims_of = [&](const Shape& shape) {
    Shape dims = shape;
    if (model.max_batch_size > 0 && !dims.empty()) dims.erase(dims.begin());
    return dims;
  };
  for (const auto& t : model.inputs) {
    auto* in = config.add_input();
    in->set_name(t.name);
    in->set_data_type(config_type(t.dtype));
    for (auto d : dims_of(t.shape)) in->add_dims(d);
  }
  for (const auto& t : model.outputs) {
    auto* out = config.add_output();
    out->set_name(t.name);
    out->set_data_type(config_type(t.dtype));
    for (auto d : dims_of(t.shape)) out->add_dims(d);
  }
  auto* group = config.add_instance_group();
  group->set_kind(inference::ModelInstanceGroup::KIND_CPU);
  group->set_count(1);
  return config;
}

Result<std::string> config_to_json(const inference::ModelConfig& config) {
  std::string json;
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(config, &json, print).ok()) {
    return Error(StatusCode::Internal, "cannot print model config as JSON");
  }
  return json;
}

}  // namespace sonic::grpc
