// sonic — the Client: blocking, callback and future inference, plus control calls.
#pragma once

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sonic/detail/cancellable.hpp"
#include "sonic/detail/chunked_call.hpp"
#include "sonic/detail/client_batcher.hpp"
#include "sonic/detail/client_core.hpp"
#include "sonic/error.hpp"
#include "sonic/metadata.hpp"
#include "sonic/options.hpp"
#include "sonic/request.hpp"
#include "sonic/stream.hpp"
#include "sonic/transport.hpp"
#include "sonic/validate.hpp"

namespace sonic {

namespace detail {

/// Called before a blocking call of a client. Blocking inside an inline callback would stall
/// (or deadlock) the thread that completes requests: refuse with an error that says what to do
/// instead. Inside a callback on a network thread, that thread hands its connections on first,
/// so that the reply this call waits for still gets read.
inline void prepare_to_block() {
  if (CallbackContext::in_inline_callback()) {
    throw Error(StatusCode::FailedPrecondition,
                "a blocking sonic call inside an inline callback would stall the thread that "
                "completes requests (CallbackThread::Inline): use infer_async, or hand the "
                "work to another thread");
  }
  if (auto* host = CallbackHost::current()) host->hand_off_now();
}

/// Waits for a transport call and returns its value or throws its Error.
template <typename T, typename Start>
T call_sync(Start&& start) {
  prepare_to_block();
  auto promise = std::make_shared<std::promise<Result<T>>>();
  auto future = promise->get_future();
  start([promise](Result<T> r) { promise->set_value(std::move(r)); });
  return future.get().value();
}

}  // namespace detail

/// Names a request started by Client::infer_async, so that it can be cancelled. Cheap to copy;
/// it keeps neither the request nor the client alive.
class RequestHandle {
 public:
  RequestHandle() = default;

  /// Cancels the request if it is still under way: the attempt in flight is stopped on the
  /// wire (HTTP/2 RST_STREAM CANCEL), so the server can drop it, and the callback runs with
  /// CANCELLED (never inside this call): at once, unless the request's borrowed inputs are
  /// still being written to the socket; then as soon as the write lets go of them (a stalled
  /// connection is closed after about a second to end it). True when this call cancelled it;
  /// false when it had completed already, was cancelled before, or its client is gone.
  /// Thread-safe; may be called from any thread, callbacks included.
  bool cancel() const {
    if (auto other = other_.lock()) return other->cancel();
    auto core = core_.lock();
    auto flight = flight_.lock();
    return core && flight && core->cancel(flight);
  }

 private:
  friend class Client;
  RequestHandle(std::weak_ptr<detail::ClientCore> core,
                std::weak_ptr<detail::ClientCore::Flight> flight)
      : core_(std::move(core)), flight_(std::move(flight)) {}
  explicit RequestHandle(std::weak_ptr<detail::Cancellable> other) : other_(std::move(other)) {}

  std::weak_ptr<detail::ClientCore> core_;
  std::weak_ptr<detail::ClientCore::Flight> flight_;
  std::weak_ptr<detail::Cancellable> other_;  // a batched part, a chunked call
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
class Client {
 public:
  /// A client for one endpoint URL. Throws sonic::Error(InvalidArgument) for a malformed URL
  /// or a scheme whose transport is not linked (the message names the CMake target to link).
  explicit Client(const std::string& url, ClientOptions options = {})
      : Client(with_url(url, std::move(options))) {}
  /// A client configured by options (options.endpoints must name at least one URL).
  explicit Client(ClientOptions options)
      : core_(std::make_shared<detail::ClientCore>(std::move(options))) {
    if (!core_->options().batching.empty()) {
      batching_ = std::make_shared<detail::ClientBatching>(core_, core_->options());
    }
  }

  ~Client() { release(); }

