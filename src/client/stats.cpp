// sonic — a client's counters as JSON.
#include "sonic/stats.hpp"

#include <cstdio>
#include <string>
#include <string_view>

namespace sonic {
namespace {

// A string as the inside of a JSON string (URLs carry no control characters: dropped).
std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;  // URLs carry no control characters
    out += c;
  }
  return out;
}

// A token count as a JSON number, to a thousandth (what gRPC keeps: milli-tokens).
std::string decimal(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", value);
  return text;
}

}  // namespace

std::string ClientStats::to_json() const {
  std::string out = "{";
  auto field = [&out](std::string_view name, std::uint64_t value, bool comma = true) {
    out += '"';
    out += name;
    out += "\":" + std::to_string(value);
    if (comma) out += ',';
  };
  field("requests", requests);
  field("batched_requests", batched_requests);
  field("merged_requests", merged_requests);
  field("succeeded", succeeded);
  field("failed", failed);
  field("retries", retries);
  field("fallbacks", fallbacks);
  field("throttled_retries", throttled_retries);
  field("slow_callbacks", slow_callbacks);
  field("callback_exceptions", callback_exceptions);
  out += "\"failures_by_code\":{";
  bool first = true;
  for (std::size_t code = 0; code < failures_by_code.size(); ++code) {
    if (failures_by_code[code] == 0) continue;
    if (!first) out += ',';
    first = false;
    out += '"';
    out += to_string(static_cast<StatusCode>(code));
    out += "\":" + std::to_string(failures_by_code[code]);
  }
  out += "},\"endpoints\":[";
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    const EndpointStats& e = endpoints[i];
    if (i) out += ',';
    out += "{\"url\":\"" + escape(e.url) + "\",\"healthy\":" + (e.healthy ? "true," : "false,");
    field("outstanding", e.outstanding);
    field("attempts", e.attempts);
    field("successes", e.successes);
    field("failures", e.failures);
    field("ejections", e.ejections);
    field("pushbacks", e.pushbacks);
    field("refusals", e.refusals);
    out += "\"retry_tokens\":" + decimal(e.retry_tokens) + ',';
    field("latency_ns", e.latency_ns, false);
    out += '}';
  }
  return out + "]}";
}

}  // namespace sonic
