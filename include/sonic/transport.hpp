// sonic — the interface every transport implements, endpoint URLs, and the scheme registry.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sonic/cancel.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/detail/unique_function.hpp"
#include "sonic/error.hpp"
#include "sonic/metadata.hpp"
#include "sonic/options.hpp"
#include "sonic/request.hpp"

namespace sonic {

using Clock = std::chrono::steady_clock;
/// The moment an operation must be complete by; Deadline::max() means none.
using Deadline = Clock::time_point;

/// The deadline `timeout` from now; none for a zero timeout.
inline Deadline deadline_after(std::chrono::microseconds timeout) {
  return timeout.count() > 0 ? Clock::now() + timeout : Deadline::max();
}

/// A completion handler: called exactly once with the outcome. Move-only callables are fine.
template <typename T>
using Callback = detail::UniqueFunction<void(Result<T>)>;

/// A parsed endpoint URL: scheme://host:port.
struct Endpoint {
  std::string url;
  std::string scheme;
  std::string host;  ///< without the brackets of an IPv6 literal
  std::uint16_t port = 0;
};

/// Parses "scheme://host:port" ("grpc://127.0.0.1:8001", "grpc://[::1]:8001"). A URL without a
/// scheme means grpc; one without a port means 8001, Triton's gRPC port.
inline Result<Endpoint> parse_endpoint(std::string_view url) {
  Endpoint ep;
  ep.url = std::string(url);
  std::string_view rest = url;
  if (auto sep = rest.find("://"); sep != std::string_view::npos) {
    ep.scheme = std::string(rest.substr(0, sep));
    rest.remove_prefix(sep + 3);
  } else {
    ep.scheme = "grpc";
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  std::string_view port_text;
  bool port_given = false;  // a ':' after the host: a port must follow
  if (!rest.empty() && rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string_view::npos) {
      return Error(StatusCode::InvalidArgument, "endpoint '" + ep.url + "': unclosed '[' in host");
    }
    ep.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return Error(StatusCode::InvalidArgument, "endpoint '" + ep.url + "': junk after host");
      }
      port_text = rest.substr(1);
      port_given = true;
    }
  } else {
    auto colon = rest.rfind(':');
    ep.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = rest.substr(colon + 1);
      port_given = true;
    }
  }
  if (ep.host.empty()) {
    return Error(StatusCode::InvalidArgument,
                 "endpoint '" + ep.url + "' has no host; expected scheme://host:port");
  }
  if (!port_given) {
    ep.port = 8001;
    return ep;
  }
  if (port_text.empty()) {  // "host:" (an unset variable in a script, say)
    return Error(StatusCode::InvalidArgument,
                 "endpoint '" + ep.url + "' has an empty port; expected scheme://host:port");
  }
  unsigned long port = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9' || port > 65535) {
      port = 70000;
      break;
    }
    port = port * 10 + static_cast<unsigned long>(c - '0');
  }
  if (port == 0 || port > 65535) {
    return Error(StatusCode::InvalidArgument,
                 "endpoint '" + ep.url + "' has an invalid port '" + std::string(port_text) + "'");
  }
  ep.port = static_cast<std::uint16_t>(port);
  return ep;
}

/// One response on a stream (ModelStreamInfer): one of the answers to a request sent on it.
struct StreamResponse {
  /// The request it answers, as the server echoed its id: give each request an id to tell their
  /// responses apart.
  std::string request_id;
  /// Its outputs, or the error the server gave its request. The wire carries no code for such
  /// an error: it is UNKNOWN, with the server's message.
  Result<InferResult> result = Error(StatusCode::Unknown, "no response");
  /// Whether it is the last response to its request (Triton's triton_final_response; true
  /// when the server does not say). A decoupled model may answer a request any number of
  /// times, none included; with the request parameter triton_enable_empty_final_response, its
  /// last response is an empty one with `final` set.
  bool final = true;
  /// Holds back the stream's flow-control window while this response is queued for the
  /// callback or kept by the caller: a caller that holds many (ClientOptions::
  /// stream_window_bytes' worth) makes the server wait instead of the client's memory grow.
  /// Dropped with the response; nothing to do with it.
  std::shared_ptr<const void> window_hold;
};

