// Over 500 lines: one parser, whose tokenizer, grammar and schema walk depend on each other.
#include "proto_text.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "proto_schema.hpp"
#include "utf8.hpp"
#include "wire.hpp"

namespace sonic::protocol {

namespace {

using namespace schema;
using wire::WireType;

// Wide enough to hold every field's range and one past it, so range checks never overflow.
__extension__ using Int128 = __int128;
__extension__ using UInt128 = unsigned __int128;

struct Token {
  enum Kind { End, Identifier, Number, String, Symbol } kind = End;
  std::string_view text;  // a string token keeps its quotes
  int line = 1;
  int column = 1;
};

// Splits text into tokens as libprotobuf's Tokenizer does for text format: '#' comments,
// identifiers, numbers (with any letters, dots and signs of an exponent attached), quoted
// strings, and single-character symbols.
class Tokenizer {
 public:
  explicit Tokenizer(std::string_view text) : text_(text) { advance(); }

  const Token& peek() const { return current_; }
  Token next() {
    Token t = current_;
    advance();
    return t;
  }

 private:
  static bool is_letter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  void step() {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }

  void advance() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') step();
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        step();
      } else {
        break;
      }
    }
    current_ = Token{Token::End, {}, line_, column_};
    if (pos_ >= text_.size()) return;
    std::size_t start = pos_;
    char c = text_[pos_];
    if (is_letter(c)) {
      current_.kind = Token::Identifier;
      while (pos_ < text_.size() && (is_letter(text_[pos_]) || is_digit(text_[pos_]))) step();
    } else if (is_digit(c) || (c == '.' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1]))) {
      current_.kind = Token::Number;
      while (pos_ < text_.size()) {
        char d = text_[pos_];
        bool exponent_sign =
            (d == '-' || d == '+') && (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E');
        if (!(is_letter(d) || is_digit(d) || d == '.' || exponent_sign)) break;
        step();
      }
    } else if (c == '"' || c == '\'') {
      current_.kind = Token::String;
      step();
      while (pos_ < text_.size() && text_[pos_] != c && text_[pos_] != '\n') {
        if (text_[pos_] == '\\' && pos_ + 1 < text_.size() && text_[pos_ + 1] != '\n') step();
        step();
      }
      if (pos_ < text_.size() && text_[pos_] == c) step();
    } else {
      current_.kind = Token::Symbol;
      step();
    }
    current_.text = text_.substr(start, pos_ - start);
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
  Token current_;
};

// The encoded values of one field of a message being built, in the order the text gave them.
struct FieldValues {
  const FieldSchema* field = nullptr;
  std::vector<std::string> values;  // scalar: its varint or fixed bytes; else the payload
};

// Whether an encoded scalar is its type's default (0, 0.0, false, empty), which proto3 does not
// write for a field without presence. -0.0 is not: its bits are not zero, and protobuf keeps it.
bool is_default(int type, const std::string& encoded) {
  if (type == kMessage || type == kGroup) return false;
  if (type == kString || type == kBytes) return encoded.empty();
  for (char byte : encoded) {
    if (byte != 0) return false;
  }
  return true;
}

// As protobuf serializes a message: fields in number order; repeated scalars packed and scalars
// at their default left out (proto3's rules, and every file of proto/ is proto3).
std::string serialize(const std::map<std::uint32_t, FieldValues>& fields) {
  std::string out;
  for (const auto& [number, f] : fields) {
    const int type = f.field->type;
    if (f.field->repeated && !is_length_delimited(type)) {
      std::string packed;
      for (const auto& v : f.values) packed += v;
      wire::put_len_field(out, number, packed);
      continue;
    }
    for (const auto& v : f.values) {
      if (!f.field->repeated && !f.field->explicit_presence && is_default(type, v)) continue;
      if (wire_type_of(type) == WireType::Len) {
        wire::put_len_field(out, number, v);
      } else {
        wire::put_tag(out, number, wire_type_of(type));
        out += v;
      }
    }
  }
  return out;
}

std::string varint_bytes(std::uint64_t value) {
  std::string out;
  wire::put_varint(out, value);
  return out;
}

template <typename Bits>
std::string fixed_bytes(Bits bits) {
  std::string out(sizeof bits, '\0');
  for (std::size_t i = 0; i < sizeof bits; ++i)
    out[i] = static_cast<char>((bits >> (8 * i)) & 0xff);
  return out;
}

