// sonic Python bindings — sonic.Client and sonic.Stream over the C++ client.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "convert.hpp"
#include "loop_inbox.hpp"
#include "sonic/client.hpp"

namespace sonic::python {

namespace py = pybind11;

/// A stream of Client.open_stream: responses go to a Python callable on sonic's callback
/// threads, with the GIL taken for each.
class PyStream {
 public:
  PyStream(Client& client, py::object callback, py::handle timeout);
  /// Cancels the stream unless it ended; waits (without the GIL) until its callback no longer
  /// runs.
  ~PyStream();

  /// Sends a request; inputs are copied, so the arrays are free again when it returns. Raises
  /// sonic.Error as Client.infer would for a request it refuses.
  void send(const RequestArguments& arguments);
  void close();
  void cancel();
  /// Blocks, without the GIL, until the stream ended; raises why unless it ended well.
  void wait();

 private:
  InferStream& stream();

  std::unique_ptr<InferStream> stream_;
};

/// sonic.Client's C++ half. Every blocking call releases the GIL while it waits, and so does
/// sending; async completions take the GIL on sonic's callback threads.
class PyClient {
 public:
  PyClient(py::handle urls, const py::kwargs& options);
  ~PyClient();

  /// Completes requests still in flight with CANCELLED and closes connections; later calls
  /// raise sonic.FailedPrecondition. Idempotent.
  void close();

  py::object infer(const RequestArguments& arguments);
  /// Client::infer_chunked: the request's batch sent as chunks of rows, joined in order.
  py::object infer_chunked(const RequestArguments& arguments, const ChunkOptions& chunks);
  /// A concurrent.futures.Future (sonic._types.InferFuture, whose cancel() cancels the
  /// request on the wire) completed on a callback thread with the InferResult or the
  /// sonic.Error.
  py::object infer_async(const RequestArguments& arguments);
  /// For Client.ainfer, in a coroutine of the running event loop: (an asyncio future of
  /// that loop, the RequestHandle). The loop completes the future in its own thread; the
  /// answers of one batch of completions reach it with one wake-up (loop_inbox.hpp).
  py::tuple ainfer_start(const RequestArguments& arguments);

  Client& client();

 private:
  // Builds the request, hands it to `send(client, request)` without the GIL, which waits for
  // its result, and returns that as a sonic.InferResult.
  template <typename Send>
  py::object infer_blocking(const RequestArguments& arguments, Send send);
  // Sends the request; `future` is completed with the outcome by a job posted to `inbox`,
  // its event loop's (an asyncio future), or else to the completion thread.
  RequestHandle send_async(const RequestArguments& arguments, py::object future,
                           std::shared_ptr<LoopInbox> inbox);

  std::unique_ptr<Client> client_;
};

}  // namespace sonic::python
