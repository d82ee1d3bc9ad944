// JSON into a message of proto/, by protobuf's JSON mapping (proto3), with the embedded schema:
// what Triton's RepositoryModelLoad "config" parameter carries (a ModelConfig as JSON).
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "grpc_wire.hpp"
#include "invalid.hpp"
#include "proto_json.hpp"
#include "proto_schema.hpp"
#include "utf8.hpp"
#include "wire.hpp"

namespace sonic::protocol {

namespace {

using namespace schema;
using wire::WireType;

// A parsed JSON value. Numbers keep their text, so that 64-bit integers stay exact.
struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool boolean = false;
  std::string text;  // a number's spelling, or a string's value
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;
};

class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : text_(text) {}

  Result<Json> document() {
    auto value = this->value(0);
    if (!value) return value;
    skip_space();
    if (pos_ != text_.size()) return error("text after the JSON value");
    return value;
  }

 private:
  Error error(const std::string& what) const {
    return Error(StatusCode::InvalidArgument, "JSON at byte " + std::to_string(pos_) + ": " + what);
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool take_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Result<Json> value(int depth) {
    if (depth > kMaxNestingDepth)
      return error("nested deeper than " + std::to_string(kMaxNestingDepth));
    skip_space();
    if (pos_ >= text_.size()) return error("a value is missing");
    Json v;
    char c = text_[pos_];
    if (c == '{') {
      ++pos_;
      v.kind = Json::Object;
      if (take('}')) return v;
      do {
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == '}') break;  // a trailing comma, as below
        auto key = string();
        if (!key) return key.error();
        if (!take(':')) return error("':' expected after a key");
        auto member = value(depth + 1);
        if (!member) return member;
        v.members.emplace_back(std::move(*key), std::move(*member));
      } while (take(','));
      if (!take('}')) return error("'}' or ',' expected");
      return v;
    }
    if (c == '[') {
      ++pos_;
      v.kind = Json::Array;
      if (take(']')) return v;
      do {
        // libprotobuf's JSON parser (which Triton's server uses) takes a trailing comma.
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == ']') break;
        auto item = value(depth + 1);
        if (!item) return item;
        v.items.push_back(std::move(*item));
      } while (take(','));
      if (!take(']')) return error("']' or ',' expected");
      return v;
    }
    if (c == '"') {
      auto s = string();
      if (!s) return s.error();
      v.kind = Json::String;
      v.text = std::move(*s);
      return v;
    }
    if (take_word("true") || take_word("false")) {
      v.kind = Json::Bool;
      v.boolean = text_[pos_ - 1] == 'e' && text_[pos_ - 2] == 'u';
      return v;
    }
    if (take_word("null")) return v;
    std::size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    while (pos_ < text_.size() &&
           (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
            text_[pos_] == 'e' || text_[pos_] == 'E' || text_[pos_] == '+' || text_[pos_] == '-')) {
      ++pos_;
    }
    if (pos_ == start) return error("unexpected character");
    v.kind = Json::Number;
    v.text = std::string(text_.substr(start, pos_ - start));
    if (!is_json_number(v.text)) return error("'" + v.text + "' is not a JSON number");
    return v;
  }

  // RFC 8259's number, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, as libprotobuf's
  // parser reads it: the fraction's digits may be missing.
  static bool is_json_number(const std::string& t) {
    std::size_t i = 0;
    auto digits = [&] {
      std::size_t from = i;
      while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
      return i - from;
    };
    if (i < t.size() && t[i] == '-') ++i;
    if (i < t.size() && t[i] == '0') {
      ++i;
    } else if (digits() == 0) {
      return false;
    }
    if (i < t.size() && t[i] == '.') {  // libprotobuf also takes "1." (no fraction digits)
      ++i;
      digits();
    }
    if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
      ++i;
      if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
      if (digits() == 0) return false;
    }
    return i == t.size();
  }

  Result<std::string> string() {
    if (pos_ >= text_.size() || text_[pos_] != '"') return error("a string expected");
    ++pos_;
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (static_cast<unsigned char>(c) < 0x20) return error("a control character in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) break;
      char e = text_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          auto code = hex4();
          if (!code) return code.error();
          std::uint32_t cp = *code;
          if (cp >= 0xd800 && cp < 0xdc00) {  // a surrogate pair
            if (!take_word("\\u")) return error("a lone surrogate in a string");
            auto low = hex4();
            if (!low || *low < 0xdc00 || *low >= 0xe000) return error("a lone surrogate");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (*low - 0xdc00);
          } else if (cp >= 0xdc00 && cp < 0xe000) {
            return error("a lone surrogate in a string");
          }
          append_utf8(out, cp);
          break;
        }
        default: out.push_back(e); break;  // libprotobuf's JSON parser reads \X as X
      }
    }
    if (pos_ >= text_.size()) return error("a string is not closed");
    ++pos_;
    return out;
  }

  Result<std::uint32_t> hex4() {
    if (pos_ + 4 > text_.size()) return error("\\u needs four hexadecimal digits");
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return error("\\u needs four hexadecimal digits");
      v = v * 16 + static_cast<std::uint32_t>(d);
    }
    return v;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// protobuf's JSON name of a field: lowerCamelCase of its name.
