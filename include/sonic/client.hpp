// sonic — the Client: blocking, callback and future inference, plus control calls.
//
// A thin facade: the engine behind it (endpoints, retries, the fallback, callback placement) is
// compiled into sonic::client, so that including this costs a program little.
#pragma once

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/metadata.hpp"
#include "sonic/options.hpp"
#include "sonic/request.hpp"
#include "sonic/stream.hpp"
#include "sonic/transport.hpp"
#include "sonic/validate.hpp"

namespace sonic {

namespace detail {
class Cancellable;
class ClientBatching;
class ClientCore;
enum class Delivery;
}  // namespace detail

/// Names a request started by Client::infer_async, so that it can be cancelled. Cheap to copy;
/// it keeps neither the request nor the client alive.
class SONIC_EXPORT RequestHandle {
 public:
  RequestHandle() = default;

  /// Cancels the request if it is still under way: the attempt in flight is stopped on the
  /// wire (HTTP/2 RST_STREAM CANCEL), so the server can drop it, and the callback runs with
  /// CANCELLED (never inside this call): at once, unless the request's borrowed inputs are
  /// still being written to the socket; then as soon as the write lets go of them (a stalled
  /// connection is closed after about a second to end it). True when this call cancelled it;
  /// false when it had completed already, was cancelled before, or its client is gone.
  /// Thread-safe; may be called from any thread, callbacks included.
  bool cancel() const;

 private:
  friend class Client;
  explicit RequestHandle(std::weak_ptr<detail::Cancellable> request)
      : request_(std::move(request)) {}

  std::weak_ptr<detail::Cancellable> request_;  // a flight, a batched part, a chunked call
};

/// A connection to an inference server, shared safely by any number of threads.
///
///   sonic::Client client("grpc://127.0.0.1:8001");
///   auto result = client.infer(sonic::InferRequest("simple").input(...));
///
/// Clients share what a process needs only once: network threads, one connection per endpoint
/// (ClientOptions::share_connections), a timer thread and the callback threads.
///
/// Destroying a Client completes every request still in flight with CANCELLED (their callbacks
/// run before the destructor returns; when it is destroyed inside one of its callbacks, they
/// run soon after, on another thread, since that thread cannot wait for itself).
class SONIC_EXPORT Client {
 public:
  /// A client for one endpoint URL. Throws sonic::Error(InvalidArgument) for a malformed URL
  /// or a scheme whose transport is not linked (the message names the CMake target to link).
  explicit Client(const std::string& url, ClientOptions options = {});
  /// A client configured by options (options.endpoints must name at least one URL).
  explicit Client(ClientOptions options);

  ~Client();

  Client(Client&&) noexcept;
  /// Ends this client's requests (as its destruction does), then takes the other's place.
  Client& operator=(Client&& other) noexcept;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Sends a request and waits for its result. Throws sonic::Error with the status code and
  /// the server's message. Safe to call from a callback (not an inline one: FAILED_PRECONDITION);
  /// on a network thread, that thread's connections move to a fresh one first.
  InferResult infer(InferRequest request);

  /// Sends a request; `done(Result<InferResult>)` runs exactly once: never inside this call,
  /// where ClientOptions::callbacks says (by default the network thread that read the reply,
  /// after its I/O), by the request's deadline at the latest: at most 7 ms after it (the
  /// deadline watch's grace and tick) plus the time a callback thread takes to start it (the
  /// callback already running there, the machine's scheduling), whatever backlog of other
  /// outcomes the client holds, which an overdue outcome overtakes (borrowed inputs a transport
  /// is still writing hold it longer). Errors found before sending (bad inputs) arrive the same
  /// way, on a callback thread. Borrowed input tensors must stay valid
  /// until `done` runs: sonic reads them until then, and never after. The handle cancels it.
  /// A model named in ClientOptions::batching may have the request merged with others (its
  /// borrowed inputs are then copied into the merged request and not read after).
  RequestHandle infer_async(InferRequest request, Callback<InferResult> done);

  /// Sends a request; the future holds the result or throws sonic::Error from get(). The
  /// future is completed directly by the network thread (no callback thread involved).
  std::future<InferResult> infer_future(InferRequest request);

