// Over 500 lines: some forty small control-message codecs, each encoder beside its decoder.
#include "control_codec.hpp"

#include <utility>

#include "names.hpp"
#include "wire.hpp"

namespace sonic::protocol {

namespace {

using wire::WireType;

// One field of a message being read. A handler reads the fields it knows through these
// methods, which check the wire type; a field it leaves alone is skipped.
class Field {
 public:
  Field(std::uint32_t field_number, WireType type, wire::Reader& reader)
      : number(field_number), type_(type), reader_(reader) {}

  const std::uint32_t number;

  void string(std::string& out) {
    std::string_view bytes;
    if (take(WireType::Len) && reader_.bytes(bytes)) {
      out.assign(bytes.data(), bytes.size());
    } else {
      ok_ = false;
    }
  }
  void view(std::string_view& out) {
    if (!take(WireType::Len) || !reader_.bytes(out)) ok_ = false;
  }
  void uint(std::uint64_t& out) {
    if (!take(WireType::Varint) || !reader_.varint(out)) ok_ = false;
  }
  void int64(std::int64_t& out) {
    std::uint64_t v = 0;
    uint(v);
    out = static_cast<std::int64_t>(v);
  }
  void boolean(bool& out) {
    std::uint64_t v = 0;
    uint(v);
    out = v != 0;
  }
  /// A repeated int64: packed (one length-delimited run) or one varint per field.
  void int64s(std::vector<std::int64_t>& out) {
    if (type_ == WireType::Varint) {
      std::int64_t v = 0;
      int64(v);
      out.push_back(v);
      return;
    }
    std::string_view packed;
    view(packed);
    wire::Reader p(packed);
    while (ok_ && !p.done()) {
      std::uint64_t v = 0;
      if (!p.varint(v)) ok_ = false;
      out.push_back(static_cast<std::int64_t>(v));
    }
  }
  /// A nested message, read by `parse(bytes)` (which returns false when malformed).
  template <typename Parse>
  void message(Parse&& parse) {
    std::string_view bytes;
    view(bytes);
    if (ok_ && !parse(bytes)) ok_ = false;
  }

  bool consumed() const { return consumed_; }
  bool ok() const { return ok_; }

 private:
  bool take(WireType wanted) {
    consumed_ = true;
    return type_ == wanted;
  }