/// A ModelStreamInfer call a transport opened (Transport::open_stream). Its callbacks run on
/// the transport's threads, one at a time and in the order the server sent the responses.
/// Thread-safe. Destroying it cancels the call unless it ended, and returns once its `done`
/// has run.
class TransportStream {
 public:
  virtual ~TransportStream() = default;
  /// Sends a request on the stream. The transport keeps what it needs of it (borrowed inputs
  /// are copied). FAILED_PRECONDITION once the stream was closed or ended.
  virtual Result<void> send(InferRequest request) = 0;
  /// Ends the client's side: no more requests. The call ends once the server answered.
  virtual void close() = 0;
  /// Ends the call now, on the wire too: `done` gets CANCELLED (unless it ended already).
  virtual void cancel() = 0;
};

/// A way to reach an inference server. Implementations are compiled libraries (sonic::grpc,
/// ...) that register their URL schemes with transport_registry().
///
/// Async contract, for every *_async function below:
/// - `done` is called exactly once, with a value or an Error carrying a gRPC status code;
/// - on a thread owned by the transport, or inside the initiating call itself when the call
///   fails before anything was sent (a message over the size limit, a transport being
///   destroyed): callers that must not be re-entered defer those (sonic::Client does, so that
///   its own callbacks never run inside infer_async);
/// - by the deadline (plus the time to notice it), with DEADLINE_EXCEEDED if the answer is late;
/// - destroying the transport completes every outstanding call with CANCELLED before the
///   destructor returns.
/// Every function is thread-safe.
class Transport {
 public:
  virtual ~Transport() = default;

  /// Sends an inference request. `request` is the caller's, and stays valid and unchanged
  /// until `done` has been called (a Client keeps it with the request it is an attempt of), so
  /// a transport reads it, and the tensors it owns or borrows, without a copy. It reads them
  /// until `done` is called, and never after: a transport that stops a call (deadline, cancel,
  /// a lost connection) while its bytes are being written completes it once the write no
  /// longer reads them.
  /// `cancel` (may be null) lets the caller stop the call: the transport installs a stop action
  /// on it (resetting the stream on the wire) and then completes the call with CANCELLED.
  virtual void infer_async(const InferRequest& request, Deadline deadline,
                           std::shared_ptr<CancelSignal> cancel, Callback<InferResult> done) = 0;

  /// Any other method of inference.GRPCInferenceService ("ServerReady", "RepositoryIndex",
  /// "SystemSharedMemoryRegister", ...) as one unary call: `request` is its serialized
  /// protobuf request, and `done` receives the serialized response or the call's error.
  virtual void call_async(std::string method, std::string request, Deadline deadline,
                          Callback<std::string> done) = 0;

  /// Whether the server is live (KServe ServerLive).
  virtual void server_live_async(Deadline deadline, Callback<bool> done) = 0;
  /// Whether the server is ready for inference (KServe ServerReady).
  virtual void server_ready_async(Deadline deadline, Callback<bool> done) = 0;
  /// Whether a model (an empty version: the server's choice) is ready (KServe ModelReady).
  virtual void model_ready_async(std::string model, std::string version, Deadline deadline,
                                 Callback<bool> done) = 0;
  /// The server's name, version and extensions.
  virtual void server_metadata_async(Deadline deadline, Callback<ServerMetadata> done) = 0;
  /// A model's inputs, outputs, versions and platform.
  virtual void model_metadata_async(std::string model, std::string version, Deadline deadline,
                                    Callback<ModelMetadata> done) = 0;
  /// A model's configuration (Triton's ModelConfig) as JSON text.
  virtual void model_config_async(std::string model, std::string version, Deadline deadline,
                                  Callback<std::string> done) = 0;
  /// Statistics of a model, or of every model when `model` is empty.
  virtual void model_statistics_async(std::string model, std::string version, Deadline deadline,
                                      Callback<std::vector<ModelStatistics>> done) = 0;

  // The model repository (KServe's model repository extension). A transport that does not
  // carry it answers UNIMPLEMENTED, as these defaults do.

