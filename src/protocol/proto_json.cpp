#include "proto_json.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "grpc_wire.hpp"
#include "wire.hpp"

// The FileDescriptorSet protoc compiled from proto/*.proto (generated at build time).
extern const unsigned char sonic_protocol_descriptors[];
extern const unsigned long sonic_protocol_descriptors_size;

namespace sonic::protocol {

namespace {

using wire::WireType;

// FieldDescriptorProto.Type, as descriptor.proto numbers it.
enum FieldType : int {
  kDouble = 1,
  kFloat = 2,
  kInt64 = 3,
  kUint64 = 4,
  kInt32 = 5,
  kFixed64 = 6,
  kFixed32 = 7,
  kBool = 8,
  kString = 9,
  kGroup = 10,
  kMessage = 11,
  kBytes = 12,
  kUint32 = 13,
  kEnum = 14,
  kSfixed32 = 15,
  kSfixed64 = 16,
  kSint32 = 17,
  kSint64 = 18,
};

struct MessageSchema;
struct EnumSchema {
  std::map<std::int32_t, std::string> names;
};

struct FieldSchema {
  std::string name;
  std::uint32_t number = 0;
  int type = 0;
  bool repeated = false;
  bool explicit_presence = false;  // proto2 optional, proto3 optional, oneof member
  std::string type_name;           // fully qualified, with a leading dot
  const MessageSchema* message = nullptr;
  const EnumSchema* enumeration = nullptr;
};

struct MessageSchema {
  std::vector<FieldSchema> fields;  // in declaration order, as libprotobuf prints them
  bool map_entry = false;

  const FieldSchema* find(std::uint32_t number) const {
    for (const auto& f : fields) {
      if (f.number == number) return &f;
    }
    return nullptr;
  }
};

// Every message and enum of the embedded descriptors, by full name (".inference.ModelConfig").
class Schema {
 public:
  static const Schema& instance() {
    static const Schema schema;
    return schema;
  }

  const MessageSchema* message(const std::string& name) const {
    auto it = messages_.find(name);
    return it == messages_.end() ? nullptr : &it->second;
  }

 private:
  Schema() {
    std::string_view set(reinterpret_cast<const char*>(sonic_protocol_descriptors),
                         sonic_protocol_descriptors_size);
    each(set, [&](std::uint32_t field, std::string_view file) {
      if (field == 1) read_file(file);
    });
    for (auto& [name, message] : messages_) {
      for (auto& f : message.fields) {
        if (f.type == kMessage || f.type == kGroup) {
          auto it = messages_.find(f.type_name);
          f.message = it == messages_.end() ? nullptr : &it->second;
        } else if (f.type == kEnum) {
          auto it = enums_.find(f.type_name);
          f.enumeration = it == enums_.end() ? nullptr : &it->second;
        }
      }
    }
  }

  // Calls visit(field, bytes) for each length-delimited field, and visit(field, {}) with the
  // value in `varint` for varints. The descriptors are our own build output: trusted input.
  template <typename Visit>
  static void each(std::string_view bytes, Visit&& visit, std::uint64_t* varint = nullptr) {
    wire::Reader r(bytes);
    std::uint32_t field;
    WireType type;
    while (!r.done() && r.tag(field, type)) {
      if (type == WireType::Len) {
        std::string_view value;
        if (!r.bytes(value)) return;
        visit(field, value);
      } else if (type == WireType::Varint && varint) {
        if (!r.varint(*varint)) return;
        visit(field, std::string_view());
      } else if (!r.skip(type)) {
        return;
      }
    }
  }

  void read_file(std::string_view file) {
    std::string package;
    bool proto3 = false;
    each(file, [&](std::uint32_t field, std::string_view value) {
      if (field == 2) package = std::string(value);
      if (field == 12) proto3 = value == "proto3";
    });
    std::string scope = package.empty() ? "" : "." + package;
    each(file, [&](std::uint32_t field, std::string_view value) {
      if (field == 4) read_message(scope, value, proto3);
      if (field == 5) read_enum(scope, value);
    });
  }

  void read_message(const std::string& scope, std::string_view descriptor, bool proto3) {
    std::string name;
    each(descriptor, [&](std::uint32_t field, std::string_view value) {
      if (field == 1) name = std::string(value);
    });
    std::string full = scope + "." + name;
    MessageSchema& message = messages_[full];
    each(descriptor, [&](std::uint32_t field, std::string_view value) {
      if (field == 2) message.fields.push_back(read_field(value, proto3));
      if (field == 3) read_message(full, value, proto3);
      if (field == 4) read_enum(full, value);
      if (field == 7) {  // MessageOptions { bool map_entry = 7; }
        std::uint64_t v = 0;
        each(
            value,
            [&](std::uint32_t option, std::string_view) {
              if (option == 7) message.map_entry = v != 0;
            },
            &v);
      }
    });
  }

