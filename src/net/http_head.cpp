#include "http_head.hpp"

#include <cctype>

namespace sonic::net {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

std::optional<std::size_t> parse_http_length(std::string_view value) {
  if (value.empty() || value.size() > 19) return std::nullopt;
  std::size_t n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::size_t>(c - '0');
  }
  return n;
}

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string parse_http_fields(std::string_view lines, HttpFields& fields) {
  while (!lines.empty() && lines != "\r\n") {
    const std::size_t end = lines.find("\r\n");
    const std::string_view field = lines.substr(0, end);
    lines.remove_prefix(end == std::string_view::npos ? lines.size() : end + 2);
    const std::size_t colon = field.find(':');
    if (colon == std::string_view::npos) return "malformed header field";
    std::string name = ascii_lower(trim(field.substr(0, colon)));
    std::string value(trim(field.substr(colon + 1)));
    if (name == "content-length") {
      auto it = fields.find(name);
      if (it != fields.end() && it->second != value) return "conflicting Content-Length fields";
    }
    fields[std::move(name)] = std::move(value);
  }
  return {};
}

}  // namespace sonic::net
