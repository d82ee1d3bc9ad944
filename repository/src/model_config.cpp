// Over 500 lines: one reader per section of Triton's ModelConfig, each with Triton's checks.
#include "sonic/repository/model_config.hpp"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <set>
#include <utility>

#include "protocol/config_types.hpp"
#include "protocol/invalid.hpp"
#include "protocol/proto_json.hpp"
#include "protocol/proto_text.hpp"
#include "protocol/wire.hpp"

namespace sonic::repository {

namespace {

using protocol::invalid;

namespace wire = protocol::wire;
using wire::WireType;

// Calls visit(field, type, reader) for each field of `bytes`; the visitor reads the value (or
// skips it). The bytes come from our own text parser: a failure here is a bug, reported.
template <typename Visit>
Result<void> each_field(std::string_view bytes, Visit&& visit) {
  wire::Reader r(bytes);
  std::uint32_t field;
  WireType type;
  while (!r.done()) {
    if (!r.tag(field, type) || !visit(field, type, r)) {
      return Error(StatusCode::Internal, "a ModelConfig did not decode");
    }
  }
  return {};
}

// The fields of `bytes` whose numbers are not in `read`, as they were on the wire: what sonic
// does not act on, kept to be written back as it came (the ModelConfig call answers every
// field the file set). Empty for bytes that do not decode (each_field reports those).
std::string unread_fields(std::string_view bytes, std::initializer_list<std::uint32_t> read) {
  std::string kept;
  wire::Reader r(bytes);
  while (!r.done()) {
    const std::uint8_t* start = r.position();
    std::uint32_t field;
    WireType type;
    if (!r.tag(field, type) || !r.skip(type)) return {};
    if (std::find(read.begin(), read.end(), field) == read.end()) {
      kept.append(reinterpret_cast<const char*>(start),
                  static_cast<std::size_t>(r.position() - start));
    }
  }
  return kept;
}

bool read_string(wire::Reader& r, std::string& out) {
  std::string_view bytes;
  if (!r.bytes(bytes)) return false;
  out = std::string(bytes);
  return true;
}

// A repeated integer field, packed or not.
template <typename Int>
bool read_repeated(WireType type, wire::Reader& r, std::vector<Int>& out) {
  std::uint64_t v;
  if (type == WireType::Varint) {
    if (!r.varint(v)) return false;
    out.push_back(static_cast<Int>(v));
    return true;
  }
  std::string_view packed;
  if (!r.bytes(packed)) return false;
  wire::Reader values(packed);
  while (!values.done()) {
    if (!values.varint(v)) return false;
    out.push_back(static_cast<Int>(v));
  }
  return true;
}

template <typename Int>
bool read_varint(wire::Reader& r, Int& out) {
  std::uint64_t v;
  if (!r.varint(v)) return false;
  out = static_cast<Int>(v);
  return true;
}

// ModelInput and ModelOutput share name = 1, data_type = 2, reshape = 5; dims are 4 and 3.
Result<TensorConfig> decode_tensor(std::string_view bytes, std::uint32_t dims_field) {
  TensorConfig t;
  auto decoded = each_field(bytes, [&](std::uint32_t field, WireType type, wire::Reader& r) {
    if (field == 1) return read_string(r, t.name);
    if (field == 2) {
      std::uint64_t number;
      if (!r.varint(number)) return false;
      t.data_type = protocol::data_type_of_config(number);
      return true;
    }
    if (field == dims_field) return read_repeated(type, r, t.dims);
    if (field == 5) {
      std::string_view reshape;
      if (!r.bytes(reshape)) return false;
      t.reshape.emplace();
      return each_field(reshape,
                        [&](std::uint32_t f, WireType ft, wire::Reader& rr) {
                          return f == 1 ? read_repeated(ft, rr, *t.reshape) : rr.skip(ft);
                        })
          .ok();
    }
    if (field == 8 && dims_field == 4) return read_varint(r, t.optional);
    if (field == 4 && dims_field == 3) return read_string(r, t.label_filename);
    return r.skip(type);
  });
  if (!decoded) return decoded.error();
  // ModelInput: name 1, data_type 2, dims 4, reshape 5, optional 8; ModelOutput: name 1,
  // data_type 2, dims 3, label_filename 4, reshape 5.
  t.kept = dims_field == 4 ? unread_fields(bytes, {1, 2, 4, 5, 8})
                           : unread_fields(bytes, {1, 2, 3, 4, 5});
  return t;
}

// ModelQueuePolicy { timeout_action = 1; default_timeout_microseconds = 2;
// allow_timeout_override = 3; max_queue_size = 4 }
bool decode_queue_policy(std::string_view bytes, QueuePolicyConfig& policy) {
  auto field = [&](std::uint32_t f, WireType type, wire::Reader& r) {
    std::uint64_t action = 0;
    switch (f) {
      case 1:
        if (!r.varint(action)) return false;
        policy.delay_on_timeout = action == 1;  // DELAY
        return true;
      case 2: return read_varint(r, policy.default_timeout_microseconds);
      case 3: return read_varint(r, policy.allow_timeout_override);
      case 4: return read_varint(r, policy.max_queue_size);
      default: return r.skip(type);
    }
  };
  return each_field(bytes, field).ok();
}

std::string encode_queue_policy(const QueuePolicyConfig& policy) {
  std::string out;
  if (policy.delay_on_timeout) wire::put_varint_field(out, 1, 1);
  wire::put_varint_field(out, 2, policy.default_timeout_microseconds);
  if (policy.allow_timeout_override) wire::put_varint_field(out, 3, 1);
  wire::put_varint_field(out, 4, policy.max_queue_size);
  return out;
}

// ModelDynamicBatching { preferred_batch_size = 1; max_queue_delay_microseconds = 2;
// preserve_ordering = 3; priority_levels = 4; default_priority_level = 5;
// default_queue_policy = 6; map<uint64, ModelQueuePolicy> priority_queue_policy = 7 }
bool decode_dynamic_batching(std::string_view bytes, DynamicBatching& batching) {
  auto field = [&](std::uint32_t f, WireType type, wire::Reader& r) {
    std::string_view body;
    switch (f) {
      case 1: return read_repeated(type, r, batching.preferred_batch_sizes);
      case 2: return read_varint(r, batching.max_queue_delay_microseconds);
      case 3: return read_varint(r, batching.preserve_ordering);
      case 4: return read_varint(r, batching.priority_levels);
      case 5: return read_varint(r, batching.default_priority_level);
      case 6: return r.bytes(body) && decode_queue_policy(body, batching.default_queue_policy);
      case 7: {  // a map entry { key = 1; value = 2 }
        if (!r.bytes(body)) return false;
        std::uint64_t level = 0;
        QueuePolicyConfig policy;
        auto entry = [&](std::uint32_t ef, WireType et, wire::Reader& er) {
          std::string_view value;
          if (ef == 1) return read_varint(er, level);
          if (ef == 2) return er.bytes(value) && decode_queue_policy(value, policy);
          return er.skip(et);
        };
        const bool ok = each_field(body, entry).ok();
        batching.priority_queue_policy[level] = policy;
        return ok;
      }
      default: return r.skip(type);
    }
  };
  batching.kept = unread_fields(bytes, {1, 2, 3, 4, 5, 6, 7});
  return each_field(bytes, field).ok();
}

// A repeated field of fixed 32-bit values (fp32_false_true), packed or not.
bool read_repeated_floats(WireType type, wire::Reader& r, std::vector<float>& out) {
  auto one = [&](wire::Reader& from) {
    std::uint32_t bits;
    if (!from.fixed32(bits)) return false;
    float value;
    std::memcpy(&value, &bits, sizeof value);
    out.push_back(value);
    return true;
  };
  if (type == WireType::Fixed32) return one(r);
  std::string_view packed;
  if (!r.bytes(packed)) return false;
  wire::Reader values(packed);
  while (!values.done()) {
    if (!one(values)) return false;
  }
  return true;
}

// ControlInput { name = 1; repeated Control control = 2 }; Control { kind = 1;
// int32_false_true = 2; fp32_false_true = 3; data_type = 4; bool_false_true = 5 }
bool decode_control_input(std::string_view bytes, SequenceControlConfig& control) {
  control.controls = 0;
  return each_field(bytes,
                    [&](std::uint32_t f, WireType type, wire::Reader& r) {
                      if (f == 1) return read_string(r, control.input);
                      if (f != 2) return r.skip(type);
                      std::string_view body;
                      if (!r.bytes(body)) return false;
                      ++control.controls;
                      return each_field(
                                 body,
                                 [&](std::uint32_t cf, WireType ct, wire::Reader& cr) {
                                   std::uint64_t number = 0;
                                   switch (cf) {
                                     case 1:
                                       if (!cr.varint(number)) return false;
                                       control.kind =
                                           static_cast<SequenceControlConfig::Kind>(number);
                                       return true;
                                     case 2: return read_repeated(ct, cr, control.int32_false_true);
                                     case 3:
                                       return read_repeated_floats(ct, cr, control.fp32_false_true);
                                     case 4:
                                       if (!cr.varint(number)) return false;
                                       control.data_type = protocol::data_type_of_config(number);
                                       return true;
                                     case 5: return read_repeated(ct, cr, control.bool_false_true);
                                     default: return cr.skip(ct);
                                   }
                                 })
                          .ok();
                    })
      .ok();
}

// State { input_name = 1; output_name = 2; data_type = 3; dims = 4; initial_state = 5 };
// InitialState { data_type = 1; dims = 2; zero_data = 3; data_file = 4; name = 5 }
bool decode_state(std::string_view bytes, SequenceStateConfig& state) {
  return each_field(bytes,
                    [&](std::uint32_t f, WireType type, wire::Reader& r) {
                      std::uint64_t number = 0;
                      std::string_view body;
                      switch (f) {
                        case 1: return read_string(r, state.input_name);
                        case 2: return read_string(r, state.output_name);
                        case 3:
                          if (!r.varint(number)) return false;
                          state.data_type = protocol::data_type_of_config(number);
                          return true;
                        case 4: return read_repeated(type, r, state.dims);
                        case 5:
                          if (!r.bytes(body)) return false;
                          ++state.initial_states;
                          return each_field(body,
                                            [&](std::uint32_t sf, WireType st, wire::Reader& sr) {
                                              if (sf == 2)
                                                return read_repeated(st, sr, state.initial_dims);
                                              if (sf == 4)
                                                return read_string(sr, state.initial_data_file);
                                              return sr.skip(st);
                                            })
                              .ok();
                        default: return r.skip(type);
                      }
                    })
      .ok();
}

// ModelSequenceBatching { max_sequence_idle_microseconds = 1; control_input = 2; direct = 3;
// oldest = 4; state = 5 }: the strategy is read past (requests run one at a time).
bool decode_sequence_batching(std::string_view bytes, SequenceBatchingConfig& batching) {
  batching.encoded = std::string(bytes);
  return each_field(bytes,
                    [&](std::uint32_t f, WireType type, wire::Reader& r) {
                      std::string_view body;
                      switch (f) {
                        case 1: return read_varint(r, batching.max_sequence_idle_microseconds);
                        case 2:
                          return r.bytes(body) &&
                                 decode_control_input(body, batching.controls.emplace_back());
                        case 5:
                          return r.bytes(body) &&
                                 decode_state(body, batching.states.emplace_back());
                        default: return r.skip(type);
                      }
                    })
      .ok();
}

// ModelEnsembling { repeated Step step = 1; max_inflight_requests = 2 }, Step { model_name = 1;
// model_version = 2; map input_map = 3; map output_map = 4 } (maps: entries { key = 1;
// value = 2 }).
bool decode_ensemble_scheduling(std::string_view bytes, ModelConfig& c) {
  std::vector<EnsembleStep>& steps = c.ensemble_steps.emplace();
  return each_field(bytes,
                    [&](std::uint32_t field, WireType type, wire::Reader& r) {
                      if (field == 2) return read_varint(r, c.ensemble_max_inflight_requests);
                      if (field != 1) return r.skip(type);
                      std::string_view body;
                      if (!r.bytes(body)) return false;
                      EnsembleStep& step = steps.emplace_back();
                      return each_field(body,
                                        [&](std::uint32_t f, WireType ft, wire::Reader& v) {
                                          if (f == 1) return read_string(v, step.model_name);
                                          if (f == 2) return read_varint(v, step.model_version);
                                          if (f != 3 && f != 4) return v.skip(ft);
                                          std::string_view entry;
                                          if (!v.bytes(entry)) return false;
                                          std::string key, value;
                                          bool ok =
                                              each_field(entry, [&](std::uint32_t ef, WireType et,
                                                                    wire::Reader& ev) {
                                                if (ef == 1) return read_string(ev, key);
                                                if (ef == 2) return read_string(ev, value);
                                                return ev.skip(et);
                                              }).ok();
                                          (f == 3 ? step.input_map : step.output_map)[key] = value;
                                          return ok;
                                        })
                          .ok();
                    })
      .ok();
}

// The ModelConfig fields sonic reads (and writes back from what it read).
constexpr std::initializer_list<std::uint32_t> kReadModelConfigFields = {1, 2,  3,  4,  5,  6, 7,
                                                                         8, 11, 13, 14, 17, 19};
// Triton's other ModelConfig fields, by number: kept as they came, named in ignored_fields.
const std::pair<std::uint32_t, const char*> kKeptModelConfigFields[] = {
    {9, "ModelConfig.cc_model_filenames"}, {10, "ModelConfig.metric_tags"},
    {12, "ModelConfig.optimization"},      {16, "ModelConfig.model_warmup"},
    {18, "ModelConfig.model_operations"},  {20, "ModelConfig.batch_input"},
    {21, "ModelConfig.batch_output"},      {23, "ModelConfig.model_repository_agents"},
    {24, "ModelConfig.response_cache"},    {25, "ModelConfig.runtime"},
    {26, "ModelConfig.model_metrics"}};

// Whether serialized fields hold field `number`.
bool has_field(std::string_view bytes, std::uint32_t number) {
  wire::Reader r(bytes);
  std::uint32_t field;
  WireType type;
  while (!r.done() && r.tag(field, type)) {
    if (field == number) return true;
    if (!r.skip(type)) return false;
  }
  return false;
}

Result<ModelConfig> decode(std::string_view bytes) {
  ModelConfig c;
  auto decoded = each_field(bytes, [&](std::uint32_t field, WireType type, wire::Reader& r) {
    std::string_view sub;
    switch (field) {
      case 1: return read_string(r, c.name);
      case 2: return read_string(r, c.platform);
      case 17: return read_string(r, c.backend);
      case 8: return read_string(r, c.default_model_filename);
      case 4: return read_varint(r, c.max_batch_size);
      case 5:
      case 6: {
        if (!r.bytes(sub)) return false;
        auto tensor = decode_tensor(sub, field == 5 ? 4 : 3);
        if (!tensor) return false;
        (field == 5 ? c.inputs : c.outputs).push_back(std::move(*tensor));
        return true;
      }
      case 3: {  // ModelVersionPolicy { latest = 1; all = 2; specific = 3 }
        if (!r.bytes(sub)) return false;
        return each_field(sub,
                          [&](std::uint32_t choice, WireType, wire::Reader& rr) {
                            std::string_view body;
                            if (!rr.bytes(body)) return false;
                            if (choice == 2) c.version_policy.kind = VersionPolicy::Kind::All;
                            if (choice == 1) {
                              c.version_policy.kind = VersionPolicy::Kind::Latest;
                              c.version_policy.latest_count = 0;
                            }
                            if (choice == 3) c.version_policy.kind = VersionPolicy::Kind::Specific;
                            return each_field(
                                       body,
                                       [&](std::uint32_t f, WireType ft, wire::Reader& v) {
                                         if (f != 1) return v.skip(ft);
                                         if (choice == 1)
                                           return read_varint(v, c.version_policy.latest_count);
                                         return read_repeated(ft, v, c.version_policy.versions);
                                       })
                                .ok();
                          })
            .ok();
      }
      case 7: {  // ModelInstanceGroup { name = 1; count = 2; kind = 4 }
        if (!r.bytes(sub)) return false;
        InstanceGroup group;
        group.count = 0;
        bool ok = each_field(sub, [&](std::uint32_t f, WireType ft, wire::Reader& v) {
                    if (f == 1) return read_string(v, group.name);
                    if (f == 2) return read_varint(v, group.count);
                    if (f == 4) return read_varint(v, group.kind);
                    return v.skip(ft);
                  }).ok();
        group.kept = unread_fields(sub, {1, 2, 4});
        c.instance_groups.push_back(std::move(group));
        return ok;
      }
      case 11:                        // ModelDynamicBatching
        c.sequence_batching.reset();  // one of them (a oneof: the last one read)
        return r.bytes(sub) && decode_dynamic_batching(sub, c.dynamic_batching.emplace());
      case 13:  // ModelSequenceBatching
        c.dynamic_batching.reset();
        return r.bytes(sub) && decode_sequence_batching(sub, c.sequence_batching.emplace());
      case 14: {  // map<string, ModelParameter { string_value = 1 }>: entries { key = 1; value = 2
                  // }
        if (!r.bytes(sub)) return false;
        std::string key, value;
        bool ok = each_field(sub, [&](std::uint32_t f, WireType ft, wire::Reader& v) {
                    if (f == 1) return read_string(v, key);
                    if (f != 2) return v.skip(ft);
                    std::string_view parameter;
                    if (!v.bytes(parameter)) return false;
                    return each_field(parameter,
                                      [&](std::uint32_t pf, WireType pt, wire::Reader& pv) {
                                        return pf == 1 ? read_string(pv, value) : pv.skip(pt);
                                      })
                        .ok();
                  }).ok();
        c.parameters[key] = value;
        return ok;
      }
      case 15:  // ModelEnsembling: read, and kept as it came to be written back
        if (!r.bytes(sub)) return false;
        return decode_ensemble_scheduling(sub, c);
      case 19: {  // ModelTransactionPolicy { decoupled = 1 }
        if (!r.bytes(sub)) return false;
        return each_field(sub,
                          [&](std::uint32_t f, WireType ft, wire::Reader& v) {
                            return f == 1 ? read_varint(v, c.decoupled) : v.skip(ft);
                          })
            .ok();
      }
      default: return r.skip(type);
    }
  });
  if (!decoded) return decoded.error();
  c.kept = unread_fields(bytes, kReadModelConfigFields);
  for (auto field : kKeptModelConfigFields) {
    if (has_field(c.kept, field.first)) c.ignored_fields.push_back(field.second);
  }
  return c;
}

// Triton's words (core src/model_config_utils.cc, ValidateIOShape and ValidateModelIOConfig:
// "model input 'x' must specify 'data_type' for m"), then what to write where it helps.
Result<void> check_tensors(const ModelConfig& config, const std::vector<TensorConfig>& tensors,
                           const char* kind, const std::string& origin) {
  const std::string model = " for " + config.name;
  std::set<std::string> names;
  for (const auto& t : tensors) {
    if (t.name.empty()) {
      return invalid(origin, std::string("model ") + kind + " must specify 'name'" + model);
    }
    if (!names.insert(t.name).second) {
      return invalid(origin, std::string(kind) + " '" + t.name + "' is given twice");
    }
    const std::string what = std::string("model ") + kind + " '" + t.name + "'";
    if (!t.data_type) {
      return invalid(origin,
                     what + " must specify 'data_type'" + model + " (TYPE_FP32, TYPE_INT64, ...)");
    }
    if (t.dims.empty()) {
      return invalid(origin, what + " must specify 'dims'" + model +
                                 (config.max_batch_size > 0
                                      ? " (without the batch dimension: max_batch_size > 0)"
                                      : ""));
    }
    for (auto d : t.dims) {
      if (d == 0 || d < -1) {
        return invalid(origin, what +
                                   " dimension must be integer >= 1, or -1 to indicate a "
                                   "variable-size dimension" +
                                   model + " (it has " + std::to_string(d) + ")");
      }
    }
    if (t.reshape) {
      // Triton's rule: the same elements either way (checked where both are fully known; a
      // request's shape is checked when it comes).
      auto known = [](const std::vector<std::int64_t>& shape) {
        std::int64_t n = 1;
        for (auto d : shape) n = d < 0 ? -1 : (n < 0 ? -1 : n * d);
        return n;
      };
      const std::int64_t from = known(t.dims), to = known(*t.reshape);
      if (from >= 0 && to >= 0 && from != to) {
        return invalid(origin, what + " has different size for dims and reshape" + model + " (" +
                                   std::to_string(from) + " elements by its dims but " +
                                   std::to_string(to) + " by its reshape)");
      }
    }
  }
  return {};
}

namespace {

const char* control_kind_name(SequenceControlConfig::Kind kind) {
  switch (kind) {
    case SequenceControlConfig::Kind::Start: return "CONTROL_SEQUENCE_START";
    case SequenceControlConfig::Kind::Ready: return "CONTROL_SEQUENCE_READY";
    case SequenceControlConfig::Kind::End: return "CONTROL_SEQUENCE_END";
    case SequenceControlConfig::Kind::CorrelationId: return "CONTROL_SEQUENCE_CORRID";
  }
  return "an unknown control kind";
}

}  // namespace

}  // namespace

// Triton's rules for sequence_batching (each control kind once; a flag's values given by
// exactly one *_false_true pair; the correlation id an integer or a string; states named and
// typed), plus sonic's own: one control per input, one initial state per state, and names
// that are not also the config's inputs or outputs (the batcher supplies and takes those).
Result<void> check_sequence_batching(const ModelConfig& config, const std::string& origin) {
  if (!config.sequence_batching) return {};
  const auto& batching = *config.sequence_batching;
  if (config.decoupled) {
    return invalid(origin, "sequence_batching serves models that are not decoupled");
  }
  std::set<std::string> names;
  for (const auto& t : config.inputs) names.insert(t.name);
  for (const auto& t : config.outputs) names.insert(t.name);
  auto unique = [&](const std::string& name, const std::string& what) -> Result<void> {
    if (name.empty()) return invalid(origin, what + " needs a name");
    if (!names.insert(name).second) {
      return invalid(origin, what + " '" + name +
                                 "' has the name of another input, output or state: the "
                                 "sequence batcher gives and takes it, so it is not listed "
                                 "elsewhere");
    }
    return {};
  };
  std::set<SequenceControlConfig::Kind> kinds;
  for (const auto& control : batching.controls) {
    const std::string what = std::string("control input '") + control.input + "'";
    if (auto ok = unique(control.input, "a control input"); !ok) return ok;
    if (control.controls != 1) {
      return invalid(origin, what + " lists " + std::to_string(control.controls) +
                                 " controls; sonic takes one per input");
    }
    if (!kinds.insert(control.kind).second) {
      return invalid(origin, std::string("sequence_batching gives ") +
                                 control_kind_name(control.kind) + " twice");
    }
    if (control.kind == SequenceControlConfig::Kind::CorrelationId) {
      const auto type = control.data_type;
      if (!type ||
          (*type != DataType::UInt64 && *type != DataType::Int64 && *type != DataType::UInt32 &&
           *type != DataType::Int32 && *type != DataType::Bytes)) {
        return invalid(origin, what +
                                   ": CONTROL_SEQUENCE_CORRID needs a data_type of "
                                   "TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or "
                                   "TYPE_STRING");
      }
      continue;
    }
    const int pairs = !control.int32_false_true.empty() + !control.fp32_false_true.empty() +
                      !control.bool_false_true.empty();
    const std::size_t values = control.int32_false_true.size() + control.fp32_false_true.size() +
                               control.bool_false_true.size();
    if (pairs != 1 || values != 2) {
      return invalid(origin, what + ": " + control_kind_name(control.kind) +
                                 " needs exactly one of int32_false_true, fp32_false_true or "
                                 "bool_false_true, with two values: false, then true");
    }
  }
  for (const auto& state : batching.states) {
    const std::string what = "state '" + state.input_name + "'";
    if (auto ok = unique(state.input_name, "a state's input_name"); !ok) return ok;
    if (auto ok = unique(state.output_name, what + ": its output_name"); !ok) return ok;
    if (!state.data_type || *state.data_type == DataType::Bytes) {
      return invalid(origin, what + " needs a numeric data_type");
    }
    if (state.dims.empty()) return invalid(origin, what + " needs dims");
    for (auto d : state.dims) {
      if (d == 0 || d < -1) {
        return invalid(origin, what + " has dimension " + std::to_string(d) +
                                   ": a size is positive, or -1 for any size");
      }
    }
    if (state.initial_states > 1) {
      return invalid(origin, what + " has " + std::to_string(state.initial_states) +
                                 " initial_state entries; sonic takes one");
    }
    for (auto d : state.initial_dims) {
      if (d < 1) return invalid(origin, what + ": an initial_state's dims are all positive");
    }
    if (state.initial_data_file.find('/') != std::string::npos || state.initial_data_file == "..") {
      return invalid(origin, what + ": initial_state data_file '" + state.initial_data_file +
                                 "' must be a file name in the model's initial_state directory");
    }
  }
  return {};
}

std::int32_t ModelConfig::instance_count() const {
  std::int32_t count = 0;
  for (const auto& group : instance_groups) count += group.count;
  return instance_groups.empty() ? 1 : count;
}

Result<ModelConfig> parse_model_config(std::string_view text, const std::string& origin) {
  // The schema has every field of Triton's ModelConfig: a name it does not know is a mistake,
  // refused as libprotobuf (and so Triton) refuses it.
  auto parsed = protocol::parse_text_message("inference.ModelConfig", text);
  if (!parsed) return Error(parsed.error().code(), origin + ":" + parsed.error().message());
  return decode(parsed->bytes);
}

Result<ModelConfig> parse_model_config_json(std::string_view json, const std::string& origin) {
  auto bytes = protocol::message_from_json("inference.ModelConfig", json);
  if (!bytes) return Error(bytes.error().code(), origin + ": " + bytes.error().message());
  return decode(*bytes);
}

// Triton's rules and words (core src/model_config_utils.cc, ValidateModelConfig), and sonic's
// own where Triton has none (a model without outputs, a tensor listed twice).
Result<void> check_model_config(const ModelConfig& config, const std::string& origin) {
  const std::string model = " for " + config.name;
  if (config.max_batch_size < 0) {
    return invalid(origin, "'max_batch_size' must be non-negative value" + model);
  }
  if (auto ok = check_tensors(config, config.inputs, "input", origin); !ok) return ok;
  if (auto ok = check_tensors(config, config.outputs, "output", origin); !ok) return ok;
  if (config.outputs.empty()) return invalid(origin, "the model has no output");
  const auto& versions = config.version_policy;
  if (versions.kind == VersionPolicy::Kind::Latest && versions.latest_count == 0) {
    return invalid(origin, "version_policy latest needs num_versions of 1 or more");
  }
  if (versions.kind == VersionPolicy::Kind::Specific && versions.versions.empty()) {
    return invalid(origin, "version_policy specific lists no versions");
  }
  for (const auto& group : config.instance_groups) {
    if (group.count < 1) {
      return invalid(origin, "instance_group '" + group.name + "' needs a count of 1 or more");
    }
    if (group.kind == InstanceGroup::Kind::Gpu) {
      // Triton's words in a build without GPU support, which sonic's backends are.
      return invalid(origin, "instance group " + group.name + " of model " + config.name +
                                 " has kind KIND_GPU but server does not support GPUs (use "
                                 "KIND_CPU, or KIND_AUTO)");
    }
  }
  // With max_batch_size 0 Triton accepts dynamic_batching, and it merges nothing.
  if (config.dynamic_batching && config.max_batch_size > 0) {
    const auto& b = *config.dynamic_batching;
    if (b.priority_levels > 0 &&
        (b.default_priority_level < 1 || b.default_priority_level > b.priority_levels)) {
      // Requests without a priority need a level to go to.
      return invalid(origin, "default priority level must be in range [1, " +
                                 std::to_string(b.priority_levels) + "]" + model);
    }
    for (const auto& [level, policy] : b.priority_queue_policy) {
      if (level < 1 || level > b.priority_levels) {
        return invalid(origin, "priority queue policy must have priority level in range [1, " +
                                   std::to_string(b.priority_levels) + "]" + model);
      }
    }
    for (auto size : b.preferred_batch_sizes) {
      if (size < 1) {
        return invalid(origin, "dynamic batching preferred size must be positive" + model);
      }
      if (size > config.max_batch_size) {
        return invalid(origin, "dynamic batching preferred size must be <= max batch size" + model +
                                   " (preferred_batch_size " + std::to_string(size) +
                                   ", max_batch_size " + std::to_string(config.max_batch_size) +
                                   ")");
      }
    }
  }
  if (config.sequence_batching) return check_sequence_batching(config, origin);
  return {};
}

std::string serialize_model_config(const ModelConfig& config) {
  auto tensor = [](const TensorConfig& t, std::uint32_t dims_field) {
    std::string out;
    wire::put_string_field(out, 1, t.name);
    if (t.data_type) wire::put_varint_field(out, 2, protocol::config_data_type(*t.data_type));
    std::string dims;
    for (auto d : t.dims) wire::put_varint(dims, static_cast<std::uint64_t>(d));
    if (!dims.empty()) wire::put_len_field(out, dims_field, dims);
    if (t.reshape) {  // ModelTensorReshape { shape = 1 }
      std::string shape, reshape;
      for (auto d : *t.reshape) wire::put_varint(shape, static_cast<std::uint64_t>(d));
      if (!shape.empty()) wire::put_len_field(reshape, 1, shape);
      wire::put_len_field(out, 5, reshape);
    }
    if (t.optional) wire::put_varint_field(out, 8, 1);
    if (!t.label_filename.empty()) wire::put_string_field(out, 4, t.label_filename);
    out += t.kept;
    return out;
  };
  std::string out;
  if (!config.name.empty()) wire::put_string_field(out, 1, config.name);
  if (!config.platform.empty()) wire::put_string_field(out, 2, config.platform);
  {
    std::string policy, body;
    const auto& p = config.version_policy;
    if (p.kind == VersionPolicy::Kind::Latest) wire::put_varint_field(body, 1, p.latest_count);
    if (p.kind == VersionPolicy::Kind::Specific) {
      std::string versions;
      for (auto v : p.versions) wire::put_varint(versions, static_cast<std::uint64_t>(v));
      wire::put_len_field(body, 1, versions);
    }
    wire::put_len_field(policy,
                        p.kind == VersionPolicy::Kind::Latest ? 1
                        : p.kind == VersionPolicy::Kind::All  ? 2
                                                              : 3,
                        body);
    wire::put_len_field(out, 3, policy);
  }
  if (config.max_batch_size) {
    wire::put_varint_field(out, 4, static_cast<std::uint64_t>(config.max_batch_size));
  }
  for (const auto& t : config.inputs) wire::put_len_field(out, 5, tensor(t, 4));
  for (const auto& t : config.outputs) wire::put_len_field(out, 6, tensor(t, 3));
  for (const auto& g : config.instance_groups) {
    std::string group;
    if (!g.name.empty()) wire::put_string_field(group, 1, g.name);
    wire::put_varint_field(group, 2, static_cast<std::uint64_t>(g.count));
    if (g.kind != InstanceGroup::Kind::Auto) {
      wire::put_varint_field(group, 4, static_cast<std::uint64_t>(g.kind));
    }
    group += g.kept;
    wire::put_len_field(out, 7, group);
  }
  if (!config.default_model_filename.empty()) {
    wire::put_string_field(out, 8, config.default_model_filename);
  }
  if (config.dynamic_batching) {
    std::string batching, sizes;
    for (auto s : config.dynamic_batching->preferred_batch_sizes) {
      wire::put_varint(sizes, static_cast<std::uint64_t>(s));
    }
    if (!sizes.empty()) wire::put_len_field(batching, 1, sizes);
    if (config.dynamic_batching->max_queue_delay_microseconds) {
      wire::put_varint_field(batching, 2, config.dynamic_batching->max_queue_delay_microseconds);
    }
    const auto& b = *config.dynamic_batching;
    if (b.preserve_ordering) wire::put_varint_field(batching, 3, 1);
    wire::put_varint_field(batching, 4, b.priority_levels);
    wire::put_varint_field(batching, 5, b.default_priority_level);
    const std::string default_policy = encode_queue_policy(b.default_queue_policy);
    if (!default_policy.empty()) wire::put_len_field(batching, 6, default_policy);
    for (const auto& [level, policy] : b.priority_queue_policy) {
      std::string entry;
      wire::put_varint_field(entry, 1, level);
      wire::put_len_field(entry, 2, encode_queue_policy(policy));
      wire::put_len_field(batching, 7, entry);
    }
    batching += b.kept;
    wire::put_len_field(out, 11, batching);
  }
  if (config.sequence_batching) wire::put_len_field(out, 13, config.sequence_batching->encoded);
  for (const auto& [key, value] : config.parameters) {
    std::string entry, parameter;
    wire::put_string_field(parameter, 1, value);
    wire::put_string_field(entry, 1, key);
    wire::put_len_field(entry, 2, parameter);
    wire::put_len_field(out, 14, entry);
  }
  if (!config.backend.empty()) wire::put_string_field(out, 17, config.backend);
  if (config.decoupled) {
    std::string policy;
    wire::put_varint_field(policy, 1, 1);
    wire::put_len_field(out, 19, policy);
  }
  out += config.kept;
  return out;
}

}  // namespace sonic::repository