  /// The server's models and their states (RepositoryIndex); `ready_only`: READY ones only.
  virtual void repository_index_async(bool ready_only, Deadline deadline,
                                      Callback<std::vector<ModelIndex>> done) {
    (void)ready_only;
    (void)deadline;
    done(Error(StatusCode::Unimplemented, "this transport has no model repository calls"));
  }
  /// Loads (or reloads) a model (RepositoryModelLoad); `config_json`, unless empty, is the
  /// model configuration to load it with (Triton's "config" parameter). `done` gets true.
  virtual void load_model_async(std::string model, std::string config_json, Deadline deadline,
                                Callback<bool> done) {
    (void)model;
    (void)config_json;
    (void)deadline;
    done(Error(StatusCode::Unimplemented, "this transport has no model repository calls"));
  }
  /// Unloads a model (RepositoryModelUnload). `done` gets true.
  virtual void unload_model_async(std::string model, Deadline deadline, Callback<bool> done) {
    (void)model;
    (void)deadline;
    done(Error(StatusCode::Unimplemented, "this transport has no model repository calls"));
  }

  /// Opens a ModelStreamInfer call: requests sent on it are answered through `on_response`,
  /// then `done` gets how the call ended (OK once the client closed its side and the server
  /// answered everything; the server's status, a lost connection, the deadline, CANCELLED).
  /// Neither runs inside this call. A transport without streams answers UNIMPLEMENTED. The
  /// stream holds what it needs (connection, buffers), not the transport: it may outlive it.
  virtual Result<std::unique_ptr<TransportStream>> open_stream(
      Deadline deadline, std::function<void(StreamResponse)> on_response, Callback<void> done) {
    (void)deadline;
    (void)on_response;
    (void)done;
    return Error(StatusCode::Unimplemented, "this transport has no streams (ModelStreamInfer)");
  }
};

/// Makes a transport for an endpoint; returns an Error for a URL it cannot serve.
using TransportFactory =
    std::function<Result<std::unique_ptr<Transport>>(const Endpoint&, const ClientOptions&)>;

/// The transports linked into this program, by URL scheme. Transport libraries add themselves
/// when linked; users do not normally touch this.
class TransportRegistry {
 public:
  /// Registers (or replaces) the factory of a scheme.
  void add(std::string scheme, TransportFactory factory) {
    std::lock_guard<std::mutex> lock(mutex_);
    factories_[std::move(scheme)] = std::move(factory);
  }

  /// A transport for the endpoint; an unlinked scheme is an error naming the target to link.
  Result<std::unique_ptr<Transport>> create(const Endpoint& endpoint,
                                            const ClientOptions& options) const {
    TransportFactory factory;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = factories_.find(endpoint.scheme);
      if (it != factories_.end()) factory = it->second;
    }
    if (!factory) {
      return Error(StatusCode::InvalidArgument, "no transport for scheme '" + endpoint.scheme +
                                                    "' in '" + endpoint.url +
                                                    "': " + link_hint(endpoint.scheme));
    }
    return factory(endpoint, options);
  }

  bool has(std::string_view scheme) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return factories_.find(scheme) != factories_.end();
  }

  /// Installs the system's name lookup; transport libraries, which have one, do this.
  void set_resolver(Resolver resolver) {
    std::lock_guard<std::mutex> lock(mutex_);
    resolver_ = std::move(resolver);
  }
  /// The system's name lookup; empty when no linked transport provides one.
  Resolver resolver() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return resolver_;
  }

 private:
  static std::string link_hint(std::string_view scheme) {
    if (scheme == "grpc" || scheme == "grpcs") return "link the CMake target sonic::grpc";
    if (scheme == "grpc+shm") return "link the CMake target sonic::shm";
    if (scheme == "tcp" || scheme == "tcp+zstd" || scheme == "tcp+tls" || scheme == "tcp+zstd+tls")
      return "link the CMake target sonic::tcp";
    return "known schemes are grpc, grpcs, grpc+shm, tcp, tcp+zstd, tcp+tls and tcp+zstd+tls";
  }

  mutable std::mutex mutex_;
  std::map<std::string, TransportFactory, std::less<>> factories_;
  Resolver resolver_;
};

/// Whether `host` is an IP address literal (which is never looked up) rather than a name.
inline bool is_ip_literal(std::string_view host) {
  if (host.find(':') != std::string_view::npos) return true;  // IPv6
  int dots = 0;
  for (char c : host) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots == 3;
}

/// The program-wide registry: one instance in the whole process, whatever the number of
/// translation units and shared libraries that use it (hence its default visibility, which
/// makes every copy of this inline function share one object).
SONIC_EXPORT inline TransportRegistry& transport_registry() {
  static TransportRegistry registry;
  return registry;
}

}  // namespace sonic
