// sonic Python bindings — ClientOptions from keyword arguments.
#include "options.hpp"

#include "convert.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <map>
#include <utility>

#include "sonic/credentials.hpp"
#include "sonic/repository/repository.hpp"

namespace sonic::python {

namespace {

using std::chrono::milliseconds;

[[noreturn]] void out_of_range(const char* what, const std::string& why) {
  throw Error(StatusCode::InvalidArgument, std::string(what) + ": " + why);
}

milliseconds milliseconds_of(py::handle seconds, const char* what) {
  return std::chrono::duration_cast<milliseconds>(microseconds_from_seconds(seconds, what));
}

std::size_t count_of(py::handle value, const char* what) {
  auto count = value.cast<long long>();
  if (count < 0) out_of_range(what, "must not be negative");
  return static_cast<std::size_t>(count);
}

/// An HTTP/2 receive window: 1 byte to 2^31 - 1, the most HTTP/2 allows (RFC 9113, 6.9.1).
std::uint32_t window_of(py::handle value, const char* what) {
  auto bytes = value.cast<long long>();
  if (bytes < 1 || bytes > 0x7fffffff) out_of_range(what, "must be 1 to 2**31 - 1 bytes");
  return static_cast<std::uint32_t>(bytes);
}

Compression compression_of(py::handle value) {
  if (value.is_none()) return Compression::None;
  auto name = value.cast<std::string>();
  if (name == "none" || name == "identity") return Compression::None;
  if (name == "gzip") return Compression::Gzip;
  if (name == "deflate") return Compression::Deflate;
  out_of_range("compression", "'" + name + "' is not one of None, 'gzip', 'deflate'");
}

StatusCode status_code_of(py::handle value) {
  if (py::isinstance<py::str>(value)) {
    auto name = value.cast<std::string>();
    for (int code = 0; code <= 16; ++code) {
      if (name == to_string(static_cast<StatusCode>(code))) return static_cast<StatusCode>(code);
    }
    out_of_range("retry_on", "'" + name + "' is not a status code name");
  }
  auto code = value.cast<int>();  // an int, or a sonic.StatusCode
  if (code < 1 || code > 16)
    out_of_range("retry_on", std::to_string(code) + " is not an error code");
  return static_cast<StatusCode>(code);
}

/// Messages from sonic's threads, handed to a Python callable with the GIL taken. A failing
/// callable is reported as unraisable rather than thrown into sonic.
LogHook log_hook_of(py::handle callable) {
  auto target = std::shared_ptr<py::object>(
      new py::object(py::reinterpret_borrow<py::object>(callable)), [](py::object* held) {
        Gil gil;
        delete held;
      });
  return [target](LogLevel level, const std::string& message) {
    if (!Py_IsInitialized()) return;
    Gil gil;
    try {
      (*target)(to_string(level), message);
    } catch (py::error_already_set& failure) {
      failure.discard_as_unraisable("sonic log callback");
    }
  };
}

/// `value` as a dict, or an InvalidArgument naming `what`.
py::dict dict_of(py::handle value, const char* what) {
  if (!py::isinstance<py::dict>(value)) out_of_range(what, "must be a dict");
  return py::reinterpret_borrow<py::dict>(value);
}

/// Calls `take(key, value)` for each item of `spec`, a dict whose keys must be among `known`.
template <typename Take>
void each_key(py::handle spec, const char* what, std::initializer_list<const char*> known,
              Take take) {
  for (auto item : dict_of(spec, what)) {
    auto key = item.first.cast<std::string>();
    bool found = false;
    for (const char* each : known) found = found || key == each;
    if (!found) {
      std::string names;
      for (const char* each : known) names += std::string(names.empty() ? "" : ", ") + each;
      out_of_range(what, "unknown key '" + key + "' (keys: " + names + ")");
    }
    take(key, item.second);
  }
}

/// {model: True | {"max_batch": rows, "max_delay": seconds, "ragged":
/// {"accumulated_count_input": name, "source_input": name}}}: ClientOptions::batching.
std::map<std::string, BatchingOptions> batching_of(py::handle value) {
  std::map<std::string, BatchingOptions> all;
  for (auto item : dict_of(value, "batching")) {
    bool defaults = py::isinstance<py::bool_>(item.second);  // True: the defaults; False: off
    if (defaults && !item.second.cast<bool>()) continue;
    BatchingOptions& model = all[item.first.cast<std::string>()];
    if (defaults) continue;
    each_key(item.second, "batching", {"max_batch", "max_delay", "ragged"},
             [&model](const std::string& key, py::handle v) {
               if (key == "max_batch") {
                 model.max_batch = static_cast<std::int64_t>(count_of(v, "batching max_batch"));
               } else if (key == "max_delay") {
                 model.max_delay = microseconds_from_seconds(v, "batching max_delay");
               } else {
                 RaggedBatching& ragged = model.ragged.emplace();
                 each_key(v, "batching ragged", {"accumulated_count_input", "source_input"},
                          [&ragged](const std::string& name, py::handle input) {
                            (name == "source_input" ? ragged.source_input
                                                    : ragged.accumulated_count_input) =
                                input.cast<std::string>();
                          });
                 if (ragged.accumulated_count_input.empty()) {
                   out_of_range("batching ragged", "needs 'accumulated_count_input'");
                 }
               }
             });
  }
  return all;
}

/// {model: {"version": str, "config_checksum": str}}: Routing::pins.
std::map<std::string, ModelPin> pins_of(py::handle value) {
  std::map<std::string, ModelPin> all;
  for (auto item : dict_of(value, "pins")) {
    ModelPin& pin = all[item.first.cast<std::string>()];
    each_key(item.second, "pins", {"version", "config_checksum"},
             [&pin](const std::string& key, py::handle v) {
               (key == "version" ? pin.version : pin.config_checksum) = v.cast<std::string>();
             });
  }
  return all;
}

Balancing balancing_of(py::handle value) {
  auto name = value.cast<std::string>();
  if (name == "least_outstanding") return Balancing::LeastOutstanding;
  if (name == "power_of_two_choices") return Balancing::PowerOfTwoChoices;
  out_of_range("balancing",
               "'" + name + "' is not one of 'least_outstanding', 'power_of_two_choices'");
}

struct Fallback {
  std::vector<std::string> roots;
  std::size_t threads = 1;
};

using Setter = std::function<void(ClientOptions&, Fallback&, py::handle)>;
using Option = std::pair<const char*, Setter>;

bool flag_of(py::handle value, const char*) { return value.cast<bool>(); }
int int_of(py::handle value, const char*) { return value.cast<int>(); }
std::string text_of(py::handle value, const char*) { return value.cast<std::string>(); }
std::string path_of(py::handle value, const char*) { return py::str(value).cast<std::string>(); }

/// The option `name`: `read(value, name)` goes into `field` of ClientOptions.
template <typename Field, typename Read>
Option option(const char* name, Field ClientOptions::*field, Read read) {
  return {name, [name, field, read](ClientOptions& o, Fallback&, py::handle v) {
            o.*field = read(v, name);
          }};
}

/// The option `name`: `read(value, name)` goes into `field` of the part `part` of
/// ClientOptions (its retry policy, its TLS options, ...).
template <typename Part, typename Field, typename Read>
Option option(const char* name, Part ClientOptions::*part, Field Part::*field, Read read) {
  return {name, [name, part, field, read](ClientOptions& o, Fallback&, py::handle v) {
            (o.*part).*field = read(v, name);
          }};
}

const std::vector<Option>& setters() {
  static const std::vector<Option> table = {
      option("timeout", &ClientOptions::default_timeout, milliseconds_of),
      option("max_in_flight", &ClientOptions::max_in_flight, count_of),
      option("control_timeout", &ClientOptions::control_timeout, milliseconds_of),
      option("connect_timeout", &ClientOptions::connect_timeout, milliseconds_of),
      {"max_attempts",
       [](ClientOptions& o, Fallback&, py::handle v) {
         o.retry.max_attempts = v.cast<int>();
         if (o.retry.max_attempts < 1) out_of_range("max_attempts", "must be at least 1");
       }},
      {"retry_on",
       [](ClientOptions& o, Fallback&, py::handle v) {
         o.retry.retryable_codes.clear();
         for (py::handle code : v) o.retry.retryable_codes.push_back(status_code_of(code));
       }},
      option("per_attempt_timeout", &ClientOptions::retry, &RetryPolicy::per_attempt_timeout,
             milliseconds_of),
      {"compression",
       [](ClientOptions& o, Fallback&, py::handle v) { o.compression.grpc = compression_of(v); }},
      option("zstd_level", &ClientOptions::compression, &CompressionOptions::zstd_level, int_of),
      {"headers",
       [](ClientOptions& o, Fallback&, py::handle v) {
         for (auto item : v.cast<py::dict>()) {
           o.headers.emplace_back(item.first.cast<std::string>(), item.second.cast<std::string>());
         }
       }},
      {"bearer_token",
       [](ClientOptions& o, Fallback&, py::handle v) {
         o.bearer_token = [token = v.cast<std::string>()] { return Result<std::string>(token); };
       }},
      {"token_file",
       [](ClientOptions& o, Fallback&, py::handle v) {
         o.bearer_token = TokenFile(py::str(v).cast<std::string>());
       }},
      option("tls_ca_file", &ClientOptions::tls, &TlsOptions::ca_file, path_of),
      option("tls_cert_file", &ClientOptions::tls, &TlsOptions::cert_file, path_of),
      option("tls_key_file", &ClientOptions::tls, &TlsOptions::key_file, path_of),
      option("tls_server_name", &ClientOptions::tls, &TlsOptions::server_name, text_of),
      option("tls_ca_pem", &ClientOptions::tls, &TlsOptions::ca_pem, text_of),
      option("tls_cert_pem", &ClientOptions::tls, &TlsOptions::cert_pem, text_of),
      option("tls_key_pem", &ClientOptions::tls, &TlsOptions::key_pem, text_of),
      option("validate_inputs", &ClientOptions::validate_inputs, flag_of),
      option("share_connections", &ClientOptions::share_connections, flag_of),
      option("drive_blocking_calls", &ClientOptions::drive_blocking_calls, flag_of),
      option("network_threads", &ClientOptions::network_threads, count_of),
      option("http_connections", &ClientOptions::http_connections, count_of),
      {"callback_threads",
       [](ClientOptions& o, Fallback&, py::handle v) {
         o.callback_threads = std::max<std::size_t>(1, count_of(v, "callback_threads"));
       }},
      option("keepalive_interval", &ClientOptions::keepalive_interval, milliseconds_of),
      option("keepalive_timeout", &ClientOptions::keepalive_timeout, milliseconds_of),
      option("reconnect_backoff", &ClientOptions::reconnect_backoff, milliseconds_of),
      option("reconnect_backoff_max", &ClientOptions::reconnect_backoff_max, milliseconds_of),
      option("stream_window_bytes", &ClientOptions::stream_window_bytes, window_of),
      option("connection_window_bytes", &ClientOptions::connection_window_bytes, window_of),
      option("max_message_bytes", &ClientOptions::max_message_bytes, count_of),
      option("shm_pool_bytes", &ClientOptions::shared_memory, &SharedMemoryOptions::pool_bytes,
             count_of),
      option("shm_min_region_bytes", &ClientOptions::shared_memory,
             &SharedMemoryOptions::min_region_bytes, count_of),
      option("adaptive_compression", &ClientOptions::compression, &CompressionOptions::adaptive,
             flag_of),
      option("eject_after", &ClientOptions::breaker, &CircuitBreaker::failures_to_eject, int_of),
      option("cool_down", &ClientOptions::breaker, &CircuitBreaker::cool_down, milliseconds_of),
      option("probe_interval", &ClientOptions::breaker, &CircuitBreaker::probe_interval,
             milliseconds_of),
      option("model_recheck", &ClientOptions::breaker, &CircuitBreaker::model_recheck,
             milliseconds_of),
      option("each_address", &ClientOptions::resolution, &Resolution::each_address, flag_of),
      option("resolve_interval", &ClientOptions::resolution, &Resolution::interval,
             milliseconds_of),
      option("max_addresses", &ClientOptions::resolution, &Resolution::max_addresses, count_of),
      option("discovery_interval", &ClientOptions::routing, &Routing::discovery_interval,
             milliseconds_of),
      {"preferred",
       [](ClientOptions& o, Fallback&, py::handle v) {
         for (auto item : dict_of(v, "preferred")) {
           auto& urls = o.routing.preferred[item.first.cast<std::string>()];
           for (py::handle url : item.second) urls.push_back(url.cast<std::string>());
         }
       }},
      {"balancing",
       [](ClientOptions& o, Fallback&, py::handle v) { o.routing.balancing = balancing_of(v); }},
      {"pins", [](ClientOptions& o, Fallback&, py::handle v) { o.routing.pins = pins_of(v); }},
      {"batching", [](ClientOptions& o, Fallback&, py::handle v) { o.batching = batching_of(v); }},
      {"fallback_repository",
       [](ClientOptions&, Fallback& f, py::handle v) {
         if (py::isinstance<py::str>(v)) {
           f.roots = {v.cast<std::string>()};
         } else {
           for (py::handle root : v) f.roots.push_back(py::str(root).cast<std::string>());
         }
       }},
      {"fallback_threads",
       [](ClientOptions&, Fallback& f, py::handle v) {
         f.threads = count_of(v, "fallback_threads");  // 0: the cores this process may use
       }},
      option("fallback_latency_budget", &ClientOptions::fallback_latency_budget, milliseconds_of),
      {"log", [](ClientOptions& o, Fallback&, py::handle v) { o.log = log_hook_of(v); }},
  };
  return table;
}

}  // namespace

std::chrono::microseconds microseconds_from_seconds(py::handle seconds, const char* what) {
  if (seconds.is_none()) return std::chrono::microseconds{0};
  double value = seconds.cast<double>();
  if (!(value >= 0) || value > 1e9) out_of_range(what, "must be a number of seconds, 0 or more");
  return std::chrono::microseconds(static_cast<std::int64_t>(std::llround(value * 1e6)));
}

const std::vector<const char*>& client_option_names() {
  static const std::vector<const char*> names = [] {
    std::vector<const char*> all;
    for (const auto& [name, set] : setters()) all.push_back(name);
    return all;
  }();
  return names;
}

ClientOptions client_options(std::vector<std::string> urls, const py::kwargs& options) {
  ClientOptions result;
  result.endpoints = std::move(urls);
  Fallback fallback;
  for (auto item : options) {
    auto name = item.first.cast<std::string>();
    const Setter* set = nullptr;
    for (const auto& [known, setter] : setters()) {
      if (name == known) set = &setter;
    }
    if (!set) {
      std::string known;
      for (const char* each : client_option_names())
        known += std::string(known.empty() ? "" : ", ") + each;
      throw py::type_error("Client() got an unexpected keyword argument '" + name +
                           "' (options: " + known + ")");
    }
    (*set)(result, fallback, item.second);
  }
  if (!fallback.roots.empty()) {
    result.fallback = repository::executor_from_repository(fallback.roots, fallback.threads);
  }
  return result;
}

}  // namespace sonic::python
