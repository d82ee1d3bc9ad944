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
#include "sonic/clock.hpp"
#include "sonic/control.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/detail/unique_function.hpp"
#include "sonic/error.hpp"
#include "sonic/metadata.hpp"
#include "sonic/options.hpp"
#include "sonic/request.hpp"

namespace sonic {

/// A parsed endpoint URL: scheme://host:port.
struct Endpoint {
  std::string url;
  std::string scheme;
  std::string host;  ///< without the brackets of an IPv6 literal
  std::uint16_t port = 0;
};

/// Parses "scheme://host:port" ("grpc://127.0.0.1:8001", "grpc://[::1]:8001"). A URL without a
/// scheme means grpc; one without a port means Triton's port for its scheme: 8000 for http://
/// and https://, else 8001.
SONIC_EXPORT Result<Endpoint> parse_endpoint(std::string_view url);

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
class SONIC_EXPORT TransportStream {
 public:
  virtual ~TransportStream();
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
/// Async contract, for every *_async function below (Asio's and Beast's rule):
/// - `done` is called exactly once, with a value or an Error carrying a gRPC status code;
/// - never inside the initiating call, also when the call fails before anything was sent (a
///   message over the size limit, a connection that cannot be made, a deadline already
///   passed): later, on a thread owned by the transport (its network thread, which is the
///   caller's own only when the caller is a completion running there), or, for a call a thread
///   makes inside a blocking Client::infer() (ClientOptions::drive_blocking_calls), on that
///   thread while it waits, once the initiating call has returned. A transport without a
///   thread of its own (these defaults) uses the process's completion thread, one thread that
///   runs such completions in order;
/// - by the deadline (plus the time to notice it), with DEADLINE_EXCEEDED if the answer is late;
/// - destroying the transport completes every outstanding call with CANCELLED before the
///   destructor returns (a call that failed before it was sent completes with its own error,
///   before the destructor returns too).
/// Every function is thread-safe. Calling a transport whose destructor has begun is the
/// caller's error, and undefined, as for any object being destroyed. (The transports of this
/// library bear a call that overlaps the start of their destructor: it completes with
/// CANCELLED, never inside the call, before the destructor returns.)
class SONIC_EXPORT Transport {
 public:
  virtual ~Transport();

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

  /// A control call (health, metadata, statistics, the model repository, shared memory,
  /// settings: every ControlMethod): `done` gets the answer of the request's Answer type, or the
  /// call's error. A transport that does not carry a method answers UNIMPLEMENTED.
  virtual void control_async(ControlRequest request, Deadline deadline,
                             Callback<ControlAnswer> done) = 0;

  // The control calls, typed: each is control_async() with its request, the same contract.

  /// Whether the server is live (KServe ServerLive).
  void server_live_async(Deadline deadline, Callback<bool> done);
  /// Whether the server is ready for inference (KServe ServerReady).
  void server_ready_async(Deadline deadline, Callback<bool> done);
  /// Whether a model (an empty version: the server's choice) is ready (KServe ModelReady).
  void model_ready_async(std::string model, std::string version, Deadline deadline,
                         Callback<bool> done);
  /// The server's name, version and extensions.
  void server_metadata_async(Deadline deadline, Callback<ServerMetadata> done);
  /// A model's inputs, outputs, versions and platform.
  void model_metadata_async(std::string model, std::string version, Deadline deadline,
                            Callback<ModelMetadata> done);
  /// A model's configuration (Triton's ModelConfig) as JSON text.
  void model_config_async(std::string model, std::string version, Deadline deadline,
                          Callback<std::string> done);
  /// Statistics of a model, or of every model when `model` is empty.
  void model_statistics_async(std::string model, std::string version, Deadline deadline,
                              Callback<std::vector<ModelStatistics>> done);
  /// The server's models and their states (RepositoryIndex); `ready_only`: READY ones only.
  void repository_index_async(bool ready_only, Deadline deadline,
                              Callback<std::vector<ModelIndex>> done);
  /// Loads (or reloads) a model (RepositoryModelLoad); `config_json`, unless empty, is the
  /// model configuration to load it with (Triton's "config" parameter). `done` gets true.
  void load_model_async(std::string model, std::string config_json, Deadline deadline,
                        Callback<bool> done);
  /// Unloads a model (RepositoryModelUnload). `done` gets true.
  void unload_model_async(std::string model, Deadline deadline, Callback<bool> done);
  /// Any control method by its name in inference.GRPCInferenceService ("ServerReady",
  /// "SystemSharedMemoryRegister", ...): `request` is its serialized protobuf request, and
  /// `done` receives the serialized response or the call's error; UNIMPLEMENTED (on the
  /// process's completion thread) for a name that is no control method.
  void call_async(std::string_view method, std::string request, Deadline deadline,
                  Callback<std::string> done);

  /// Opens a ModelStreamInfer call: requests sent on it are answered through `on_response`,
  /// then `done` gets how the call ended (OK once the client closed its side and the server
  /// answered everything; the server's status, a lost connection, the deadline, CANCELLED).
  /// Once the stream is returned, `done` runs exactly once; neither runs inside this call or
  /// inside the stream's send() and close(), and both run on the transport's threads. An Error
  /// returned instead (a transport without streams answers UNIMPLEMENTED) means that neither
  /// ever runs. The stream holds what it needs (connection, buffers), not the transport: it may
  /// outlive it.
  virtual Result<std::unique_ptr<TransportStream>> open_stream(
      Deadline deadline, std::function<void(StreamResponse)> on_response, Callback<void> done);
};

/// Makes a transport for an endpoint; returns an Error for a URL it cannot serve.
using TransportFactory =
    std::function<Result<std::unique_ptr<Transport>>(const Endpoint&, const ClientOptions&)>;

/// The transports linked into this program, by URL scheme. Transport libraries add themselves
/// when linked; users do not normally touch this.
class SONIC_EXPORT TransportRegistry {
 public:
  /// Registers (or replaces) the factory of a scheme.
  void add(std::string scheme, TransportFactory factory);

  /// A transport for the endpoint; an unlinked scheme is an error naming the target to link.
  Result<std::unique_ptr<Transport>> create(const Endpoint& endpoint,
                                            const ClientOptions& options) const;

  bool has(std::string_view scheme) const;

  /// Installs the system's name lookup; transport libraries, which have one, do this.
  void set_resolver(Resolver resolver);
  /// The system's name lookup; empty when no linked transport provides one.
  Resolver resolver() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, TransportFactory, std::less<>> factories_;
  Resolver resolver_;
};

/// Whether `host` is an IP address literal (which is never looked up) rather than a name.
SONIC_EXPORT bool is_ip_literal(std::string_view host);

/// The program-wide registry: one instance in the whole process (it lives in sonic::client).
SONIC_EXPORT TransportRegistry& transport_registry();

}  // namespace sonic
