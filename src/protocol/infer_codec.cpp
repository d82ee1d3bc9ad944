// Over 500 lines: each inference message's encoder beside its decoder, field by field.
#include "infer_codec.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "wire.hpp"

namespace sonic::protocol {

namespace {

Error malformed_stream_response() {
  return Error(StatusCode::Internal, "malformed ModelStreamInferResponse from server");
}

using wire::Reader;
using wire::WireType;

// ---- Encoding ------------------------------------------------------------------------------

void put_parameter(std::string& out, std::uint32_t field, const std::string& key,
                   const Parameter& value) {
  wire::put_message_field(out, field, [&](std::string& entry) {  // map entry: key=1, value=2
    wire::put_len_field(entry, 1, key);
    // InferParameter: oneof bool=1, int64=2, string=3, double=4, uint64=5
    wire::put_message_field(entry, 2, [&](std::string& param) {
      if (auto b = std::get_if<bool>(&value)) {
        wire::put_varint_field(param, 1, *b ? 1 : 0);
      } else if (auto i = std::get_if<std::int64_t>(&value)) {
        wire::put_varint_field(param, 2, static_cast<std::uint64_t>(*i));
      } else if (auto s = std::get_if<std::string>(&value)) {
        wire::put_len_field(param, 3, *s);
      } else if (auto d = std::get_if<double>(&value)) {
        std::uint64_t bits;
        std::memcpy(&bits, d, sizeof bits);
        wire::put_fixed64_field(param, 4, bits);
      } else if (auto u = std::get_if<std::uint64_t>(&value)) {
        wire::put_varint_field(param, 5, *u);
      }
    });
  });
}

void put_parameters(std::string& out, std::uint32_t field, const Parameters& parameters) {
  for (const auto& [key, value] : parameters) put_parameter(out, field, key, value);
}

}  // namespace

void append_request_parameter(std::string& envelope, const std::string& key,
                              const Parameter& value) {
  put_parameter(envelope, 4, key, value);  // ModelInferRequest.parameters
}

namespace {

// A tensor whose bytes live in a shared memory region: the message carries none of them.
bool in_shared_memory(const Parameters& parameters) {
  return parameters.count(kSharedMemoryRegion) != 0;
}

// The parameters that place a tensor in a region.
constexpr const char* kPlacementKeys[] = {kSharedMemoryRegion, kSharedMemoryByteSize,
                                          kSharedMemoryOffset};

bool is_placement(const std::string& key) {
  return std::find(std::begin(kPlacementKeys), std::end(kPlacementKeys), key) !=
         std::end(kPlacementKeys);
}

// Whether a message's tensors in shared memory keep their place in its raw contents.
enum class RawOf {
  kEveryTensor,  // responses, as Triton sends them: an empty entry for each one in shm
  kInMemory,     // requests, as Triton's clients send them: entries only for the others
};

// InferInputTensor and InferOutputTensor share fields 1-4: name, datatype, shape, parameters.
// An output's placement in shared memory is not repeated in the response (Triton does not:
// the client knows where it asked for it).
void put_tensor_header(std::string& out, std::uint32_t field, const NamedTensor& t,
                       RawOf raw = RawOf::kInMemory) {
  wire::put_message_field(out, field, [&](std::string& msg) {
    wire::put_string_field(msg, 1, t.name);
    wire::put_string_field(msg, 2, to_string(t.tensor.dtype()));
    if (!t.tensor.shape().empty()) {
      wire::put_message_field(msg, 3, [&](std::string& dims) {
        for (std::int64_t d : t.tensor.shape()) {
          wire::put_varint(dims, static_cast<std::uint64_t>(d));
        }
      });
    }
    for (const auto& [key, value] : t.parameters) {
      if (raw == RawOf::kEveryTensor && is_placement(key)) continue;
      put_parameter(msg, 4, key, value);
    }
  });
}

// Raw contents follow, in order: for the tensors not in shared memory, and with kEveryTensor an
// empty one in the place of each tensor that is (as Triton reads and writes them).
Result<std::shared_ptr<OutgoingBody>> finish_with_raw(std::string envelope,
                                                      const std::vector<NamedTensor>& tensors,
                                                      std::uint32_t raw_field, RawOf raw,
                                                      std::size_t max_bytes,
                                                      std::shared_ptr<const void> owner) {
  auto body = std::make_shared<OutgoingBody>();
  // Owned: the envelope and a field header of at most 11 bytes per tensor, in a run before
  // each tensor that is borrowed and one at the end.
  body->reserve(envelope.size() + 11 * tensors.size(), 2 * tensors.size() + 1);
  std::string field_header;
  for (const auto& t : tensors) {
    if (in_shared_memory(t.parameters)) {
      if (raw == RawOf::kEveryTensor) {
        wire::put_tag(envelope, raw_field, WireType::Len);
        wire::put_varint(envelope, 0);
      }
      continue;
    }
    field_header.clear();
    wire::put_tag(field_header, raw_field, WireType::Len);
    wire::put_varint(field_header, t.tensor.byte_size());
    envelope += field_header;
    body->append_owned(envelope);
    envelope.clear();
    body->append_borrowed(t.tensor.data(), t.tensor.byte_size());
  }
  body->append_owned(envelope);
  if (auto ok = body->finish(max_bytes); !ok) return ok.error();
  if (owner) body->keep_alive(std::move(owner));
  return body;
}

// ---- Decoding ------------------------------------------------------------------------------

// What one message may declare: each costs memory beyond its bytes on the wire (a 2-byte
// tensor field becomes a tensor object), so a message of many small fields must not decode to
// many times its size. No model has more tensors, dimensions or parameters than these.
constexpr std::size_t kMaxTensors = MessageReader::kMaxRawFields;
constexpr std::size_t kMaxDimensions = 64;
constexpr std::size_t kMaxParameters = 1024;
// Typed contents (InferTensorContents) decode to up to 8 times their wire size; beyond this a
// tensor must travel as raw contents (as Triton's clients send them).
constexpr std::size_t kMaxTypedContentsBytes = std::size_t{64} << 20;

struct TensorMessage {
  std::string name;
  std::string datatype;
  Shape shape;
  Parameters parameters;
  std::optional<std::string_view> contents;
  bool shared = false;                         // its bytes are in shared memory
  const RequestedOutput* placement = nullptr;  // where the request placed this output
};

// The server's report of its own queue and compute time (response parameters).
struct ReportedTiming {
  std::int64_t queue_ns = 0, compute_ns = 0;
};

// Reads one map entry into `out`; with `timing`, the server's timing keys go there instead.
bool read_parameter_entry(std::string_view entry, Parameters& out,
                          ReportedTiming* timing = nullptr) {
  Reader r(entry);
  std::string_view key;
  Parameter value = false;
  std::uint32_t field;
  WireType type;
  while (!r.done()) {
    if (!r.tag(field, type)) return false;
    std::string_view bytes;
    if (field == 1 && type == WireType::Len) {
      if (!r.bytes(bytes)) return false;
      key = bytes;
    } else if (field == 2 && type == WireType::Len) {
      if (!r.bytes(bytes)) return false;
      Reader p(bytes);
      while (!p.done()) {
        std::uint32_t pf;
        WireType pt;
        if (!p.tag(pf, pt)) return false;
        std::uint64_t v;
        std::string_view s;
        if (pf == 1 && pt == WireType::Varint) {
          if (!p.varint(v)) return false;
          value = v != 0;
        } else if (pf == 2 && pt == WireType::Varint) {
          if (!p.varint(v)) return false;
          value = static_cast<std::int64_t>(v);
        } else if (pf == 3 && pt == WireType::Len) {
          if (!p.bytes(s)) return false;
          value = std::string(s);
        } else if (pf == 4 && pt == WireType::Fixed64) {
          if (!p.fixed64(v)) return false;
          double d;
          std::memcpy(&d, &v, sizeof d);
          value = d;
        } else if (pf == 5 && pt == WireType::Varint) {
          if (!p.varint(v)) return false;
          value = v;
        } else if (!p.skip(pt)) {
          return false;
        }
      }
    } else if (!r.skip(type)) {
      return false;
    }
  }
  if (timing && (key == kServerQueueNs || key == kServerComputeNs)) {
    const auto* ns = std::get_if<std::int64_t>(&value);
    (key == kServerQueueNs ? timing->queue_ns : timing->compute_ns) = ns && *ns > 0 ? *ns : 0;
    return true;
  }
  if (out.size() >= kMaxParameters && !out.count(std::string(key))) return false;
  out[std::string(key)] = std::move(value);
  return true;
}

bool read_shape(Reader& r, WireType type, Shape& shape) {
  std::uint64_t v;
  if (type == WireType::Varint) {
    if (!r.varint(v) || shape.size() >= kMaxDimensions) return false;
    shape.push_back(static_cast<std::int64_t>(v));
    return true;
  }
  std::string_view packed;
  if (type != WireType::Len || !r.bytes(packed)) return false;
  // One varint per dimension, at least a byte each: reserve for all at once.
  shape.reserve(shape.size() + std::min<std::size_t>(packed.size(), 64));
  Reader p(packed);
  while (!p.done()) {
    if (!p.varint(v) || shape.size() >= kMaxDimensions) return false;
    shape.push_back(static_cast<std::int64_t>(v));
  }
  return true;
}

bool read_tensor_message(std::string_view bytes, TensorMessage& t) {
  Reader r(bytes);
  std::uint32_t field;
  WireType type;
  while (!r.done()) {
    if (!r.tag(field, type)) return false;
    std::string_view s;
    if (field == 1 && type == WireType::Len) {
      if (!r.bytes(s)) return false;
      t.name = std::string(s);
    } else if (field == 2 && type == WireType::Len) {
      if (!r.bytes(s)) return false;
      t.datatype = std::string(s);
    } else if (field == 3) {
      if (!read_shape(r, type, t.shape)) return false;
    } else if (field == 4 && type == WireType::Len) {
      if (!r.bytes(s) || !read_parameter_entry(s, t.parameters)) return false;
    } else if (field == 5 && type == WireType::Len) {
      if (!r.bytes(s)) return false;
      t.contents = s;
    } else if (!r.skip(type)) {
      return false;
    }
  }
  return true;
}

// Fields 1-5 are common to ModelInferRequest and ModelInferResponse (model_name,
// model_version, id, parameters, tensors); field 6 of a request lists the requested outputs.
// Raw tensor contents never reach here: the MessageReader took them out.
struct Envelope {
  std::string model;
  std::string version;
  std::string id;
  Parameters parameters;
  std::vector<TensorMessage> tensors;
  std::vector<RequestedOutput> outputs;
  ReportedTiming timing;  // responses only
};

bool read_requested_output(std::string_view bytes, RequestedOutput& out) {
  Reader r(bytes);
  std::uint32_t field;
  WireType type;
  while (!r.done()) {
    std::string_view s;
    if (!r.tag(field, type)) return false;
    if (field == 1 && type == WireType::Len) {
      if (!r.bytes(s)) return false;
      out.name = std::string(s);
    } else if (field == 2 && type == WireType::Len) {
      if (!r.bytes(s) || !read_parameter_entry(s, out.parameters)) return false;
    } else if (!r.skip(type)) {
      return false;
    }
  }
  return true;
}

bool read_envelope(std::string_view bytes, bool is_request, Envelope& e) {
  Reader r(bytes);
  std::uint32_t field;
  WireType type;
  while (!r.done()) {
    if (!r.tag(field, type)) return false;
    std::string_view s;
    if (type != WireType::Len || field > 6 || (field == 6 && !is_request)) {
      if (!r.skip(type)) return false;
      continue;
    }
    if (!r.bytes(s)) return false;
    switch (field) {
      case 1: e.model = std::string(s); break;
      case 2: e.version = std::string(s); break;
      case 3: e.id = std::string(s); break;
      case 4:
        if (!read_parameter_entry(s, e.parameters, is_request ? nullptr : &e.timing)) return false;
        break;
      case 5:
        if (e.tensors.size() >= kMaxTensors) return false;
        e.tensors.emplace_back();
        if (!read_tensor_message(s, e.tensors.back())) return false;
        break;
      case 6:
        if (e.outputs.size() >= kMaxTensors) return false;
        e.outputs.emplace_back();
        if (!read_requested_output(s, e.outputs.back())) return false;
        break;
    }
  }
  return true;
}

// The InferTensorContents field that carries each datatype (Triton's convention).
std::uint32_t contents_field(DataType type) {
  switch (type) {
    case DataType::Bool: return 1;
    case DataType::Int8:
    case DataType::Int16:
    case DataType::Int32: return 2;
    case DataType::Int64: return 3;
    case DataType::UInt8:
    case DataType::UInt16:
    case DataType::UInt32: return 4;
    case DataType::UInt64: return 5;
    case DataType::Fp32: return 6;
    case DataType::Fp64: return 7;
    case DataType::Bytes: return 8;
    default: return 0;  // FP16 and BF16 only travel raw
  }
}

void append_element(std::vector<std::uint8_t>& out, std::uint64_t bits, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) out.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
}

// Typed contents (InferTensorContents) into an owned tensor of the declared datatype.
Result<Tensor> decode_contents(std::string_view contents, DataType dtype, const Shape& shape,
                               StatusCode on_error) {
  std::uint32_t wanted = contents_field(dtype);
  if (wanted == 0) {
    return Error(on_error, std::string(to_string(dtype)) + " tensors must use raw contents");
  }
  std::vector<std::uint8_t> bytes;
  std::vector<std::string> strings;
  std::size_t size = element_size(dtype);
  // The shape says how many elements come: never decode more (nor more than the cap).
  const auto expected = element_count(shape);
  if (!expected || (dtype != DataType::Bytes && *expected > kMaxTypedContentsBytes / size)) {
    return Error(on_error, "typed contents of shape " + to_string(shape) + " exceed " +
                               std::to_string(kMaxTypedContentsBytes >> 20) +
                               " MiB: send the tensor as raw contents");
  }
  if (dtype != DataType::Bytes) bytes.reserve(*expected * size);
  Reader r(contents);
  std::uint32_t field;
  WireType type;
  auto bad = [&] { return Error(on_error, "malformed typed contents"); };
  while (!r.done()) {
    if (!r.tag(field, type)) return bad();
    if (field != wanted) {
      if (!r.skip(type)) return bad();
      continue;
    }
    if (dtype == DataType::Bytes) {
      std::string_view s;
      if (type != WireType::Len || !r.bytes(s) || strings.size() >= *expected) return bad();
      strings.emplace_back(s);
      continue;
    }
    // Scalar fields: packed (one Len run) or one element per field.
    WireType element = field == 6   ? WireType::Fixed32
                       : field == 7 ? WireType::Fixed64
                                    : WireType::Varint;
    auto read_one = [&](Reader& from) -> bool {
      std::uint64_t v = 0;
      std::uint32_t v32 = 0;
      if (element == WireType::Fixed32) {
        if (!from.fixed32(v32)) return false;
        v = v32;
      } else if (element == WireType::Fixed64) {
        if (!from.fixed64(v)) return false;
      } else if (!from.varint(v)) {
        return false;
      }
      if (dtype == DataType::Bool) v = v != 0;
      if (bytes.size() >= *expected * size) return false;  // more elements than the shape has
      append_element(bytes, v, size);
      return true;
    };
    if (type == WireType::Len) {
      std::string_view packed;
      if (!r.bytes(packed)) return bad();
      Reader p(packed);
      while (!p.done()) {
        if (!read_one(p)) return bad();
      }
    } else if (type == element) {
      if (!read_one(r)) return bad();
    } else {
      return bad();
    }
  }
  if (dtype == DataType::Bytes) return Tensor::from_strings(strings, shape);
  auto owner = std::make_shared<std::vector<std::uint8_t>>(std::move(bytes));
  return Tensor::from_shared(dtype, shape, owner, owner->data(), owner->size());
}

// Marks the tensors whose bytes are in shared memory: those whose parameters say so, and, in a
// response, outputs the request placed there that the server answered as Triton does (an empty
// raw entry in their place, or none); these take the request's placement parameters.
void mark_shared(std::vector<TensorMessage>& messages, const std::vector<ReceivedMessage::Raw>& raw,
                 const std::vector<RequestedOutput>* placed) {
  std::size_t unplaced = 0;
  for (auto& m : messages) {
    m.shared = in_shared_memory(m.parameters);
    if (!m.shared && placed) {
      for (const auto& p : *placed) {
        if (p.name == m.name) m.placement = &p;
      }
    }
    unplaced += !m.shared && !m.placement;
  }
  if (!placed) return;
  const bool aligned = raw.size() == messages.size();
  if (!aligned && raw.size() != unplaced) return;  // assemble() reports the mismatch
  for (std::size_t i = 0; i < messages.size(); ++i) {
    TensorMessage& m = messages[i];
    if (!m.placement || (aligned && raw[i].size != 0)) continue;  // the server sent it inline
    m.shared = true;
    for (const char* key : kPlacementKeys) {
      auto it = m.placement->parameters.find(key);
      if (it != m.placement->parameters.end()) m.parameters[key] = it->second;
    }
  }
}

// A request's typed contents where Triton refuses them: beside shared memory, or beside raw
// contents. Triton checks each input in order before anything else (src/grpc/infer_handler.cc,
// InferGRPCToInput), in words its grpc_explicit_*_content_client examples look for.
Result<void> check_typed_contents(const std::vector<TensorMessage>& messages, bool has_raw,
                                  const std::string& model) {
  for (const auto& m : messages) {
    if (!m.contents) continue;
    if (m.shared) {
      return Error(StatusCode::InvalidArgument,
                   "unexpected 'content' provided when using shared memory for input tensor '" +
                       m.name + "' for model '" + model + "'");
    }
    if (has_raw) {
      return Error(StatusCode::InvalidArgument,
                   "contents field must not be specified when using raw_input_contents for '" +
                       m.name + "' for model '" + model + "'");
    }
  }
  return {};
}

// Pairs decoded tensor messages with raw payloads (or typed contents) and checks each one. Raw
// contents come for every tensor not in shared memory, in order; an empty one in the place of
// a shared memory tensor is accepted too (index-aligned senders: Triton's responses). `model`
// names a request's model: its typed contents are checked first, as Triton checks them.
Result<std::vector<NamedTensor>> assemble(std::vector<TensorMessage>& messages,
                                          std::vector<ReceivedMessage::Raw>& raw,
                                          StatusCode on_error, const char* kind,
                                          const std::vector<RequestedOutput>* placed = nullptr,
                                          const std::string* model = nullptr) {
  mark_shared(messages, raw, placed);
  if (model) {
    if (auto ok = check_typed_contents(messages, !raw.empty(), *model); !ok) return ok.error();
  }
  std::size_t in_memory = 0;
  for (const auto& m : messages) in_memory += m.shared ? 0 : 1;
  const bool aligned = raw.size() == messages.size() && raw.size() != in_memory;
  if (!raw.empty() && raw.size() != in_memory && !aligned) {
    return Error(on_error,
                 std::to_string(in_memory) + " " + kind + " tensors not in shared memory but " +
                     std::to_string(raw.size()) +
                     " raw contents; raw contents must be given for every such tensor or none");
  }
  std::vector<NamedTensor> tensors;
  tensors.reserve(messages.size());
  std::size_t next_raw = 0;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    auto& m = messages[i];
    const bool shared = m.shared;
    auto dtype = parse_datatype(m.datatype);
    if (!dtype) {
      return Error(on_error, std::string(kind) + " '" + m.name + "' has unknown datatype '" +
                                 m.datatype + "'");
    }
    if (!element_count(m.shape)) {
      return Error(on_error,
                   std::string(kind) + " '" + m.name + "' has invalid shape " + to_string(m.shape));
    }
    Tensor tensor;
    if (shared && aligned && raw[next_raw++].size != 0) {
      return Error(on_error, std::string(kind) + " '" + m.name +
                                 "' is in shared memory but has raw contents too");
    }
    if (shared && m.contents) {
      return Error(on_error, std::string(kind) + " '" + m.name +
                                 "' is in shared memory but has typed contents too");
    }
    if (!raw.empty() && !shared) {
      if (m.contents) {
        return Error(on_error,
                     std::string(kind) + " '" + m.name + "' has both raw and typed contents");
      }
      auto& r = raw[next_raw++];
      tensor = Tensor::from_shared(*dtype, m.shape, r.data, r.data.get(), r.size);
    } else if (m.contents) {
      auto decoded = decode_contents(*m.contents, *dtype, m.shape, on_error);
      if (!decoded) {
        return Error(on_error,
                     std::string(kind) + " '" + m.name + "': " + decoded.error().message());
      }
      tensor = std::move(*decoded);
    } else if (shared) {
      // Data lives in a shared memory region: no bytes in the message.
      tensor = Tensor::view_bytes(*dtype, m.shape, nullptr, 0);
      tensors.push_back({std::move(m.name), std::move(tensor), std::move(m.parameters)});
      continue;
    } else {
      tensor = Tensor::view_bytes(*dtype, m.shape, nullptr, 0);
    }
    if (auto ok = tensor.check(); !ok) {
      return Error(on_error, std::string(kind) + " '" + m.name + "': " + ok.error().message());
    }
    tensors.push_back({std::move(m.name), std::move(tensor), std::move(m.parameters)});
  }
  return tensors;
}

}  // namespace