class Parser {
 public:
  Parser(std::string_view text, const TextParseOptions& options)
      : tokens_(text), options_(options) {}

  Result<ParsedText> parse(const MessageSchema& schema) {
    ParsedText parsed;
    auto bytes = message(schema, Token::End, 0);
    if (!bytes) return bytes.error();
    parsed.bytes = std::move(*bytes);
    parsed.skipped_fields = std::move(skipped_);
    return parsed;
  }

 private:
  Error error_at(const Token& at, const std::string& what) const {
    return Error(StatusCode::InvalidArgument,
                 std::to_string(at.line) + ":" + std::to_string(at.column) + ": " + what);
  }

  bool at_symbol(char symbol) const {
    const Token& t = tokens_.peek();
    return t.kind == Token::Symbol && t.text.size() == 1 && t.text[0] == symbol;
  }

  Result<void> expect(char symbol) {
    if (!at_symbol(symbol)) {
      return error_at(tokens_.peek(), std::string("expected \"") + symbol + "\", found " +
                                          describe(tokens_.peek()));
    }
    tokens_.next();
    return {};
  }

  static std::string describe(const Token& t) {
    if (t.kind == Token::End) return "the end of the text";
    return "\"" + std::string(t.text) + "\"";
  }

  // Fields until `close` (a symbol, or Token::End for the top level).
  Result<std::string> message(const MessageSchema& schema, int close, int depth) {
    if (depth > kMaxNestingDepth) {
      return error_at(tokens_.peek(),
                      "messages nest deeper than " + std::to_string(kMaxNestingDepth));
    }
    std::map<std::uint32_t, FieldValues> fields;
    std::set<int> oneofs_set;
    for (;;) {
      const Token& t = tokens_.peek();
      if (close == Token::End ? t.kind == Token::End : at_symbol(static_cast<char>(close))) break;
      if (t.kind == Token::End) {
        return error_at(t, std::string("expected \"") + static_cast<char>(close) + "\" to close " +
                               schema.full_name);
      }
      if (t.kind != Token::Identifier) {
        return error_at(t,
                        "expected a field name of " + schema.full_name + ", found " + describe(t));
      }
      Token name = tokens_.next();
      const FieldSchema* f = schema.find(name.text);
      if (!f) {
        if (options_.skip_unknown_field &&
            options_.skip_unknown_field(schema.full_name, name.text)) {
          skipped_.push_back(schema.full_name + "." + std::string(name.text));
          if (auto skipped = skip_field_value(depth); !skipped) return skipped.error();
        } else {
          return error_at(
              name, schema.full_name + " has no field named \"" + std::string(name.text) + "\"");
        }
      } else {
        FieldValues& values = fields[f->number];
        values.field = f;
        if (!f->repeated && !values.values.empty()) {
          return error_at(name, "field \"" + f->name + "\" of " + schema.full_name +
                                    " is not repeated and is given twice");
        }
        if (f->oneof_index >= 0 && !oneofs_set.insert(f->oneof_index).second) {
          return error_at(name, "field \"" + f->name + "\" of " + schema.full_name +
                                    " is in a oneof whose other field is already given");
        }
        if (auto read = field_value(*f, values, depth); !read) return read.error();
      }
      if (at_symbol(',') || at_symbol(';')) tokens_.next();
    }
    if (close != Token::End) tokens_.next();
    return serialize(fields);
  }

  // After a field's name: ": value", ": [values]", "{...}", "<...>", or ": {...}".
  Result<void> field_value(const FieldSchema& f, FieldValues& values, int depth) {
    const bool composite = f.type == kMessage || f.type == kGroup;
    const bool colon = at_symbol(':');
    if (colon) tokens_.next();
    if (!colon && !composite) {
      return error_at(tokens_.peek(), "expected \":\" after field \"" + f.name + "\"");
    }
    if (at_symbol('[')) {
      const Token open = tokens_.next();
      if (!f.repeated) {
        return error_at(open, "field \"" + f.name + "\" is not repeated: it takes no list");
      }
      if (at_symbol(']')) {
        tokens_.next();
        return {};
      }
      for (;;) {
        if (auto one = single_value(f, values, depth); !one) return one.error();
        if (at_symbol(']')) break;
        if (auto comma = expect(','); !comma) return comma;
      }
      tokens_.next();
      return {};
    }
    return single_value(f, values, depth);
  }

