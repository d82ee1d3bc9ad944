// sonic — the Client: blocking, callback and future inference, plus control calls.
#pragma once

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sonic/detail/thread_pool.hpp"
#include "sonic/error.hpp"
#include "sonic/metadata.hpp"
#include "sonic/options.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"
#include "sonic/validate.hpp"

namespace sonic {

namespace detail {

/// A Client's shared state: the transport, the model metadata cache and the callback pool.
class ClientCore {
 public:
  explicit ClientCore(ClientOptions options)
      : options_(std::move(options)),
        callbacks_(std::make_shared<ThreadPool>(options_.callback_threads)) {
    if (options_.endpoints.empty()) {
      throw Error(StatusCode::InvalidArgument,
                  "no endpoint given: pass a URL such as grpc://127.0.0.1:8001");
    }
    check_headers(options_.headers).value();
    Endpoint endpoint = parse_endpoint(options_.endpoints.front()).value();
    transport_ = transport_registry().create(endpoint, options_).value();
  }

  ~ClientCore() {
    // Destroying the transport completes every outstanding call with CANCELLED; those
    // completions still reach the callback pool, destroyed after it. The pointer stays set
    // while the transport's destructor runs: a metadata answer delivered meanwhile may still
    // send its request, which a closing transport answers with CANCELLED.
    delete transport_.get();
    (void)transport_.release();
  }

  const ClientOptions& options() const noexcept { return options_; }
  Transport& transport() noexcept { return *transport_; }

  Deadline request_deadline(const InferRequest& request) const {
    return deadline_after(request.timeout().count() > 0
                              ? request.timeout()
                              : std::chrono::microseconds(options_.default_timeout));
  }
  Deadline control_deadline() const { return deadline_after(options_.control_timeout); }

  /// Validates and sends. `done` may run inside this call (for errors found before sending)
  /// or on a transport thread.
  void submit(InferRequest request, Deadline deadline, Callback<InferResult> done) {
    if (auto ok = check_request(request); !ok) return done(ok.error());
    if (!options_.validate_inputs)
      return transport_->infer_async(std::move(request), deadline, std::move(done));

    std::string key = request.model_name() + '\0' + request.model_version();
    std::shared_ptr<const ModelMetadata> known;
    bool fetch = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& entry = metadata_[key];
      known = entry.metadata;
      if (!known && !entry.fetching) fetch = entry.fetching = true;
    }
    if (known) return send_validated(*known, std::move(request), deadline, std::move(done));
    if (!fetch) {
      // Another request is fetching this model's metadata. Waiting for it could outlast this
      // request's own deadline, so send now and let the server validate.
      return transport_->infer_async(std::move(request), deadline, std::move(done));
    }
    std::string model = request.model_name(), version = request.model_version();
    transport_->model_metadata_async(
        std::move(model), std::move(version), std::min(deadline, control_deadline()),
        [this, key, request = std::move(request), deadline,
         done = std::move(done)](Result<ModelMetadata> metadata) mutable {
          auto model_metadata = remember(key, std::move(metadata));
          if (!model_metadata) {
            const Error& e = model_metadata.error();
            return done(Error(e.code(), "model '" + request.model_name() + "': " + e.message()));
          }
          send_validated(**model_metadata, std::move(request), deadline, std::move(done));
        });
  }

  /// The callback threads. Completions hold them weakly: a network thread must never own the
  /// client (it would have to join itself when the client goes away).
  std::weak_ptr<ThreadPool> callback_pool() const { return callbacks_; }

 private:
  struct CacheEntry {
    std::shared_ptr<const ModelMetadata> metadata;
    bool fetching = false;
  };

  void send_validated(const ModelMetadata& metadata, InferRequest request, Deadline deadline,
                      Callback<InferResult> done) {
    if (auto ok = validate_request(metadata, request); !ok) return done(ok.error());
    transport_->infer_async(std::move(request), deadline, std::move(done));
  }

  // Caches fetched metadata; a failure is not cached, since the model may appear later.
  Result<std::shared_ptr<const ModelMetadata>> remember(const std::string& key,
                                                        Result<ModelMetadata> metadata) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!metadata) {
      metadata_.erase(key);
      return metadata.error();
    }
    auto& entry = metadata_[key];
    entry.metadata = std::make_shared<const ModelMetadata>(std::move(*metadata));
    entry.fetching = false;
    return entry.metadata;
  }

  ClientOptions options_;
  std::mutex mutex_;
  std::map<std::string, CacheEntry> metadata_;
  std::shared_ptr<ThreadPool> callbacks_;
  std::unique_ptr<Transport> transport_;  // last: destroyed first, while the pool still runs
};

/// Waits for a transport call and returns its value or throws its Error.
template <typename T, typename Start>
T call_sync(Start&& start) {
  auto promise = std::make_shared<std::promise<Result<T>>>();
  auto future = promise->get_future();
  start([promise](Result<T> r) { promise->set_value(std::move(r)); });
  return future.get().value();
}

}  // namespace detail

