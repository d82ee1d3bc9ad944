// sonic — a ModelConfig's max_batch_size, read from its JSON structure.
#include "client/model_config_json.hpp"

#include <cstddef>
#include <cstdint>

namespace sonic::detail {
namespace {

/// Walks one JSON text, value by value, without building anything.
class JsonWalk {
 public:
  explicit JsonWalk(std::string_view text) : text_(text) {}

  bool at_end() {
    skip_space();
    return at_ == text_.size();
  }
  /// Takes `c` (after white space) when it comes next.
  bool take(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  /// A string's text between its quotes, escapes left as they are; none when malformed.
  std::optional<std::string_view> string() {
    if (!take('"')) return std::nullopt;
    const std::size_t begin = at_;
    while (at_ < text_.size() && text_[at_] != '"') at_ += text_[at_] == '\\' ? 2 : 1;
    if (at_ >= text_.size()) return std::nullopt;
    return text_.substr(begin, at_++ - begin);
  }
  /// An int32 of at least 0: digits, or digits in quotes.
  std::optional<std::int64_t> count() {
    skip_space();
    const bool quoted = take('"');
    std::int64_t value = 0;
    std::size_t digits = 0;
    for (; at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9'; ++at_, ++digits) {
      value = value * 10 + (text_[at_] - '0');
      if (value > INT32_MAX) return std::nullopt;
    }
    if (digits == 0 || (quoted && !take('"'))) return std::nullopt;
    return value;
  }
  /// Steps over any value; false when it is malformed or nested past kMaxDepth.
  bool skip_value(int depth = 0) {
    if (depth > kMaxDepth) return false;
    skip_space();
    if (at_ >= text_.size()) return false;
    const char c = text_[at_];
    if (c == '"') return string().has_value();
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++at_;
      if (take(close)) return true;
      do {
        if (c == '{' && !(string() && take(':'))) return false;
        if (!skip_value(depth + 1)) return false;
      } while (take(','));
      return take(close);
    }
    const std::size_t begin = at_;  // a number, true, false or null
    while (at_ < text_.size() && is_scalar_char(text_[at_])) ++at_;
    return at_ > begin;
  }

 private:
  static constexpr int kMaxDepth = 64;
  static bool is_scalar_char(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' ||
           c == 'E';
  }
  void skip_space() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t'))
      ++at_;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace

std::optional<std::int64_t> config_max_batch_size(std::string_view json) {
  JsonWalk walk(json);
  if (!walk.take('{')) return std::nullopt;
  std::int64_t found = 0;
  if (!walk.take('}')) {
    do {
      auto key = walk.string();
      if (!key || !walk.take(':')) return std::nullopt;
      if (*key == "max_batch_size" || *key == "maxBatchSize") {
        auto value = walk.count();
        if (!value) return std::nullopt;
        found = *value;
      } else if (!walk.skip_value()) {
        return std::nullopt;
      }
    } while (walk.take(','));
    if (!walk.take('}')) return std::nullopt;
  }
  if (!walk.at_end()) return std::nullopt;
  return found;
}

}  // namespace sonic::detail