std::string infer_request_envelope(const InferRequest& request) {
  std::string env;
  env.reserve(256);
  wire::put_string_field(env, 1, request.model_name());
  wire::put_string_field(env, 2, request.model_version());
  wire::put_string_field(env, 3, request.request_id());
  put_parameters(env, 4, request.parameters());
  for (const auto& in : request.inputs()) put_tensor_header(env, 5, in);
  for (const auto& out : request.outputs()) {
    wire::put_message_field(env, 6, [&](std::string& msg) {
      wire::put_string_field(msg, 1, out.name);
      put_parameters(msg, 2, out.parameters);
    });
  }
  return env;
}

std::string infer_response_envelope(const InferResult& result) {
  std::string env;
  env.reserve(256);
  wire::put_string_field(env, 1, result.model_name());
  wire::put_string_field(env, 2, result.model_version());
  wire::put_string_field(env, 3, result.request_id());
  put_parameters(env, 4, result.parameters());
  // The server's part of the timing, for the client's InferResult::timing().
  if (auto queue = result.timing().server_queue.count(); queue > 0) {
    put_parameter(env, 4, kServerQueueNs, std::int64_t{queue});
  }
  if (auto compute = result.timing().server_compute.count(); compute > 0) {
    put_parameter(env, 4, kServerComputeNs, std::int64_t{compute});
  }
  for (const auto& out : result.outputs()) put_tensor_header(env, 5, out, RawOf::kEveryTensor);
  return env;
}