  Result<void> single_value(const FieldSchema& f, FieldValues& values, int depth) {
    if (f.type == kMessage || f.type == kGroup) {
      char close;
      if (at_symbol('{')) {
        close = '}';
      } else if (at_symbol('<')) {
        close = '>';
      } else {
        return error_at(tokens_.peek(), "expected \"{\" to open field \"" + f.name + "\"");
      }
      tokens_.next();
      if (!f.message) return error_at(tokens_.peek(), "no schema for " + f.type_name);
      auto bytes = message(*f.message, close, depth + 1);
      if (!bytes) return bytes.error();
      values.values.push_back(std::move(*bytes));
      return {};
    }
    auto scalar = scalar_value(f);
    if (!scalar) return scalar.error();
    values.values.push_back(std::move(*scalar));
    return {};
  }

  Result<std::string> scalar_value(const FieldSchema& f) {
    if (f.type == kString || f.type == kBytes) {
      if (tokens_.peek().kind != Token::String) {
        return error_at(tokens_.peek(), "expected a string for field \"" + f.name + "\", found " +
                                            describe(tokens_.peek()));
      }
      std::string text;
      while (tokens_.peek().kind == Token::String) {  // adjacent strings join, as in C
        Token t = tokens_.next();
        if (auto unescaped = unescape(t, text); !unescaped) return unescaped.error();
      }
      if (f.type == kString && !is_utf8(text)) {
        return error_at(tokens_.peek(), "field \"" + f.name + "\" is a string: it must be UTF-8");
      }
      return text;
    }
    bool negative = false;
    Token sign;
    if (at_symbol('-')) {
      sign = tokens_.next();
      negative = true;
    }
    Token t = tokens_.next();
    if (t.kind != Token::Number && t.kind != Token::Identifier) {
      return error_at(t, "expected a value for field \"" + f.name + "\", found " + describe(t));
    }
    switch (f.type) {
      case kBool: {
        if (negative) return error_at(sign, "a bool has no sign");
        if (t.kind == Token::Number) {  // 0 or 1, spelled as any integer
          auto n = integer(t, false, 0, 1, f);
          if (!n) return n.error();
          return varint_bytes(static_cast<std::uint64_t>(*n));
        }
        if (t.text == "true" || t.text == "True" || t.text == "t") return varint_bytes(1);
        if (t.text == "false" || t.text == "False" || t.text == "f") return varint_bytes(0);
        return error_at(t, "expected true or false for field \"" + f.name + "\"");
      }
      case kEnum: {
        if (t.kind == Token::Identifier) {
          if (negative) return error_at(sign, "an enum name has no sign");
          if (f.enumeration) {
            auto it = f.enumeration->numbers.find(t.text);
            if (it != f.enumeration->numbers.end()) {
              return varint_bytes(
                  static_cast<std::uint64_t>(static_cast<std::int64_t>(it->second)));
            }
          }
          return error_at(t, "\"" + std::string(t.text) + "\" is not a value of " +
                                 f.type_name.substr(1) + " (field \"" + f.name + "\")");
        }
        // proto3 enums are open: any int32 is kept, as libprotobuf keeps it.
        auto n = integer(t, negative, std::numeric_limits<std::int32_t>::min(),
                         std::numeric_limits<std::int32_t>::max(), f);
        if (!n) return n.error();
        return varint_bytes(static_cast<std::uint64_t>(*n));
      }
      case kFloat:
      case kDouble: {
        auto real = floating(t, negative, f);
        if (!real) return real.error();
        if (f.type == kDouble) {
          std::uint64_t bits;
          std::memcpy(&bits, &*real, sizeof bits);
          return fixed_bytes(bits);
        }
        float narrow = static_cast<float>(*real);
        std::uint32_t bits;
        std::memcpy(&bits, &narrow, sizeof bits);
        return fixed_bytes(bits);
      }
      default: break;
    }
    const bool is_signed = f.type == kInt32 || f.type == kInt64 || f.type == kSint32 ||
                           f.type == kSint64 || f.type == kSfixed32 || f.type == kSfixed64;
    const bool is_64 = f.type == kInt64 || f.type == kUint64 || f.type == kSint64 ||
                       f.type == kFixed64 || f.type == kSfixed64;
    Int128 low = is_signed ? (is_64 ? std::numeric_limits<std::int64_t>::min()
                                    : std::numeric_limits<std::int32_t>::min())
                           : 0;
    Int128 high = is_signed ? (is_64 ? std::numeric_limits<std::int64_t>::max()
                                     : std::numeric_limits<std::int32_t>::max())
                            : (is_64 ? std::numeric_limits<std::uint64_t>::max()
                                     : std::numeric_limits<std::uint32_t>::max());
    auto n = integer(t, negative, low, high, f);
    if (!n) return n.error();
    switch (f.type) {
      case kSint32:
      case kSint64: {
        auto v = static_cast<std::int64_t>(*n);
        return varint_bytes((static_cast<std::uint64_t>(v) << 1) ^
                            static_cast<std::uint64_t>(v >> 63));
      }
      case kFixed32:
      case kSfixed32: return fixed_bytes(static_cast<std::uint32_t>(static_cast<std::int64_t>(*n)));
      case kFixed64:
      case kSfixed64: return fixed_bytes(static_cast<std::uint64_t>(*n));
      default:
        // int32's negative values are sign-extended to ten bytes, as protobuf writes them.
        return varint_bytes(static_cast<std::uint64_t>(*n));
    }
  }