  WireType type_;
  wire::Reader& reader_;
  bool consumed_ = false;
  bool ok_ = true;
};

// Reads every field of a message through `handle(Field&)`; false when malformed.
template <typename Handle>
bool read_fields(std::string_view bytes, Handle&& handle) {
  wire::Reader r(bytes);
  std::uint32_t number;
  WireType type;
  while (!r.done()) {
    if (!r.tag(number, type)) return false;
    Field field(number, type, r);
    handle(field);
    if (!field.ok()) return false;
    if (!field.consumed() && !r.skip(type)) return false;
  }
  return true;
}

template <typename T>
Result<T> parsed(bool ok, T value, const char* message, bool is_request) {
  if (ok) return value;
  return Error(is_request ? StatusCode::InvalidArgument : StatusCode::Internal,
               std::string("malformed ") + message);
}

// ---- Writing ----

void put_bool(std::string& out, std::uint32_t field, bool value) {
  if (value) wire::put_varint_field(out, field, 1);  // proto3 omits defaults
}
void put_uint(std::string& out, std::uint32_t field, std::uint64_t value) {
  if (value) wire::put_varint_field(out, field, value);
}
void put_message(std::string& out, std::uint32_t field, const std::string& message) {
  wire::put_len_field(out, field, message);
}

// A map<string, V> entry is a message { key = 1; value = 2; }.
void put_map_entry(std::string& out, std::uint32_t field, const std::string& key,
                   const std::string& value_message) {
  std::string entry;
  wire::put_len_field(entry, 1, key);
  wire::put_len_field(entry, 2, value_message);
  put_message(out, field, entry);
}

// Reads a map entry: its key and the bytes of its value message.
bool read_map_entry(std::string_view bytes, std::string& key, std::string_view& value) {
  return read_fields(bytes, [&](Field& f) {
    if (f.number == 1) f.string(key);
    if (f.number == 2) f.view(value);
  });
}

// ---- Statistics ----

void put_duration(std::string& out, std::uint32_t field, const Duration& d) {
  if (d.count == 0 && d.ns == 0) return;
  std::string msg;
  put_uint(msg, 1, d.count);
  put_uint(msg, 2, d.ns);
  put_message(out, field, msg);
}

bool read_duration(std::string_view bytes, Duration& d) {
  return read_fields(bytes, [&](Field& f) {
    if (f.number == 1) f.uint(d.count);
    if (f.number == 2) f.uint(d.ns);
  });
}

std::string statistics_message(const ModelStatistics& s) {
  std::string msg;
  wire::put_string_field(msg, 1, s.name);
  wire::put_string_field(msg, 2, s.version);
  put_uint(msg, 3, s.last_inference_ms);
  put_uint(msg, 4, s.inference_count);
  put_uint(msg, 5, s.execution_count);
  std::string inference;  // InferStatistics
  put_duration(inference, 1, s.success);
  put_duration(inference, 2, s.fail);
  put_duration(inference, 3, s.queue);
  put_duration(inference, 4, s.compute_input);
  put_duration(inference, 5, s.compute_infer);
  put_duration(inference, 6, s.compute_output);
  put_message(msg, 6, inference);
  for (const auto& b : s.batch_stats) {  // InferBatchStatistics
    std::string batch;
    put_uint(batch, 1, b.batch_size);
    put_duration(batch, 2, b.compute_input);
    put_duration(batch, 3, b.compute_infer);
    put_duration(batch, 4, b.compute_output);
    put_message(msg, 7, batch);
  }
  return msg;
}

bool read_statistics(std::string_view bytes, ModelStatistics& s) {
  return read_fields(bytes, [&](Field& f) {
    switch (f.number) {
      case 1: f.string(s.name); break;
      case 2: f.string(s.version); break;
      case 3: f.uint(s.last_inference_ms); break;
      case 4: f.uint(s.inference_count); break;
      case 5: f.uint(s.execution_count); break;
      case 6:
        f.message([&](std::string_view inference) {
          return read_fields(inference, [&](Field& g) {
            Duration* d = g.number == 1   ? &s.success
                          : g.number == 2 ? &s.fail
                          : g.number == 3 ? &s.queue
                          : g.number == 4 ? &s.compute_input
                          : g.number == 5 ? &s.compute_infer
                          : g.number == 6 ? &s.compute_output
                                          : nullptr;
            if (d) g.message([d](std::string_view b) { return read_duration(b, *d); });
          });
        });
        break;
      case 7:
        f.message([&](std::string_view bytes_of_batch) {
          BatchStatistics b;
          bool ok = read_fields(bytes_of_batch, [&](Field& g) {
            Duration* d = g.number == 2   ? &b.compute_input
                          : g.number == 3 ? &b.compute_infer
                          : g.number == 4 ? &b.compute_output
                                          : nullptr;
            if (g.number == 1) g.uint(b.batch_size);
            if (d) g.message([d](std::string_view x) { return read_duration(x, *d); });
          });
          s.batch_stats.push_back(b);
          return ok;
        });
        break;
    }
  });
}

// ---- Model metadata ----

std::string tensor_metadata_message(const TensorMetadata& t) {
  std::string msg;
  wire::put_string_field(msg, 1, t.name);
  wire::put_string_field(msg, 2, to_string(t.dtype));
  if (!t.shape.empty()) {
    std::string dims;
    for (auto d : t.shape) wire::put_varint(dims, static_cast<std::uint64_t>(d));
    wire::put_len_field(msg, 3, dims);
  }
  return msg;
}

}  // namespace

// ---- Requests ----------------------------------------------------------------------------

std::string encode_model_ref(const ModelRef& model) {
  std::string msg;
  wire::put_string_field(msg, 1, model.name);
  wire::put_string_field(msg, 2, model.version);
  return msg;
}

Result<ModelRef> decode_model_ref(std::string_view bytes) {
  ModelRef model;
  bool ok = read_fields(bytes, [&](Field& f) {
    if (f.number == 1) f.string(model.name);
    if (f.number == 2) f.string(model.version);
  });
  return parsed(ok, std::move(model), "request naming a model", true);
}

std::string encode_repository_query(const RepositoryQuery& query) {
  std::string msg;
  wire::put_string_field(msg, 1, query.repository);
  put_bool(msg, 2, query.ready_only);
  return msg;
}

Result<RepositoryQuery> decode_repository_query(std::string_view bytes) {
  RepositoryQuery query;
  bool ok = read_fields(bytes, [&](Field& f) {
    if (f.number == 1) f.string(query.repository);
    if (f.number == 2) f.boolean(query.ready_only);
  });
  return parsed(ok, std::move(query), "RepositoryIndexRequest", true);
}

std::string encode_repository_model_request(const RepositoryModelRequest& request) {
  std::string msg;
  wire::put_string_field(msg, 1, request.repository);
  wire::put_string_field(msg, 2, request.model);
  for (const auto& [key, value] : request.parameters) {
    std::string param;  // ModelRepositoryParameter: oneof bool=1, int64=2, string=3, bytes=4
    if (const auto* b = std::get_if<bool>(&value)) wire::put_varint_field(param, 1, *b);
    if (const auto* i = std::get_if<std::int64_t>(&value)) {
      wire::put_varint_field(param, 2, static_cast<std::uint64_t>(*i));
    }
    if (const auto* s = std::get_if<std::string>(&value)) wire::put_len_field(param, 3, *s);
    if (const auto* b = std::get_if<RepositoryBytes>(&value)) {
      wire::put_len_field(param, 4, b->value);
    }
    put_map_entry(msg, 3, key, param);
  }
  return msg;
}

Result<RepositoryModelRequest> decode_repository_model_request(std::string_view bytes) {
  RepositoryModelRequest request;
  bool ok = read_fields(bytes, [&](Field& f) {
    if (f.number == 1) f.string(request.repository);
    if (f.number == 2) f.string(request.model);
    if (f.number != 3) return;
    f.message([&](std::string_view entry) {
      std::string key;
      std::string_view value_bytes;
      if (!read_map_entry(entry, key, value_bytes)) return false;
      RepositoryParameter value = false;
      bool value_ok = read_fields(value_bytes, [&](Field& g) {
        if (g.number == 1) g.boolean(value.emplace<bool>());
        if (g.number == 2) g.int64(value.emplace<std::int64_t>());
        if (g.number == 3) g.string(value.emplace<std::string>());
        if (g.number == 4) g.string(value.emplace<RepositoryBytes>().value);
      });
      request.parameters[std::move(key)] = std::move(value);
      return value_ok;
    });
  });
  return parsed(ok, std::move(request), "repository model request", true);
}

std::string encode_system_shm_registration(const SystemShmRegistration& request) {
  std::string msg;
  wire::put_string_field(msg, 1, request.name);
  wire::put_string_field(msg, 2, request.key);
  put_uint(msg, 3, request.offset);
  put_uint(msg, 4, request.byte_size);
  return msg;
}

Result<SystemShmRegistration> decode_system_shm_registration(std::string_view bytes) {
  SystemShmRegistration request;
  bool ok = read_fields(bytes, [&](Field& f) {
    if (f.number == 1) f.string(request.name);
    if (f.number == 2) f.string(request.key);
    if (f.number == 3) f.uint(request.offset);
    if (f.number == 4) f.uint(request.byte_size);
  });
  return parsed(ok, std::move(request), "SystemSharedMemoryRegisterRequest", true);
}

std::string encode_cuda_shm_registration(const CudaShmRegistration& request) {
  std::string msg;
  wire::put_string_field(msg, 1, request.name);
  wire::put_string_field(msg, 2, request.raw_handle);
  if (request.device_id) {
    wire::put_varint_field(msg, 3, static_cast<std::uint64_t>(request.device_id));
  }
  put_uint(msg, 4, request.byte_size);
  return msg;
}

Result<CudaShmRegistration> decode_cuda_shm_registration(std::string_view bytes) {
  CudaShmRegistration request;
  bool ok = read_fields(bytes, [&](Field& f) {
    if (f.number == 1) f.string(request.name);
    if (f.number == 2) f.string(request.raw_handle);
    if (f.number == 3) f.int64(request.device_id);
    if (f.number == 4) f.uint(request.byte_size);
  });
  return parsed(ok, std::move(request), "CudaSharedMemoryRegisterRequest", true);
}

std::string encode_region_name(const std::string& name) {
  std::string msg;
  wire::put_string_field(msg, 1, name);
  return msg;
}

Result<std::string> decode_region_name(std::string_view bytes) {
  std::string name;
  bool ok = read_fields(bytes, [&](Field& f) {
    if (f.number == 1) f.string(name);
  });
  return parsed(ok, std::move(name), "shared memory request", true);
}

// ---- Responses ---------------------------------------------------------------------------

std::string encode_flag(bool value) {
  std::string msg;
  put_bool(msg, 1, value);
  return msg;
}

Result<bool> decode_flag(std::string_view bytes) {
  bool value = false;
  bool ok = read_fields(bytes, [&](Field& f) {
    if (f.number == 1) f.boolean(value);
  });
  return parsed(ok, value, "health response", false);
}

std::string encode_server_metadata(const ServerMetadata& metadata) {
  std::string msg;
  wire::put_string_field(msg, 1, metadata.name);
  wire::put_string_field(msg, 2, metadata.version);
  for (const auto& e : metadata.extensions) wire::put_len_field(msg, 3, e);
  return msg;
}

Result<ServerMetadata> decode_server_metadata(std::string_view bytes) {
  ServerMetadata metadata;
  bool ok = read_fields(bytes, [&](Field& f) {
    if (f.number == 1) f.string(metadata.name);
    if (f.number == 2) f.string(metadata.version);
    if (f.number == 3) f.string(metadata.extensions.emplace_back());
  });
  return parsed(ok, std::move(metadata), "ServerMetadataResponse", false);
}

std::string encode_model_metadata(const ModelMetadata& metadata) {
  std::string msg;
  wire::put_string_field(msg, 1, metadata.name);
  for (const auto& v : metadata.versions) wire::put_len_field(msg, 2, v);
  wire::put_string_field(msg, 3, metadata.platform);
  for (const auto& t : metadata.inputs) put_message(msg, 4, tensor_metadata_message(t));
  for (const auto& t : metadata.outputs) put_message(msg, 5, tensor_metadata_message(t));
  return msg;
}

Result<ModelMetadata> decode_model_metadata(std::string_view bytes) {
  ModelMetadata metadata;
  std::string unknown_type;  // the first datatype sonic does not know, with its tensor
  bool ok = read_fields(bytes, [&](Field& f) {
    switch (f.number) {
      case 1: f.string(metadata.name); break;
      case 2: f.string(metadata.versions.emplace_back()); break;
      case 3: f.string(metadata.platform); break;
      case 4:
      case 5:
        f.message([&](std::string_view tensor_bytes) {
          TensorMetadata t;
          std::string datatype;
          bool tensor_ok = read_fields(tensor_bytes, [&](Field& g) {
            if (g.number == 1) g.string(t.name);
            if (g.number == 2) g.string(datatype);
            if (g.number == 3) g.int64s(t.shape);
          });
          if (auto type = parse_datatype(datatype)) {
            t.dtype = *type;
          } else if (unknown_type.empty()) {
            unknown_type = "'" + datatype + "' for tensor '" + t.name + "'";
          }
          (f.number == 4 ? metadata.inputs : metadata.outputs).push_back(std::move(t));
          return tensor_ok;
        });
        break;
    }
  });
  if (ok && !unknown_type.empty()) {
    return Error(StatusCode::Internal, "model metadata names unknown datatype " + unknown_type);
  }
  return parsed(ok, std::move(metadata), "ModelMetadataResponse", false);
}

std::string encode_model_config_response(std::string_view config) {
  std::string msg;
  wire::put_len_field(msg, 1, config);
  return msg;
}

Result<std::string> decode_model_config_response(std::string_view bytes) {
  std::string config;
  bool ok = read_fields(bytes, [&](Field& f) {
    if (f.number == 1) f.string(config);
  });
  return parsed(ok, std::move(config), "ModelConfigResponse", false);
}

std::string encode_model_statistics(const std::vector<ModelStatistics>& all) {
  std::string msg;
  for (const auto& s : all) put_message(msg, 1, statistics_message(s));
  return msg;
}

Result<std::vector<ModelStatistics>> decode_model_statistics(std::string_view bytes) {
  std::vector<ModelStatistics> all;
  bool ok = read_fields(bytes, [&](Field& f) {
    if (f.number != 1) return;
    f.message([&](std::string_view s) { return read_statistics(s, all.emplace_back()); });
  });
  return parsed(ok, std::move(all), "ModelStatisticsResponse", false);
}

std::string encode_repository_index(const std::vector<ModelIndex>& models) {
  std::string msg;
  for (const auto& m : models) {
    std::string index;
    wire::put_string_field(index, 1, m.name);
    wire::put_string_field(index, 2, m.version);
    if (m.state != ModelState::Unknown) {
      wire::put_string_field(index, 3, std::string(model_state_name(m.state)));
    }
    wire::put_string_field(index, 4, m.reason);
    put_message(msg, 1, index);
  }
  return msg;
}

Result<std::vector<ModelIndex>> decode_repository_index(std::string_view bytes) {
  std::vector<ModelIndex> models;
  bool ok = read_fields(bytes, [&](Field& f) {
    if (f.number != 1) return;
    f.message([&](std::string_view index) {
      ModelIndex& m = models.emplace_back();
      return read_fields(index, [&](Field& g) {
        if (g.number == 1) g.string(m.name);
        if (g.number == 2) g.string(m.version);
        if (g.number == 3) {
          std::string state;
          g.string(state);
          m.state = model_state_named(state);
        }
        if (g.number == 4) {
          g.string(m.reason);
          m.unloaded = m.reason == reason::kUnloaded;
        }
      });
    });
  });
  return parsed(ok, std::move(models), "RepositoryIndexResponse", false);
}

std::string encode_system_shm_status(const std::vector<SystemRegionStatus>& regions) {
  std::string msg;
  for (const auto& r : regions) {
    std::string status;
    wire::put_string_field(status, 1, r.name);
    wire::put_string_field(status, 2, r.key);
    put_uint(status, 3, r.offset);
    put_uint(status, 4, r.byte_size);
    put_map_entry(msg, 1, r.name, status);
  }
  return msg;
}

Result<std::vector<SystemRegionStatus>> decode_system_shm_status(std::string_view bytes) {
  std::vector<SystemRegionStatus> regions;
  bool ok = read_fields(bytes, [&](Field& f) {
    if (f.number != 1) return;
    f.message([&](std::string_view entry) {
      std::string key;
      std::string_view value;
      if (!read_map_entry(entry, key, value)) return false;
      SystemRegionStatus& r = regions.emplace_back();
      return read_fields(value, [&](Field& g) {
        if (g.number == 1) g.string(r.name);
        if (g.number == 2) g.string(r.key);
        if (g.number == 3) g.uint(r.offset);
        if (g.number == 4) g.uint(r.byte_size);
      });
    });
  });
  return parsed(ok, std::move(regions), "SystemSharedMemoryStatusResponse", false);
}

std::string encode_cuda_shm_status(const std::vector<CudaRegionStatus>& regions) {
  std::string msg;
  for (const auto& r : regions) {
    std::string status;
    wire::put_string_field(status, 1, r.name);
    put_uint(status, 2, r.device_id);
    put_uint(status, 3, r.byte_size);
    put_map_entry(msg, 1, r.name, status);
  }
  return msg;
}

Result<std::vector<CudaRegionStatus>> decode_cuda_shm_status(std::string_view bytes) {
  std::vector<CudaRegionStatus> regions;
  bool ok = read_fields(bytes, [&](Field& f) {
    if (f.number != 1) return;
    f.message([&](std::string_view entry) {
      std::string key;
      std::string_view value;
      if (!read_map_entry(entry, key, value)) return false;
      CudaRegionStatus& r = regions.emplace_back();
      return read_fields(value, [&](Field& g) {
        if (g.number == 1) g.string(r.name);
        if (g.number == 2) g.uint(r.device_id);
        if (g.number == 3) g.uint(r.byte_size);
      });
    });
  });
  return parsed(ok, std::move(regions), "CudaSharedMemoryStatusResponse", false);
}

}  // namespace sonic::protocol