  /// Sends a request with a large batch (ProtoDUNE's 55,000 patches of one event, say) as
  /// chunks of rows along the first dimension of its inputs, at most options.max_in_flight at
  /// once, and joins the chunks' outputs in order: `done` runs once, with one result as if the
  /// model had taken the whole batch, or with the first error (naming the chunk and its rows;
  /// the chunks still in flight are then cancelled). The chunks borrow the request's inputs
  /// without copying them: borrowed inputs must stay valid until `done` runs. The request's
  /// timeout bounds the whole call. `done` runs as infer_async's callbacks do; the handle
  /// cancels every chunk.
  RequestHandle infer_chunked_async(InferRequest request, ChunkOptions options,
                                    Callback<InferResult> done);

  /// infer_chunked_async, waiting for its result (throws sonic::Error).
  InferResult infer_chunked(InferRequest request, ChunkOptions options = {});

  // The read-only control calls below ask the first endpoint in rotation and, while one does
  // not answer (UNAVAILABLE), the next, within one control_timeout; load_model, unload_model
  // and call(), which may change a server, ask the first alone. Each throws sonic::Error when
  // the server cannot be asked or refuses.

  /// Whether the server is live.
  bool server_live();
  /// Whether the server is ready for inference.
  bool server_ready();
  /// Whether a model is loaded and ready (empty version: the server's choice).
  bool model_ready(const std::string& model, const std::string& version = {});
  /// The server's name, version and protocol extensions.
  ServerMetadata server_metadata();
  /// A model's inputs and outputs (fetched now, not from the validation cache).
  ModelMetadata model_metadata(const std::string& model, const std::string& version = {});
  /// A model's configuration as JSON (Triton's ModelConfig message in protobuf's JSON mapping).
  std::string model_config(const std::string& model, const std::string& version = {});
  /// Statistics of one model, or of all models when `model` is empty.
  std::vector<ModelStatistics> model_statistics(const std::string& model = {},
                                                const std::string& version = {});

  /// The server's models and their states ("READY", "UNAVAILABLE", ...); with `ready_only`,
  /// the ready ones alone.
  std::vector<ModelIndex> repository_index(bool ready_only = false);
  /// Loads or reloads a model; `config_json`, unless empty, is the configuration to load it
  /// with, in place of its repository's (Triton's "config" parameter; sonic-server takes it
  /// for a model of its repository, and refuses it for a model built into the program).
  void load_model(const std::string& model, const std::string& config_json = {});
  /// Unloads a model: its requests fail (UNAVAILABLE) until it is loaded again.
  void unload_model(const std::string& model);

  /// Opens a stream (Triton's ModelStreamInfer) to the first endpoint in rotation: requests
  /// sent on it are answered through `on_response`, once each by most models and any number
  /// of times by a decoupled one (repeat_int32, a token generator), so that many small
  /// requests share one call and a decoupled model can answer at all. What `on_response`
  /// throws is caught, counted and logged as a request callback's is. Throws sonic::Error:
  /// UNIMPLEMENTED from a transport without streams (tcp://). Destroying the client cancels
  /// its open streams (their wait() says CANCELLED); their objects may outlive it.
  InferStream open_stream(StreamCallback on_response, StreamOptions options = {});

  /// Any other method of inference.GRPCInferenceService ("TraceSetting", "LogSettings", ...):
  /// `request` is its serialized protobuf request (built with code protoc generated from
  /// Triton's grpc_service.proto, say), and the serialized response comes back. Throws
  /// sonic::Error as the other control calls do.
  std::string call(const std::string& method, const std::string& request);

  const ClientOptions& options() const noexcept;

  /// Counters of this client (requests, retries, fallbacks, failures by code, per-endpoint
  /// load and latency); ClientStats::to_json() gives them as JSON.
  ClientStats stats() const;

 private:
  RequestHandle start(InferRequest request, Callback<InferResult> done, detail::Delivery delivery);
  RequestHandle start_chunked(InferRequest request, ChunkOptions options,
                              Callback<InferResult> done, detail::Delivery delivery);
  void release();

  std::shared_ptr<detail::ClientCore> core_;
  std::shared_ptr<detail::ClientBatching> batching_;  // with ClientOptions::batching
};

}  // namespace sonic
