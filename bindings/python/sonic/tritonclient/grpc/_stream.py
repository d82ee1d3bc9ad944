"""The stream of tritonclient.grpc's start_stream() / async_stream_infer() / stop_stream(),
over a sonic stream (Triton's ModelStreamInfer)."""

import threading

from ... import _errors
from ..utils import InferenceServerException, raise_error
from ._infer import InferResult
from ._utils import get_cancelled_error, get_error_grpc


class InferStream:
    """One stream: responses go to callback(result=..., error=...) in the order the server sent
    them, on sonic's callback thread; how the stream ended, if not well, goes to the callback
    last, from a thread of its own."""

    def __init__(self, client, callback, stream_timeout, verbose):
        self._client = client  # kept: the stream's client lives as long as the stream
        self._callback = callback
        self._verbose = verbose
        self._active = True
        self._cancelled = False
        self._responding = None  # the thread running the callback with a response, if one is
        try:
            self._stream = client.open_stream(self._on_response, timeout=stream_timeout)
        except _errors.Error as failure:
            raise get_error_grpc(failure) from None
        self._watcher = threading.Thread(target=self._watch, name="sonic-tritonclient-stream",
                                         daemon=True)
        self._watcher.start()
        if verbose:
            print("stream started...")

    def _on_response(self, response):
        if self._verbose:
            print(response)
        self._responding = threading.current_thread()
        try:
            if response.error is not None:
                # tritonclient (grpc/_infer_stream.py) reports a request that failed on a
                # stream that goes on as InferenceServerException(msg=error_message): no status.
                self._callback(result=None,
                               error=InferenceServerException(msg=response.error.message))
            else:
                self._callback(result=InferResult(response.result), error=None)
        finally:
            self._responding = None

    def _watch(self):
        # How the stream ended. tritonclient hands a stream's failure to the callback, as an
        # error with the gRPC status, and refuses further requests on it; a stream it cancelled
        # reports CANCELLED ("Locally cancelled by application!").
        try:
            self._stream.wait()
        except _errors.Error as failure:
            self._active = False
            if self._cancelled:
                error = get_cancelled_error()
            else:
                error = get_error_grpc(failure)
            self._callback(result=None, error=error)
        else:
            self._active = False

    def send(self, **request):
        """Sends a request on the stream (sonic.Stream.send's arguments)."""
        if self._active:
            try:
                self._stream.send(**request)
                return
            except _errors.FailedPrecondition:
                pass  # the stream ended meanwhile: as below
            except _errors.Error as failure:
                raise get_error_grpc(failure) from None
        raise_error("The stream is no longer in valid state, the error detail is reported "
                    "through provided callback. A new stream should be started after stopping "
                    "the current stream.")

    def close(self, cancel_requests=False):
        """Ends the stream: at once with cancel_requests (requests not answered are dropped),
        else once every request sent was answered. Returns when its callback no longer runs,
        except when called from that callback."""
        if cancel_requests:
            self._cancelled = True
            self._stream.cancel()
        else:
            try:
                self._stream.close()
            except _errors.FailedPrecondition:
                pass  # it ended already
        # From inside the callback the stream cannot end before the callback returns.
        if threading.current_thread() not in (self._watcher, self._responding):
            self._watcher.join()
        if self._verbose:
            print("stream stopped...")