Result<std::shared_ptr<OutgoingBody>> encode_infer_request(const InferRequest& request,
                                                           std::size_t max_bytes) {
  return finish_with_raw(infer_request_envelope(request), request.inputs(), kRawInputField,
                         RawOf::kInMemory, max_bytes, nullptr);
}

Result<std::shared_ptr<OutgoingBody>> encode_infer_response(const InferResult& result,
                                                            std::size_t max_bytes) {
  std::string env = infer_response_envelope(result);
  auto outputs = std::make_shared<const std::vector<NamedTensor>>(result.outputs());
  return finish_with_raw(std::move(env), *outputs, kRawOutputField, RawOf::kEveryTensor, max_bytes,
                         outputs);
}

Result<std::shared_ptr<OutgoingBody>> encode_stream_infer_response(const InferResult& result,
                                                                   std::size_t max_bytes) {
  // The infer_response field holds the envelope and the raw contents that finish_with_raw()
  // appends after it: its length is known before they are.
  std::string inner = infer_response_envelope(result);
  std::size_t length = inner.size();
  const std::size_t raw_tag = wire::varint_size(std::uint64_t{kRawOutputField} << 3);
  for (const auto& t : result.outputs()) {
    const std::size_t bytes = in_shared_memory(t.parameters) ? 0 : t.tensor.byte_size();
    length += raw_tag + wire::varint_size(bytes) + bytes;
  }
  std::string envelope;
  envelope.reserve(16 + inner.size());
  wire::put_tag(envelope, 2, WireType::Len);
  wire::put_varint(envelope, length);
  envelope += inner;
  auto outputs = std::make_shared<const std::vector<NamedTensor>>(result.outputs());
  return finish_with_raw(std::move(envelope), *outputs, kRawOutputField, RawOf::kEveryTensor,
                         max_bytes, outputs);
}