/// A connection to an inference server, shared safely by any number of threads.
///
///   sonic::Client client("grpc://127.0.0.1:8001");
///   auto result = client.infer(sonic::InferRequest("simple").input(...));
///
/// Destroying a Client completes every request still in flight with CANCELLED (their callbacks
/// run before the destructor returns).
class Client {
 public:
  /// A client for one endpoint URL. Throws sonic::Error(InvalidArgument) for a malformed URL
  /// or a scheme whose transport is not linked (the message names the CMake target to link).
  explicit Client(const std::string& url, ClientOptions options = {})
      : Client(with_url(url, std::move(options))) {}
  /// A client configured by options (options.endpoints must name at least one URL).
  explicit Client(ClientOptions options)
      : core_(std::make_shared<detail::ClientCore>(std::move(options))) {}

  Client(Client&&) noexcept = default;
  Client& operator=(Client&&) noexcept = default;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Sends a request and waits for its result. Throws sonic::Error with the status code and
  /// the server's message. Safe to call from a callback.
  InferResult infer(InferRequest request) { return infer_future(std::move(request)).get(); }

  /// Sends a request; `done(Result<InferResult>)` runs exactly once: never inside this call,
  /// always on one of the client's callback threads (ClientOptions::callback_threads), by the
  /// request's deadline at the latest. Errors found before sending (bad inputs) arrive the same
  /// way. Borrowed input tensors must stay valid until `done` runs.
  void infer_async(InferRequest request, Callback<InferResult> done) {
    Deadline deadline = core_->request_deadline(request);
    core_->submit(
        std::move(request), deadline,
        [pool = core_->callback_pool(),
         done = std::move(done)](Result<InferResult> result) mutable {
          if (auto callbacks = pool.lock()) {
            callbacks->post([done = std::move(done), result = std::move(result)]() mutable {
              done(std::move(result));
            });
          } else {
            done(std::move(result));  // the client is gone; complete right here
          }
        });
  }

  /// Sends a request; the future holds the result or throws sonic::Error from get(). The
  /// future is completed directly by the network thread (no callback thread involved).
  std::future<InferResult> infer_future(InferRequest request) {
    auto promise = std::make_shared<std::promise<InferResult>>();
    auto future = promise->get_future();
    Deadline deadline = core_->request_deadline(request);
    core_->submit(std::move(request), deadline, [promise](Result<InferResult> result) {
      if (result) {
        promise->set_value(std::move(*result));
      } else {
        promise->set_exception(std::make_exception_ptr(result.error()));
      }
    });
    return future;
  }

  /// Whether the server is live. Throws sonic::Error when it cannot be asked.
  bool server_live() {
    return detail::call_sync<bool>([&](Callback<bool> done) {
      core_->transport().server_live_async(core_->control_deadline(), std::move(done));
    });
  }
  /// Whether the server is ready for inference.
  bool server_ready() {
    return detail::call_sync<bool>([&](Callback<bool> done) {
      core_->transport().server_ready_async(core_->control_deadline(), std::move(done));
    });
  }
  /// Whether a model is loaded and ready (empty version: the server's choice).
  bool model_ready(const std::string& model, const std::string& version = {}) {
    return detail::call_sync<bool>([&](Callback<bool> done) {
      core_->transport().model_ready_async(model, version, core_->control_deadline(),
                                           std::move(done));
    });
  }
  /// The server's name, version and protocol extensions.
  ServerMetadata server_metadata() {
    return detail::call_sync<ServerMetadata>([&](Callback<ServerMetadata> done) {
      core_->transport().server_metadata_async(core_->control_deadline(), std::move(done));
    });
  }
  /// A model's inputs and outputs (fetched now, not from the validation cache).
  ModelMetadata model_metadata(const std::string& model, const std::string& version = {}) {
    return detail::call_sync<ModelMetadata>([&](Callback<ModelMetadata> done) {
      core_->transport().model_metadata_async(model, version, core_->control_deadline(),
                                              std::move(done));
    });
  }
  /// A model's configuration as JSON (Triton's ModelConfig message in protobuf's JSON mapping).
  std::string model_config(const std::string& model, const std::string& version = {}) {
    return detail::call_sync<std::string>([&](Callback<std::string> done) {
      core_->transport().model_config_async(model, version, core_->control_deadline(),
                                            std::move(done));
    });
  }
  /// Statistics of one model, or of all models when `model` is empty.
  std::vector<ModelStatistics> model_statistics(const std::string& model = {},
                                                const std::string& version = {}) {
    return detail::call_sync<std::vector<ModelStatistics>>(
        [&](Callback<std::vector<ModelStatistics>> done) {
          core_->transport().model_statistics_async(model, version, core_->control_deadline(),
                                                    std::move(done));
        });
  }

  const ClientOptions& options() const noexcept { return core_->options(); }

 private:
  static ClientOptions with_url(const std::string& url, ClientOptions options) {
    options.endpoints.insert(options.endpoints.begin(), url);
    return options;
  }

  std::shared_ptr<detail::ClientCore> core_;
};

}  // namespace sonic