std::string json_name(const std::string& name) {
  std::string out;
  bool upper = false;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out.push_back(upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
    upper = false;
  }
  return out;
}

class Encoder {
 public:
  Result<std::string> message(const MessageSchema& schema, const Json& json,
                              const std::string& where) {
    if (json.kind != Json::Object) return invalid(where, "an object expected");
    std::map<std::uint32_t, std::string> fields;  // encoded occurrences, in number order
    std::set<int> oneofs;
    for (const auto& [key, value] : json.members) {
      const FieldSchema* f = schema.find(std::string_view(key));
      if (!f) {
        for (const auto& candidate : schema.fields) {
          if (json_name(candidate.name) == key) f = &candidate;
        }
      }
      const std::string at = where + "." + key;
      if (!f) return invalid(at, schema.full_name + " has no such field");
      if (fields.count(f->number)) return invalid(at, "the field is given twice");
      if (value.kind == Json::Null) continue;
      if (f->oneof_index >= 0 && !oneofs.insert(f->oneof_index).second) {
        return invalid(at, "another field of its oneof is given");
      }
      std::string& out = fields[f->number];
      if (f->message && f->message->map_entry) {
        if (value.kind != Json::Object) return invalid(at, "a map is an object");
        for (const auto& [map_key, map_value] : value.members) {
          auto entry = map_entry(*f->message, map_key, map_value, at + "[" + map_key + "]");
          if (!entry) return entry.error();
          wire::put_len_field(out, f->number, *entry);
        }
      } else if (f->repeated) {
        // A single value stands for a list of one, as libprotobuf's JSON parser takes it.
        const std::vector<Json> one =
            value.kind == Json::Array ? std::vector<Json>{} : std::vector<Json>{value};
        const std::vector<Json>& items = value.kind == Json::Array ? value.items : one;
        std::string packed;
        for (std::size_t i = 0; i < items.size(); ++i) {
          if (auto ok = occurrence(*f, items[i], at + "[" + std::to_string(i) + "]",
                                   is_length_delimited(f->type) ? out : packed,
                                   !is_length_delimited(f->type));
              !ok) {
            return ok.error();
          }
        }
        if (!packed.empty()) wire::put_len_field(out, f->number, packed);
      } else if (auto ok = occurrence(*f, value, at, out, false); !ok) {
        return ok.error();
      }
    }
    std::string bytes;
    for (const auto& [number, encoded] : fields) bytes += encoded;
    return bytes;
  }

 private:
  Result<std::string> map_entry(const MessageSchema& entry, const std::string& key,
                                const Json& value, const std::string& where) {
    const FieldSchema* key_field = entry.find(std::uint32_t{1});
    const FieldSchema* value_field = entry.find(std::uint32_t{2});
    std::string out;
    Json key_json;
    key_json.kind = key_field->type == kString ? Json::String : Json::Number;
    if (key_field->type == kBool) {
      key_json.kind = Json::Bool;
      key_json.boolean = key == "true";
    }
    key_json.text = key;
    if (auto ok = occurrence(*key_field, key_json, where, out, false); !ok) return ok.error();
    if (auto ok = occurrence(*value_field, value, where, out, false); !ok) return ok.error();
    return out;
  }