namespace {
// A ModelStreamInferResponse with `error_message` (none when empty) and an infer_response that
// only names the request.
std::shared_ptr<OutgoingBody> stream_notice(std::string_view error_message,
                                            const InferRequest& request,
                                            const Parameters& parameters) {
  std::string message;
  wire::put_string_field(message, 1, error_message);
  wire::put_message_field(message, 2, [&](std::string& response) {
    wire::put_string_field(response, 1, request.model_name());
    wire::put_string_field(response, 2, request.model_version());
    wire::put_string_field(response, 3, request.request_id());
    put_parameters(response, 4, parameters);
  });
  auto body = std::make_shared<OutgoingBody>();
  body->append_owned(message);
  (void)body->finish(std::numeric_limits<std::size_t>::max());  // it is small
  return body;
}
}  // namespace

std::shared_ptr<OutgoingBody> encode_stream_error(const Error& error, const InferRequest& request,
                                                  const Parameters& parameters) {
  // An empty error_message would read as success: an error always says something.
  return stream_notice(error.message().empty() ? to_string(error.code()) : error.message(), request,
                       parameters);
}

std::shared_ptr<OutgoingBody> encode_stream_final(const InferRequest& request) {
  return stream_notice({}, request, {{kFinalResponse, true}});
}

Result<InferResult> decode_stream_infer_response(ReceivedMessage message, std::string* failed_id) {
  Reader reader(message.outer);
  std::string_view error_message;
  while (!reader.done()) {
    std::uint32_t field;
    WireType type;
    if (!reader.tag(field, type)) return malformed_stream_response();
    if (field == 1 && type == WireType::Len) {
      if (!reader.bytes(error_message)) return malformed_stream_response();
    } else if (!reader.skip(type)) {
      return malformed_stream_response();
    }
  }
  if (!error_message.empty()) {
    if (failed_id) {
      Envelope e;
      if (read_envelope(message.envelope, false, e)) *failed_id = std::move(e.id);
    }
    return Error(StatusCode::Unknown, std::string(error_message));
  }
  return decode_infer_response(std::move(message));
}

