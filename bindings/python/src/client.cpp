// sonic Python bindings — sonic.Client and sonic.Stream over the C++ client.
#include "client.hpp"

#include <optional>
#include <utility>

#include "completions.hpp"
#include "loop_inbox.hpp"
#include "options.hpp"

namespace sonic::python {

namespace {

/// Requests with at least this many input bytes are handed over without the GIL.
constexpr std::size_t kReleaseGilBytes = 64 << 10;

std::size_t input_bytes(const InferRequest& request) {
  std::size_t total = 0;
  for (const auto& input : request.inputs()) total += input.tensor.byte_size();
  return total;
}

std::vector<std::string> urls_of(py::handle urls) {
  if (py::isinstance<py::str>(urls)) return {urls.cast<std::string>()};
  std::vector<std::string> all;
  for (py::handle url : urls) all.push_back(url.cast<std::string>());
  if (all.empty()) throw Error(StatusCode::InvalidArgument, "Client needs at least one URL");
  return all;
}

py::object& future_type() {
  static py::object& type = package_attribute("sonic._types", "InferFuture");
  return type;
}

py::object& stream_response_type() {
  static py::object& type = package_attribute("sonic._types", "StreamResponse");
  return type;
}

/// What an infer_async or ainfer call holds until its callback ran: the future to complete
/// (a concurrent.futures one, or an asyncio one) and the arrays its inputs borrow.
struct PendingCall {
  py::object future;
  bool asyncio = false;
  KeepAlive keep_alive;