  static FieldSchema read_field(std::string_view descriptor, bool proto3) {
    FieldSchema f;
    bool in_oneof = false, proto3_optional = false;
    std::uint64_t v = 0;
    each(
        descriptor,
        [&](std::uint32_t field, std::string_view value) {
          switch (field) {
            case 1: f.name = std::string(value); break;
            case 3: f.number = static_cast<std::uint32_t>(v); break;
            case 4: f.repeated = v == 3; break;  // LABEL_REPEATED
            case 5: f.type = static_cast<int>(v); break;
            case 6: f.type_name = std::string(value); break;
            case 9: in_oneof = true; break;
            case 17: proto3_optional = v != 0; break;
          }
        },
        &v);
    f.explicit_presence = !proto3 || in_oneof || proto3_optional;
    return f;
  }

  void read_enum(const std::string& scope, std::string_view descriptor) {
    std::string name;
    each(descriptor, [&](std::uint32_t field, std::string_view value) {
      if (field == 1) name = std::string(value);
    });
    EnumSchema& e = enums_[scope + "." + name];
    each(descriptor, [&](std::uint32_t field, std::string_view value) {
      if (field != 2) return;
      std::string value_name;
      std::uint64_t number = 0;
      each(
          value,
          [&](std::uint32_t f, std::string_view text) {
            if (f == 1) value_name = std::string(text);
          },
          &number);
      e.names.emplace(static_cast<std::int32_t>(number), std::move(value_name));
    });
  }

