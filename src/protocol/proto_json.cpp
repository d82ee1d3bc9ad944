#include "proto_json.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "grpc_wire.hpp"
#include "proto_schema.hpp"
#include "wire.hpp"

namespace sonic::protocol {

namespace {

using namespace schema;
using wire::WireType;

// One occurrence of a field on the wire.
struct Occurrence {
  std::uint64_t bits = 0;  // varint or fixed value
  std::string_view bytes;  // length-delimited value
};

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
  explicit Printer(bool print_defaults) : print_defaults_(print_defaults) {}

  bool message(const MessageSchema& schema, std::string_view bytes, int depth) {
    if (depth > kMaxNestingDepth) return false;
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
      bool composite = f.type == kMessage || f.type == kGroup;
      // Fields with presence (messages, oneof members, optional ones) print only when set,
      // defaults included or not, as libprotobuf does.
      const bool has_presence = (composite && !f.repeated) || f.explicit_presence;
      if (list.empty()) {
        if (!print_defaults_ || has_presence) continue;
        if (!first) out_.push_back(',');
        first = false;
        append_escaped(out_, f.name);
        out_.push_back(':');
        if (f.repeated) {
          out_ += f.message && f.message->map_entry ? "{}" : "[]";
        } else if (!value(f, Occurrence{}, depth)) {
          return false;
        }
        continue;
      }
      if (!f.repeated && !has_presence && !print_defaults_ && is_default(f, list.back())) {
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
    if (is_length_delimited(f.type)) {
      Occurrence o;
      if (type != WireType::Len || !r.bytes(o.bytes)) return false;
      list.push_back(o);
      return true;
    }
    WireType element = wire_type_of(f.type);
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

  const bool print_defaults_;
  std::string out_;
};

}  // namespace

Result<std::string> message_to_json(std::string_view message_type, std::string_view bytes,
                                    JsonPrint print) {
  const MessageSchema* schema = Schema::instance().message("." + std::string(message_type));
  if (!schema) {
    return Error(StatusCode::NotFound,
                 "no message type '" + std::string(message_type) + "' in sonic's protocol schema");
  }
  Printer printer(print == JsonPrint::kWithDefaults);
  if (!printer.message(*schema, bytes, 0)) {
    return Error(StatusCode::Internal, "malformed " + std::string(message_type) + " from server");
  }
  return printer.take();
}

}  // namespace sonic::protocol
