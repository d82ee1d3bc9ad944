// sonic — Client and RequestHandle: the public facade over ClientCore, client-side batching and
// chunked calls.
#include "sonic/client.hpp"

#include <thread>
#include <utility>

#include "client/blocking_wait.hpp"
#include "client/chunked_call.hpp"
#include "client/client_batcher.hpp"
#include "client/client_core.hpp"

namespace sonic {
namespace {

/// Called before a blocking call of a client. Blocking inside an inline callback would stall
/// (or deadlock) the thread that completes requests: refuse with an error that says what to do
/// instead. Inside a callback on a network thread, that thread hands its connections on first,
/// so that the reply this call waits for still gets read.
void prepare_to_block() {
  if (detail::CallbackContext::in_inline_callback()) {
    throw Error(StatusCode::FailedPrecondition,
                "a blocking sonic call inside an inline callback would stall the thread that "
                "completes requests (CallbackThread::Inline): use infer_async, or hand the "
                "work to another thread");
  }
  if (auto* host = detail::CallbackHost::current()) host->hand_off_now();
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

/// A read-only control call through ClientCore::control_async, waited for.
template <typename T, typename Start>
T control(detail::ClientCore& core, Start start) {
  return call_sync<T>(
      [&](Callback<T> done) { core.control_async<T>(std::move(start), std::move(done)); });
}

ClientOptions with_url(const std::string& url, ClientOptions options) {
  options.endpoints.insert(options.endpoints.begin(), url);
  return options;
}

// Queued batches first: their requests end with CANCELLED like those in flight.
void close(detail::ClientCore& core, detail::ClientBatching* batching) {
  if (batching) batching->close();
  core.close();
}

}  // namespace

bool RequestHandle::cancel() const {
  auto request = request_.lock();
  return request && request->cancel();
}

Client::Client(const std::string& url, ClientOptions options)
    : Client(with_url(url, std::move(options))) {}

Client::Client(ClientOptions options)
    : core_(std::make_shared<detail::ClientCore>(std::move(options))) {
  if (!core_->options().batching.empty()) {
    batching_ = std::make_shared<detail::ClientBatching>(core_, core_->options());
  }
}

Client::~Client() { release(); }

Client::Client(Client&&) noexcept = default;

Client& Client::operator=(Client&& other) noexcept {
  if (this != &other) {
    release();
    core_ = std::move(other.core_);
    batching_ = std::move(other.batching_);
  }
  return *this;
}

// With drive_blocking_calls, the transport may put the call on this thread's own connection,
// which the wait then runs (blocking_wait.hpp). A request merged with others by client-side
// batching is not this thread's alone, so it waits as a future does.
InferResult Client::infer(InferRequest request) {
  prepare_to_block();
  if (!core_->options().drive_blocking_calls || (batching_ && batching_->find(request))) {
    return infer_future(std::move(request)).get();
  }
  detail::BlockingWait<InferResult> wait;
  start(std::move(request), wait.completion(), detail::Delivery::Direct);
  return std::move(wait.take()).value();
}

RequestHandle Client::infer_async(InferRequest request, Callback<InferResult> done) {
  return start(std::move(request), std::move(done), detail::Delivery::Callback);
}

std::future<InferResult> Client::infer_future(InferRequest request) {
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
      detail::Delivery::Direct);
  return future;
}

RequestHandle Client::infer_chunked_async(InferRequest request, ChunkOptions options,
                                          Callback<InferResult> done) {
  return start_chunked(std::move(request), options, std::move(done), detail::Delivery::Callback);
}

InferResult Client::infer_chunked(InferRequest request, ChunkOptions options) {
  return call_sync<InferResult>([&](Callback<InferResult> done) {
    start_chunked(std::move(request), options, std::move(done), detail::Delivery::Direct);
  });
}

bool Client::server_live() {
  return control<bool>(*core_, [](Transport& transport, Deadline deadline, Callback<bool> done) {
    transport.server_live_async(deadline, std::move(done));
  });
}

bool Client::server_ready() {
  return control<bool>(*core_, [](Transport& transport, Deadline deadline, Callback<bool> done) {
    transport.server_ready_async(deadline, std::move(done));
  });
}

bool Client::model_ready(const std::string& model, const std::string& version) {
  return control<bool>(*core_, [&](Transport& transport, Deadline deadline, Callback<bool> done) {
    transport.model_ready_async(model, version, deadline, std::move(done));
  });
}

ServerMetadata Client::server_metadata() {
  return control<ServerMetadata>(
      *core_, [](Transport& transport, Deadline deadline, Callback<ServerMetadata> done) {
        transport.server_metadata_async(deadline, std::move(done));
      });
}

ModelMetadata Client::model_metadata(const std::string& model, const std::string& version) {
  return control<ModelMetadata>(
      *core_, [&](Transport& transport, Deadline deadline, Callback<ModelMetadata> done) {
        transport.model_metadata_async(model, version, deadline, std::move(done));
      });
}

std::string Client::model_config(const std::string& model, const std::string& version) {
  return control<std::string>(
      *core_, [&](Transport& transport, Deadline deadline, Callback<std::string> done) {
        transport.model_config_async(model, version, deadline, std::move(done));
      });
}

std::vector<ModelStatistics> Client::model_statistics(const std::string& model,
                                                      const std::string& version) {
  return control<std::vector<ModelStatistics>>(
      *core_,
      [&](Transport& transport, Deadline deadline, Callback<std::vector<ModelStatistics>> done) {
        transport.model_statistics_async(model, version, deadline, std::move(done));
      });
}

std::vector<ModelIndex> Client::repository_index(bool ready_only) {
  return control<std::vector<ModelIndex>>(
      *core_, [ready_only](Transport& transport, Deadline deadline,
                           Callback<std::vector<ModelIndex>> done) {
        transport.repository_index_async(ready_only, deadline, std::move(done));
      });
}

void Client::load_model(const std::string& model, const std::string& config_json) {
  call_sync<bool>([&](Callback<bool> done) {
    core_->control_transport()->load_model_async(model, config_json, core_->control_deadline(),
                                                 std::move(done));
  });
}

void Client::unload_model(const std::string& model) {
  call_sync<bool>([&](Callback<bool> done) {
    core_->control_transport()->unload_model_async(model, core_->control_deadline(),
                                                   std::move(done));
  });
}

InferStream Client::open_stream(StreamCallback on_response, StreamOptions options) {
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

std::string Client::call(const std::string& method, const std::string& request) {
  return call_sync<std::string>([&](Callback<std::string> done) {
    core_->control_transport()->call_async(method, request, core_->control_deadline(),
                                           std::move(done));
  });
}

const ClientOptions& Client::options() const noexcept { return core_->options(); }

ClientStats Client::stats() const {
  ClientStats stats = core_->stats();
  if (batching_) batching_->add_counters(stats);
  return stats;
}

RequestHandle Client::start(InferRequest request, Callback<InferResult> done,
                            detail::Delivery delivery) {
  Deadline deadline = core_->request_deadline(request);
  if (auto* model = batching_ ? batching_->find(request) : nullptr) {
    if (auto rows = model->rows_for(request)) {
      auto part = model->add(std::move(request), deadline, std::move(done), delivery, *rows);
      return RequestHandle(std::weak_ptr<detail::Cancellable>(part));
    }
  }
  auto flight = core_->submit(std::move(request), deadline, std::move(done), delivery);
  return RequestHandle(std::weak_ptr<detail::Cancellable>(flight));
}

RequestHandle Client::start_chunked(InferRequest request, ChunkOptions options,
                                    Callback<InferResult> done, detail::Delivery delivery) {
  Deadline deadline = core_->request_deadline(request);
  auto call = std::make_shared<detail::ChunkedCall>(core_, std::move(request), deadline, options,
                                                    std::move(done), delivery);
  call->start();
  return RequestHandle(std::weak_ptr<detail::Cancellable>(call));
}

// Ends every request of this client, on another thread when this one runs one of its
// callbacks (closing waits for them all, this thread's included).
void Client::release() {
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

}  // namespace sonic