std::vector<RequestedOutput> outputs_in_shared_memory(const InferRequest& request) {
  std::vector<RequestedOutput> placed;
  for (const auto& out : request.outputs()) {
    if (in_shared_memory(out.parameters)) placed.push_back(out);
  }
  return placed;
}

Result<InferResult> decode_infer_response(ReceivedMessage message,
                                          const std::vector<RequestedOutput>* placed) {
  Envelope e;
  if (!read_envelope(message.envelope, false, e)) {
    return Error(StatusCode::Internal, "malformed ModelInferResponse from server");
  }
  auto tensors = assemble(e.tensors, message.raw, StatusCode::Internal, "output", placed);
  if (!tensors) {
    return Error(StatusCode::Internal,
                 "invalid response from server: " + tensors.error().message());
  }
  InferResult result(std::move(e.model), std::move(e.version), std::move(e.id), std::move(*tensors),
                     std::move(e.parameters));
  result.timing().server_queue = std::chrono::nanoseconds{e.timing.queue_ns};
  result.timing().server_compute = std::chrono::nanoseconds{e.timing.compute_ns};
  return result;
}

Result<InferRequest> decode_infer_request(ReceivedMessage message) {
  Envelope e;
  if (!read_envelope(message.envelope, true, e)) {
    return Error(StatusCode::InvalidArgument,
                 "malformed ModelInferRequest (or over a limit: " + std::to_string(kMaxTensors) +
                     " tensors, " + std::to_string(kMaxDimensions) + " dimensions, " +
                     std::to_string(kMaxParameters) + " parameters)");
  }
  auto tensors =
      assemble(e.tensors, message.raw, StatusCode::InvalidArgument, "input", nullptr, &e.model);
  if (!tensors) return tensors.error();
  InferRequest request(std::move(e.model), std::move(e.version));
  request.id(std::move(e.id));
  for (auto& [key, value] : e.parameters) request.parameter(key, std::move(value));
  for (auto& t : *tensors) {
    request.input(std::move(t.name), std::move(t.tensor), std::move(t.parameters));
  }
  for (auto& o : e.outputs) request.output(std::move(o.name), std::move(o.parameters));
  return request;
}

}  // namespace sonic::protocol