  // A decimal, hexadecimal (0x) or octal (leading 0) integer within [low, high].
  Result<Int128> integer(const Token& t, bool negative, Int128 low, Int128 high,
                         const FieldSchema& f) {
    const std::string text(t.text);
    int base = 10;
    std::size_t start = 0;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
      base = 16;
      start = 2;
    } else if (text.size() > 1 && text[0] == '0') {
      base = 8;
      start = 1;
    }
    if (t.kind != Token::Number || start >= text.size()) {
      return error_at(t, "expected an integer for field \"" + f.name + "\", found " + describe(t));
    }
    UInt128 value = 0;
    for (std::size_t i = start; i < text.size(); ++i) {
      char c = text[i];
      int digit = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : 99;
      if (digit >= base) {
        return error_at(t,
                        "expected an integer for field \"" + f.name + "\", found " + describe(t));
      }
      value = value * static_cast<unsigned>(base) + static_cast<unsigned>(digit);
      if (value > (static_cast<UInt128>(1) << 65)) break;  // out of every range
    }
    Int128 signed_value = value > (static_cast<UInt128>(1) << 65) ? (static_cast<Int128>(1) << 66)
                                                                  : static_cast<Int128>(value);
    if (negative) signed_value = -signed_value;
    if (signed_value < low || signed_value > high) {
      return error_at(t, std::string(negative ? "-" : "") + text + " is out of range for field \"" +
                             f.name + "\"");
    }
    return signed_value;
  }

  Result<double> floating(const Token& t, bool negative, const FieldSchema& f) {
    std::string text(t.text);
    if (t.kind == Token::Identifier) {
      std::string lower;
      for (char c : text) lower.push_back(static_cast<char>(c | 0x20));
      if (lower == "inf" || lower == "infinity") {
        return negative ? -std::numeric_limits<double>::infinity()
                        : std::numeric_limits<double>::infinity();
      }
      if (lower == "nan") return std::numeric_limits<double>::quiet_NaN();
      return error_at(t, "expected a number for field \"" + f.name + "\", found " + describe(t));
    }
    if (!text.empty() && (text.back() == 'f' || text.back() == 'F')) text.pop_back();
    errno = 0;
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() ||
        (text.size() > 1 && (text[1] == 'x' || text[1] == 'X'))) {
      return error_at(t, "expected a number for field \"" + f.name + "\", found " + describe(t));
    }
    return negative ? -value : value;
  }

  // Appends the bytes a quoted string token stands for: C escapes, octal, \x hex, \u and \U.
  Result<void> unescape(const Token& t, std::string& out) {
    std::string_view s = t.text;
    if (s.size() < 2 || s.back() != s.front()) return error_at(t, "the string is not closed");
    s = s.substr(1, s.size() - 2);
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\') {
        out.push_back(s[i]);
        continue;
      }
      if (++i >= s.size()) return error_at(t, "the string ends in a lone backslash");
      char c = s[i];
      switch (c) {
        case 'n': out.push_back('\n'); continue;
        case 't': out.push_back('\t'); continue;
        case 'r': out.push_back('\r'); continue;
        case 'a': out.push_back('\a'); continue;
        case 'b': out.push_back('\b'); continue;
        case 'f': out.push_back('\f'); continue;
        case 'v': out.push_back('\v'); continue;
        case '\\':
        case '\'':
        case '"':
        case '?': out.push_back(c); continue;
        default: break;
      }
      auto digits = [&](int base, std::size_t most) {
        std::uint32_t value = 0;
        std::size_t used = 0;
        while (used < most && i + 1 < s.size()) {
          char d = s[i + 1];
          int digit = d >= '0' && d <= '9'   ? d - '0'
                      : d >= 'a' && d <= 'f' ? d - 'a' + 10
                      : d >= 'A' && d <= 'F' ? d - 'A' + 10
                                             : 99;
          if (digit >= base) break;
          value = value * static_cast<std::uint32_t>(base) + static_cast<std::uint32_t>(digit);
          ++i;
          ++used;
        }
        return std::make_pair(value, used);
      };
      if (c >= '0' && c <= '7') {
        --i;
        out.push_back(static_cast<char>(digits(8, 3).first & 0xff));
      } else if (c == 'x' || c == 'X') {
        auto [value, used] = digits(16, 2);
        if (used == 0) return error_at(t, "\\x needs a hexadecimal digit");
        out.push_back(static_cast<char>(value));
      } else if (c == 'u' || c == 'U') {
        auto [code, used] = digits(16, c == 'u' ? 4 : 8);
        if (used != (c == 'u' ? 4u : 8u) || code > 0x10ffff || (code >= 0xd800 && code < 0xe000)) {
          return error_at(t, "invalid Unicode escape in the string");
        }
        append_utf8(out, code);
      } else {
        return error_at(t, std::string("unknown escape \\") + c + " in the string");
      }
    }
    return {};
  }

  // The value of a field the schema does not know, read for its syntax and dropped.
  Result<void> skip_field_value(int depth) {
    if (at_symbol(':')) {
      tokens_.next();
      if (at_symbol('[')) return skip_balanced(depth);
      if (at_symbol('{') || at_symbol('<')) return skip_balanced(depth);
      if (at_symbol('-')) tokens_.next();
      const Token t = tokens_.next();
      if (t.kind == Token::String) {
        while (tokens_.peek().kind == Token::String) tokens_.next();
        return {};
      }
      if (t.kind == Token::Number || t.kind == Token::Identifier) return {};
      return error_at(t, "expected a value, found " + describe(t));
    }
    // A message, or a list of them ("field [ {...}, {...} ]"): no colon needed.
    if (at_symbol('{') || at_symbol('<') || at_symbol('[')) return skip_balanced(depth);
    return error_at(tokens_.peek(), "expected \":\" or \"{\", found " + describe(tokens_.peek()));
  }

  // From an opening bracket to its match, whatever lies between.
  Result<void> skip_balanced(int depth) {
    std::string closers;
    do {
      const Token t = tokens_.next();
      if (t.kind == Token::End) return error_at(t, "a bracket is not closed");
      if (t.kind != Token::Symbol) continue;
      char c = t.text[0];
      if (c == '{' || c == '<' || c == '[') {
        if (depth + static_cast<int>(closers.size()) > kMaxNestingDepth) {
          return error_at(t, "messages nest deeper than " + std::to_string(kMaxNestingDepth));
        }
        closers.push_back(c == '{' ? '}' : c == '<' ? '>' : ']');
      } else if (c == '}' || c == '>' || c == ']') {
        if (c != closers.back()) return error_at(t, "unbalanced \"" + std::string(1, c) + "\"");
        closers.pop_back();
      }
    } while (!closers.empty());
    return {};
  }

  Tokenizer tokens_;
  const TextParseOptions& options_;
  std::vector<std::string> skipped_;
};

}  // namespace

Result<ParsedText> parse_text_message(std::string_view message_type, std::string_view text,
                                      const TextParseOptions& options) {
  const MessageSchema* schema = Schema::instance().message("." + std::string(message_type));
  if (!schema) {
    return Error(StatusCode::NotFound, "no message type " + std::string(message_type));
  }
  return Parser(text, options).parse(*schema);
}

}  // namespace sonic::protocol