  std::map<std::string, MessageSchema> messages_;
  std::map<std::string, EnumSchema> enums_;
};

// One occurrence of a field on the wire.
struct Occurrence {
  std::uint64_t bits = 0;  // varint or fixed value
  std::string_view bytes;  // length-delimited value
};

constexpr int kMaxDepth = 64;

void append_escaped(std::string& out, std::string_view text) {
  out.push_back('"');
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
          out += buffer;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

// Shortest text that reads back as the same value (as protobuf's SimpleDtoa/SimpleFtoa).
template <typename Real>
void append_real(std::string& out, Real value) {
  if (std::isnan(value)) {
    out += "\"NaN\"";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    return;
  }
  constexpr bool is_float = sizeof(Real) == 4;
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.*g", is_float ? 6 : 15, static_cast<double>(value));
  if (static_cast<Real>(std::strtod(buffer, nullptr)) != value) {
    std::snprintf(buffer, sizeof buffer, "%.*g", is_float ? 9 : 17, static_cast<double>(value));
  }
  out += buffer;
}

bool is_default(const FieldSchema& f, const Occurrence& o) {
  if (f.type == kString || f.type == kBytes) return o.bytes.empty();
  return o.bits == 0;
}

class Printer {
 public:
  bool message(const MessageSchema& schema, std::string_view bytes, int depth) {
    if (depth > kMaxDepth) return false;
    std::vector<std::vector<Occurrence>> seen(schema.fields.size());
    wire::Reader r(bytes);
    std::uint32_t number;
    WireType type;
    while (!r.done()) {
      if (!r.tag(number, type)) return false;
      const FieldSchema* f = schema.find(number);
      if (!f) {
        if (!r.skip(type)) return false;
        continue;
      }
      auto& list = seen[static_cast<std::size_t>(f - schema.fields.data())];
      if (!read(*f, type, r, list)) return false;
    }
    out_.push_back('{');
    bool first = true;
    for (std::size_t i = 0; i < schema.fields.size(); ++i) {
      const FieldSchema& f = schema.fields[i];
      auto& list = seen[i];
      if (list.empty()) continue;
      bool composite = f.type == kMessage || f.type == kGroup;
      if (!f.repeated && !composite && !f.explicit_presence && is_default(f, list.back())) {
        continue;
      }
      if (!first) out_.push_back(',');
      first = false;
      append_escaped(out_, f.name);
      out_.push_back(':');
      if (f.repeated && f.message && f.message->map_entry) {
        if (!map(*f.message, list, depth)) return false;
      } else if (f.repeated) {
        out_.push_back('[');
        for (std::size_t k = 0; k < list.size(); ++k) {
          if (k) out_.push_back(',');
          if (!value(f, list[k], depth)) return false;
        }
        out_.push_back(']');
      } else if (composite) {
        // Several occurrences of a message field merge; their concatenation is that merge.
        std::string merged;
        for (const auto& o : list) merged.append(o.bytes.data(), o.bytes.size());
        if (!value(f, Occurrence{0, merged}, depth)) return false;
      } else {
        if (!value(f, list.back(), depth)) return false;  // the last one wins
      }
    }
    out_.push_back('}');
    return true;
  }

  std::string take() { return std::move(out_); }

 private:
  static bool is_len_type(int type) {
    return type == kString || type == kBytes || type == kMessage || type == kGroup;
  }
  static WireType scalar_wire_type(int type) {
    switch (type) {
      case kDouble:
      case kFixed64:
      case kSfixed64: return WireType::Fixed64;
      case kFloat:
      case kFixed32:
      case kSfixed32: return WireType::Fixed32;
      default: return WireType::Varint;
    }
  }

  static bool read_scalar(WireType type, wire::Reader& r, std::uint64_t& bits) {
    std::uint32_t b32 = 0;
    switch (type) {
      case WireType::Varint: return r.varint(bits);
      case WireType::Fixed64: return r.fixed64(bits);
      case WireType::Fixed32:
        if (!r.fixed32(b32)) return false;
        bits = b32;
        return true;
      default: return false;
    }
  }

  static bool read(const FieldSchema& f, WireType type, wire::Reader& r,
                   std::vector<Occurrence>& list) {
    if (is_len_type(f.type)) {
      Occurrence o;
      if (type != WireType::Len || !r.bytes(o.bytes)) return false;
      list.push_back(o);
      return true;
    }
    WireType element = scalar_wire_type(f.type);
    if (type == WireType::Len && f.repeated) {  // packed
      std::string_view packed;
      if (!r.bytes(packed)) return false;
      wire::Reader p(packed);
      while (!p.done()) {
        Occurrence o;
        if (!read_scalar(element, p, o.bits)) return false;
        list.push_back(o);
      }
      return true;
    }
    if (type != element) return false;
    Occurrence o;
    if (!read_scalar(type, r, o.bits)) return false;
    list.push_back(o);
    return true;
  }

  bool map(const MessageSchema& entry, const std::vector<Occurrence>& list, int depth) {
    const FieldSchema* key = entry.find(1);
    const FieldSchema* val = entry.find(2);
    if (!key || !val) return false;
    out_.push_back('{');
    for (std::size_t k = 0; k < list.size(); ++k) {
      Occurrence key_value, value_value;
      std::vector<Occurrence> keys, values;
      wire::Reader r(list[k].bytes);
      std::uint32_t number;
      WireType type;
      while (!r.done()) {
        if (!r.tag(number, type)) return false;
        if (number == 1) {
          if (!read(*key, type, r, keys)) return false;
        } else if (number == 2) {
          if (!read(*val, type, r, values)) return false;
        } else if (!r.skip(type)) {
          return false;
        }
      }
      if (!keys.empty()) key_value = keys.back();
      if (!values.empty()) value_value = values.back();
      if (k) out_.push_back(',');
      // Keys are always strings in JSON.
      std::size_t mark = out_.size();
      if (!value(*key, key_value, depth)) return false;
      if (out_[mark] != '"') {
        out_.insert(out_.begin() + static_cast<std::ptrdiff_t>(mark), '"');
        out_.push_back('"');
      }
      out_.push_back(':');
      if (!value(*val, value_value, depth)) return false;
    }
    out_.push_back('}');
    return true;
  }

  bool value(const FieldSchema& f, const Occurrence& o, int depth) {
    std::uint64_t b = o.bits;
    switch (f.type) {
      case kDouble: {
        double d;
        std::memcpy(&d, &b, sizeof d);
        append_real(out_, d);
        return true;
      }
      case kFloat: {
        auto b32 = static_cast<std::uint32_t>(b);
        float x;
        std::memcpy(&x, &b32, sizeof x);
        append_real(out_, x);
        return true;
      }
      case kInt64:
      case kSfixed64:
        out_ += "\"" + std::to_string(static_cast<std::int64_t>(b)) + "\"";
        return true;
      case kSint64:
        out_ += "\"" + std::to_string(static_cast<std::int64_t>((b >> 1) ^ (~(b & 1) + 1))) + "\"";
        return true;
      case kUint64:
      case kFixed64: out_ += "\"" + std::to_string(b) + "\""; return true;
      case kInt32:
      case kSfixed32: out_ += std::to_string(static_cast<std::int32_t>(b)); return true;
      case kSint32: {
        auto u = static_cast<std::uint32_t>(b);
        out_ += std::to_string(static_cast<std::int32_t>((u >> 1) ^ (~(u & 1) + 1)));
        return true;
      }
      case kUint32:
      case kFixed32: out_ += std::to_string(static_cast<std::uint32_t>(b)); return true;
      case kBool: out_ += b ? "true" : "false"; return true;
      case kString: append_escaped(out_, o.bytes); return true;
      case kBytes: append_escaped(out_, base64_encode(o.bytes)); return true;
      case kEnum: {
        auto number = static_cast<std::int32_t>(b);
        if (f.enumeration) {
          auto it = f.enumeration->names.find(number);
          if (it != f.enumeration->names.end()) {
            append_escaped(out_, it->second);
            return true;
          }
        }
        out_ += std::to_string(number);
        return true;
      }
      case kMessage:
      case kGroup: return f.message && message(*f.message, o.bytes, depth + 1);
      default: return false;
    }
  }

  std::string out_;
};

}  // namespace

Result<std::string> message_to_json(std::string_view message_type, std::string_view bytes) {
  const MessageSchema* schema = Schema::instance().message("." + std::string(message_type));
  if (!schema) {
    return Error(StatusCode::NotFound,
                 "no message type '" + std::string(message_type) + "' in sonic's protocol schema");
  }
  Printer printer;
  if (!printer.message(*schema, bytes, 0)) {
    return Error(StatusCode::Internal, "malformed " + std::string(message_type) + " from server");
  }
  return printer.take();
}

}  // namespace sonic::protocol