  Client(Client&&) noexcept = default;
  /// Ends this client's requests (as its destruction does), then takes the other's place.
  Client& operator=(Client&& other) noexcept {
    if (this != &other) {
      release();
      core_ = std::move(other.core_);
      batching_ = std::move(other.batching_);
    }
    return *this;
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Sends a request and waits for its result. Throws sonic::Error with the status code and
  /// the server's message. Safe to call from a callback (not an inline one: FAILED_PRECONDITION);
  /// on a network thread, that thread's connections move to a fresh one first.
  InferResult infer(InferRequest request) {
    detail::prepare_to_block();
    return infer_future(std::move(request)).get();
  }

  /// Sends a request; `done(Result<InferResult>)` runs exactly once: never inside this call,
  /// where ClientOptions::callbacks says (by default the network thread that read the reply,
  /// after its I/O), by the request's deadline at the latest. Errors found before sending (bad
  /// inputs) arrive the same way, on a callback thread. Borrowed input tensors must stay valid
  /// until `done` runs: sonic reads them until then, and never after. The handle cancels it.
  /// A model named in ClientOptions::batching may have the request merged with others (its
  /// borrowed inputs are then copied into the merged request and not read after).
  RequestHandle infer_async(InferRequest request, Callback<InferResult> done) {
    return start(std::move(request), std::move(done), detail::ClientCore::Delivery::Callback);
  }

  /// Sends a request; the future holds the result or throws sonic::Error from get(). The
  /// future is completed directly by the network thread (no callback thread involved).
  std::future<InferResult> infer_future(InferRequest request) {
    auto promise = std::make_shared<std::promise<InferResult>>();
    auto future = promise->get_future();
    start(
        std::move(request),
        [promise](Result<InferResult> result) {
          if (result) {
            promise->set_value(std::move(*result));
          } else {
            promise->set_exception(std::make_exception_ptr(result.error()));
          }
        },
        detail::ClientCore::Delivery::Direct);
    return future;
  }

  /// Sends a request with a large batch (ProtoDUNE's 55,000 patches of one event, say) as
  /// chunks of rows along the first dimension of its inputs, at most options.max_in_flight at
  /// once, and joins the chunks' outputs in order: `done` runs once, with one result as if the
  /// model had taken the whole batch, or with the first error (naming the chunk and its rows;
  /// the chunks still in flight are then cancelled). The chunks borrow the request's inputs
  /// without copying them: borrowed inputs must stay valid until `done` runs. The request's
  /// timeout bounds the whole call. `done` runs as infer_async's callbacks do; the handle
  /// cancels every chunk.
  RequestHandle infer_chunked_async(InferRequest request, ChunkOptions options,
                                    Callback<InferResult> done) {
    return start_chunked(std::move(request), options, std::move(done),
                         detail::ClientCore::Delivery::Callback);
  }

  /// infer_chunked_async, waiting for its result (throws sonic::Error).
  InferResult infer_chunked(InferRequest request, ChunkOptions options = {}) {
    return detail::call_sync<InferResult>([&](Callback<InferResult> done) {
      start_chunked(std::move(request), options, std::move(done),
                    detail::ClientCore::Delivery::Direct);
    });
  }

  // The read-only control calls below ask the first endpoint in rotation and, while one does
  // not answer (UNAVAILABLE), the next, within one control_timeout; load_model, unload_model
  // and call(), which may change a server, ask the first alone.

  /// Whether the server is live. Throws sonic::Error when it cannot be asked.
  bool server_live() {
    return control<bool>([](Transport& transport, Deadline deadline, Callback<bool> done) {
      transport.server_live_async(deadline, std::move(done));
    });
  }
  /// Whether the server is ready for inference.
  bool server_ready() {
    return control<bool>([](Transport& transport, Deadline deadline, Callback<bool> done) {
      transport.server_ready_async(deadline, std::move(done));
    });
  }
  /// Whether a model is loaded and ready (empty version: the server's choice).
  bool model_ready(const std::string& model, const std::string& version = {}) {
    return control<bool>([&](Transport& transport, Deadline deadline, Callback<bool> done) {
      transport.model_ready_async(model, version, deadline, std::move(done));
    });
  }
  /// The server's name, version and protocol extensions.
  ServerMetadata server_metadata() {
    return control<ServerMetadata>(
        [](Transport& transport, Deadline deadline, Callback<ServerMetadata> done) {
          transport.server_metadata_async(deadline, std::move(done));
        });
  }
  /// A model's inputs and outputs (fetched now, not from the validation cache).
  ModelMetadata model_metadata(const std::string& model, const std::string& version = {}) {
    return control<ModelMetadata>(
        [&](Transport& transport, Deadline deadline, Callback<ModelMetadata> done) {
          transport.model_metadata_async(model, version, deadline, std::move(done));
        });
  }
  /// A model's configuration as JSON (Triton's ModelConfig message in protobuf's JSON mapping).
  std::string model_config(const std::string& model, const std::string& version = {}) {
    return control<std::string>(
        [&](Transport& transport, Deadline deadline, Callback<std::string> done) {
          transport.model_config_async(model, version, deadline, std::move(done));
        });
  }
  /// Statistics of one model, or of all models when `model` is empty.
  std::vector<ModelStatistics> model_statistics(const std::string& model = {},
                                                const std::string& version = {}) {
    return control<std::vector<ModelStatistics>>(
        [&](Transport& transport, Deadline deadline, Callback<std::vector<ModelStatistics>> done) {
          transport.model_statistics_async(model, version, deadline, std::move(done));
        });
  }

  /// The server's models and their states ("READY", "UNAVAILABLE", ...); with `ready_only`,
  /// the ready ones alone.
  std::vector<ModelIndex> repository_index(bool ready_only = false) {
    return control<std::vector<ModelIndex>>([ready_only](Transport& transport, Deadline deadline,
                                                         Callback<std::vector<ModelIndex>> done) {
      transport.repository_index_async(ready_only, deadline, std::move(done));
    });
  }
  /// Loads or reloads a model; `config_json`, unless empty, is the configuration to load it
  /// with (Triton accepts one; sonic-server, whose models are fixed, refuses it).
  void load_model(const std::string& model, const std::string& config_json = {}) {
    detail::call_sync<bool>([&](Callback<bool> done) {
      core_->control_transport()->load_model_async(model, config_json, core_->control_deadline(),
                                                   std::move(done));
    });
  }
  /// Unloads a model: its requests fail (UNAVAILABLE) until it is loaded again.
  void unload_model(const std::string& model) {
    detail::call_sync<bool>([&](Callback<bool> done) {
      core_->control_transport()->unload_model_async(model, core_->control_deadline(),
                                                     std::move(done));
    });
  }

  /// Opens a stream (Triton's ModelStreamInfer) to the first endpoint in rotation: requests
  /// sent on it are answered through `on_response`, once each by most models and any number
  /// of times by a decoupled one (repeat_int32, a token generator), so that many small
  /// requests share one call and a decoupled model can answer at all. What `on_response`
  /// throws is caught, counted and logged as a request callback's is. Throws sonic::Error:
  /// UNIMPLEMENTED from a transport without streams (tcp://). Destroying the client cancels
  /// its open streams (their wait() says CANCELLED); their objects may outlive it.
  InferStream open_stream(StreamCallback on_response, StreamOptions options = {}) {
    InferStream::Opener open = [core = core_](Deadline deadline,
                                              std::function<void(StreamResponse)> deliver,
                                              Callback<void> done) {
      return core->open_stream(deadline, std::move(deliver), std::move(done));
    };
    return InferStream(open, std::move(on_response), options, core_->shared_callback_pool(),
                       [weak = std::weak_ptr<detail::ClientCore>(core_)](std::exception_ptr e) {
                         if (auto core = weak.lock()) core->callback_threw(e);
                       });
  }

  /// Any other method of inference.GRPCInferenceService ("TraceSetting", "LogSettings", ...):
  /// `request` is its serialized protobuf request (built with code protoc generated from
  /// Triton's grpc_service.proto, say), and the serialized response comes back. Throws
  /// sonic::Error as the other control calls do.
  std::string call(const std::string& method, const std::string& request) {
    return detail::call_sync<std::string>([&](Callback<std::string> done) {
      core_->control_transport()->call_async(method, request, core_->control_deadline(),
                                             std::move(done));
    });
  }

  const ClientOptions& options() const noexcept { return core_->options(); }

  /// Counters of this client (requests, retries, fallbacks, failures by code, per-endpoint
  /// load and latency); ClientStats::to_json() gives them as JSON.
  ClientStats stats() const {
    ClientStats stats = core_->stats();
    if (batching_) batching_->add_counters(stats);
    return stats;
  }

 private:
  // A read-only control call through ClientCore::control_async, waited for.
  template <typename T, typename Start>
  T control(Start start) {
    return detail::call_sync<T>(
        [&](Callback<T> done) { core_->control_async<T>(std::move(start), std::move(done)); });
  }

  RequestHandle start(InferRequest request, Callback<InferResult> done,
                      detail::ClientCore::Delivery delivery) {
    Deadline deadline = core_->request_deadline(request);
    if (auto* model = batching_ ? batching_->find(request) : nullptr) {
      if (auto rows = model->rows_for(request)) {
        auto part = model->add(std::move(request), deadline, std::move(done), delivery, *rows);
        return RequestHandle(std::weak_ptr<detail::Cancellable>(part));
      }
    }
    auto flight = core_->submit(std::move(request), deadline, std::move(done), delivery);
    return RequestHandle(core_, flight);
  }

  RequestHandle start_chunked(InferRequest request, ChunkOptions options,
                              Callback<InferResult> done, detail::ClientCore::Delivery delivery) {
    Deadline deadline = core_->request_deadline(request);
    auto call = std::make_shared<detail::ChunkedCall>(core_, std::move(request), deadline, options,
                                                      std::move(done), delivery);
    call->start();
    return RequestHandle(std::weak_ptr<detail::Cancellable>(call));
  }

  // Ends every request of this client, on another thread when this one runs one of its
  // callbacks (closing waits for them all, this thread's included).
  void release() {
    if (!core_) return;
    if (detail::CallbackContext::in_callback()) {
      std::thread([core = std::move(core_), batching = std::move(batching_)] {
        close(*core, batching.get());
      }).detach();
      return;
    }
    close(*core_, batching_.get());
    core_.reset();
    batching_.reset();
  }

  // Queued batches first: their requests end with CANCELLED like those in flight.
  static void close(detail::ClientCore& core, detail::ClientBatching* batching) {
    if (batching) batching->close();
    core.close();
  }

  static ClientOptions with_url(const std::string& url, ClientOptions options) {
    options.endpoints.insert(options.endpoints.begin(), url);
    return options;
  }

  std::shared_ptr<detail::ClientCore> core_;
  std::shared_ptr<detail::ClientBatching> batching_;  // with ClientOptions::batching
};

}  // namespace sonic