  ~PendingCall() {
    if (!future && keep_alive.empty()) return;
    if (!Py_IsInitialized()) {  // too late to free anything: leave it to the process's end
      future.release();
      for (auto& kept : keep_alive) kept.release();
      return;
    }
    Gil gil;
    future = py::object();
    keep_alive.clear();
  }
};

/// The InferResult of `outcome`, or the sonic.Error it is (the other one None).
std::pair<py::object, py::object> result_or_error(const Result<InferResult>& outcome) {
  if (!outcome) return {py::none(), error_object(outcome.error())};
  try {
    return {result_object(*outcome), py::none()};
  } catch (const Error& unreadable) {
    return {py::none(), error_object(unreadable)};
  }
}

/// Completes the future of an infer_async call (on the completion thread) or of an ainfer
/// call (in its event loop's thread), with the GIL held.
void complete(PendingCall& call, const Result<InferResult>& outcome) {
  py::object future = std::move(call.future);
  call.keep_alive.clear();  // sonic no longer reads the inputs
  try {
    // A future cancelled first is left alone: an asyncio one whose task was cancelled, or a
    // concurrent.futures one (the executor protocol's answer is false then).
    bool cancelled = call.asyncio ? future.attr("done")().cast<bool>()
                                  : !future.attr("set_running_or_notify_cancel")().cast<bool>();
    if (cancelled) return;
    auto [result, error] = result_or_error(outcome);
    if (error.is_none()) {
      future.attr("set_result")(std::move(result));
    } else {
      future.attr("set_exception")(std::move(error));
    }
  } catch (py::error_already_set& failure) {
    failure.discard_as_unraisable(call.asyncio ? "sonic.Client.ainfer"
                                               : "sonic.Client.infer_async");
  }
}

py::object& get_running_loop() {
  static py::object& function = package_attribute("asyncio", "get_running_loop");
  return function;
}

}  // namespace

// ---- PyClient ----

PyClient::PyClient(py::handle urls, const py::kwargs& options) {
  ClientOptions config = client_options(urls_of(urls), options);
  py::gil_scoped_release nogil;  // a fallback repository or DNS may take a while
  client_ = std::make_unique<Client>(std::move(config));
}

PyClient::~PyClient() { close(); }

void PyClient::close() {
  if (!client_) return;
  // Closing waits for callbacks, which take the GIL: let go of it meanwhile.
  std::unique_ptr<Client> closing = std::move(client_);
  py::gil_scoped_release nogil;
  closing.reset();
}

Client& PyClient::client() {
  if (!client_) throw Error(StatusCode::FailedPrecondition, "the client is closed");
  return *client_;
}

template <typename Send>
py::object PyClient::infer_blocking(const RequestArguments& arguments, Send send) {
  KeepAlive keep_alive;  // the request borrows the arrays until the call returns
  InferRequest request = build_request(arguments, keep_alive);
  Client& target = client();
  InferResult result;
  {
    py::gil_scoped_release nogil;
    result = send(target, std::move(request));
  }
  return result_object(result);
}

py::object PyClient::infer(const RequestArguments& arguments) {
  return infer_blocking(arguments, [](Client& target, InferRequest request) {
    return target.infer(std::move(request));
  });
}

py::object PyClient::infer_chunked(const RequestArguments& arguments, const ChunkOptions& chunks) {
  return infer_blocking(arguments, [&chunks](Client& target, InferRequest request) {
    return target.infer_chunked(std::move(request), chunks);
  });
}

py::object PyClient::infer_async(const RequestArguments& arguments) {
  py::object future = future_type()();
  RequestHandle handle = send_async(arguments, future, nullptr);
  future.attr("_handle") = py::cast(std::move(handle));
  return future;
}

py::tuple PyClient::ainfer_start(const RequestArguments& arguments) {
  py::object loop = get_running_loop()();
  py::object future = loop.attr("create_future")();
  RequestHandle handle = send_async(arguments, future, LoopInbox::of(loop));
  return py::make_tuple(std::move(future), py::cast(std::move(handle)));
}

RequestHandle PyClient::send_async(const RequestArguments& arguments, py::object future,
                                   std::shared_ptr<LoopInbox> inbox) {
  auto call = std::make_shared<PendingCall>();
  InferRequest request = build_request(arguments, call->keep_alive);
  Client& target = client();
  call->future = std::move(future);
  call->asyncio = inbox != nullptr;
  RequestHandle handle;
  {
    // Handing a small request over takes a few microseconds: letting go of the GIL for it
    // would only pass the GIL back and forth with the completion thread. A large one may be
    // copied (into shared memory, say): other Python threads run meanwhile.
    std::optional<py::gil_scoped_release> nogil;
    if (input_bytes(request) >= kReleaseGilBytes) nogil.emplace();
    // On the network thread that read the answer: handed on at once, never waiting for the
    // GIL, to the event loop's inbox or to the completion thread.
    handle = target.infer_async(
        std::move(request), [call, inbox = std::move(inbox)](Result<InferResult> outcome) {
          auto job = [call, outcome = std::move(outcome)] { complete(*call, outcome); };
          if (inbox) {
            inbox->post(std::move(job));
          } else {
            run_with_gil(std::move(job));
          }
        });
  }
  return handle;
}

// ---- PyStream ----

PyStream::PyStream(Client& client, py::object callback, py::handle timeout) {
  auto target = std::make_shared<Held>(std::move(callback));
  StreamOptions options;
  options.timeout = microseconds_from_seconds(timeout, "timeout");
  StreamCallback deliver = [target](StreamResponse response) {
    if (!Py_IsInitialized()) return;
    Gil gil;
    try {
      py::object result = py::none();
      py::object error = py::none();
      if (response.result) {
        try {
          result = result_object(*response.result);
        } catch (const Error& unreadable) {
          error = error_object(unreadable);
        }
      } else {
        error = error_object(response.result.error());
      }
      target->get()(stream_response_type()(response.request_id, result, error, response.final));
    } catch (py::error_already_set& failure) {
      failure.discard_as_unraisable("sonic.Stream callback");
    }
  };
  py::gil_scoped_release nogil;
  stream_ = std::make_unique<InferStream>(client.open_stream(std::move(deliver), options));
}

PyStream::~PyStream() {
  py::gil_scoped_release nogil;
  stream_.reset();
}

InferStream& PyStream::stream() {
  if (!stream_) throw Error(StatusCode::FailedPrecondition, "the stream is closed");
  return *stream_;
}

void PyStream::send(const RequestArguments& arguments) {
  KeepAlive keep_alive;
  InferRequest request = build_request(arguments, keep_alive);
  InferStream& target = stream();
  Result<void> sent;
  {
    py::gil_scoped_release nogil;
    sent = target.send(std::move(request));
  }
  sent.value();
}

void PyStream::close() {
  InferStream& target = stream();
  py::gil_scoped_release nogil;
  target.close();
}

void PyStream::cancel() {
  InferStream& target = stream();
  py::gil_scoped_release nogil;
  target.cancel();
}

void PyStream::wait() {
  InferStream& target = stream();
  Result<void> outcome;
  {
    py::gil_scoped_release nogil;
    outcome = target.wait();
  }
  outcome.value();
}

}  // namespace sonic::python