  // One value of field `f`, appended to `out`: with its tag, or bare when `packed`.
  Result<void> occurrence(const FieldSchema& f, const Json& json, const std::string& where,
                          std::string& out, bool packed) {
    auto tag = [&](WireType type) {
      if (!packed) wire::put_tag(out, f.number, type);
    };
    switch (f.type) {
      case kMessage:
      case kGroup: {
        if (!f.message) return invalid(where, "no schema for " + f.type_name);
        if (++depth_ > kMaxNestingDepth) return invalid(where, "nested too deep");
        auto bytes = message(*f.message, json, where);
        --depth_;
        if (!bytes) return bytes.error();
        wire::put_len_field(out, f.number, *bytes);
        return {};
      }
      case kString:
      case kBytes: {
        if (json.kind != Json::String) return invalid(where, "a string expected");
        if (f.type == kString && !is_utf8(json.text)) {
          return invalid(where, "a string field must be UTF-8");
        }
        std::string value = json.text;
        if (f.type == kBytes) {
          auto decoded = base64_decode(json.text);
          if (!decoded) return invalid(where, "bytes are base64");
          value = std::move(*decoded);
        }
        wire::put_len_field(out, f.number, value);
        return {};
      }
      case kBool:
        if (json.kind != Json::Bool) return invalid(where, "true or false expected");
        tag(WireType::Varint);
        wire::put_varint(out, json.boolean ? 1 : 0);
        return {};
      case kEnum: {
        std::int64_t number = 0;
        if (json.kind == Json::String) {
          const bool known = f.enumeration && f.enumeration->numbers.count(json.text);
          if (!known) {
            return invalid(where, "'" + json.text + "' is not a value of " + f.type_name.substr(1));
          }
          number = f.enumeration->numbers.find(json.text)->second;
        } else {
          auto n = integer(json, where, std::numeric_limits<std::int32_t>::min(),
                           std::numeric_limits<std::int32_t>::max());
          if (!n) return n.error();
          number = static_cast<std::int64_t>(*n);
        }
        tag(WireType::Varint);
        wire::put_varint(out, static_cast<std::uint64_t>(number));
        return {};
      }
      case kFloat:
      case kDouble: {
        double value;
        if (json.kind == Json::String &&
            (json.text == "NaN" || json.text == "Infinity" || json.text == "-Infinity")) {
          value = json.text == "NaN"    ? std::numeric_limits<double>::quiet_NaN()
                  : json.text[0] == '-' ? -std::numeric_limits<double>::infinity()
                                        : std::numeric_limits<double>::infinity();
        } else {
          if (json.kind != Json::Number && json.kind != Json::String) {
            return invalid(where, "a number expected");
          }
          char* end = nullptr;
          value = std::strtod(json.text.c_str(), &end);
          if (json.text.empty() || *end) return invalid(where, "a number expected");
        }
        if (f.type == kFloat) {
          float narrow = static_cast<float>(value);
          std::uint32_t bits;
          std::memcpy(&bits, &narrow, sizeof bits);
          tag(WireType::Fixed32);
          for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
        } else {
          std::uint64_t bits;
          std::memcpy(&bits, &value, sizeof bits);
          tag(WireType::Fixed64);
          for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
        }
        return {};
      }
      default: break;
    }
    const bool is_signed = f.type == kInt32 || f.type == kInt64 || f.type == kSint32 ||
                           f.type == kSint64 || f.type == kSfixed32 || f.type == kSfixed64;
    const bool is_64 = f.type == kInt64 || f.type == kUint64 || f.type == kSint64 ||
                       f.type == kFixed64 || f.type == kSfixed64;
    long double low = is_signed ? (is_64 ? -9223372036854775808.0L : -2147483648.0L) : 0.0L;
    long double high = is_signed ? (is_64 ? 9223372036854775807.0L : 2147483647.0L)
                                 : (is_64 ? 18446744073709551615.0L : 4294967295.0L);
    auto n = integer(json, where, low, high);
    if (!n) return n.error();
    const std::uint64_t bits = *n < 0 ? static_cast<std::uint64_t>(static_cast<std::int64_t>(*n))
                                      : static_cast<std::uint64_t>(*n);
    switch (f.type) {
      case kSint32:
      case kSint64: {
        auto v = static_cast<std::int64_t>(bits);
        tag(WireType::Varint);
        wire::put_varint(out, (bits << 1) ^ static_cast<std::uint64_t>(v >> 63));
        return {};
      }
      case kFixed32:
      case kSfixed32:
        tag(WireType::Fixed32);
        for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
        return {};
      case kFixed64:
      case kSfixed64:
        tag(WireType::Fixed64);
        for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
        return {};
      default:
        tag(WireType::Varint);
        wire::put_varint(out, bits);
        return {};
    }
  }

  // An integer written as a JSON number (8, 8.0 and 1e3 are integers: libprotobuf takes them)
  // or as a string of digits ("8"), within [low, high].
  Result<long double> integer(const Json& json, const std::string& where, long double low,
                              long double high) {
    if (json.kind != Json::Number && json.kind != Json::String) {
      return invalid(where, "an integer expected");
    }
    const std::string& text = json.text;
    char* end = nullptr;
    errno = 0;
    // Digits only: exact through 64 bits.
    if (!text.empty() && text.find_first_not_of("-0123456789") == std::string::npos) {
      if (text[0] == '-') {
        if (low >= 0) return invalid(where, text + " is out of range");  // even -0, as libprotobuf
        long long v = std::strtoll(text.c_str(), &end, 10);
        if (errno || *end || static_cast<long double>(v) < low)
          return invalid(where, text + " is out of range");
        return static_cast<long double>(v);
      }
      unsigned long long v = std::strtoull(text.c_str(), &end, 10);
      if (errno || *end || static_cast<long double>(v) > high)
        return invalid(where, text + " is out of range");
      return static_cast<long double>(v);
    }
    if (json.kind == Json::String) return invalid(where, "an integer in a string is digits only");
    long double v = std::strtold(text.c_str(), &end);
    if (text.empty() || *end || v != std::floor(v)) return invalid(where, "an integer expected");
    if (v < low || v > high) return invalid(where, text + " is out of range");
    return v;
  }

  int depth_ = 0;
};

}  // namespace

Result<std::string> message_from_json(std::string_view message_type, std::string_view json) {
  const MessageSchema* schema = Schema::instance().message("." + std::string(message_type));
  if (!schema) return Error(StatusCode::NotFound, "no message type " + std::string(message_type));
  auto document = JsonReader(json).document();
  if (!document) return document.error();
  return Encoder().message(*schema, *document, schema->full_name);
}

}  // namespace sonic::protocol
