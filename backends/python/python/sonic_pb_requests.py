"""Requests and responses of triton_python_backend_utils (which imports them): InferenceRequest
(the requests execute() is given, and the BLS requests a model makes), InferenceResponse,
InferenceResponseSender, PreferredMemory and InferenceTrace, taking the arguments Triton's
pybind11 definitions take (python_backend src/pb_stub.cc): a std::string argument takes str or
bytes, a list argument any sequence, and none of them None."""

import asyncio
import json
import numbers
import sys

# Triton's PreferredMemory types (pb_stub.cc: py::enum_ "MemoryType", exported to the module).
TRITONSERVER_MEMORY_GPU = 0
TRITONSERVER_MEMORY_CPU = 1


def _pb():
    return sys.modules["triton_python_backend_utils"]


def _string(owner, argument, value):
    """A std::string argument as pybind11 takes it: str, or bytes (as UTF-8)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value
    raise TypeError("%s: %s must be a str or bytes, not %s"
                    % (owner, argument, type(value).__name__))


def _integer(owner, argument, value, low, high):
    """An integer argument as pybind11 takes it: an int (or what has __index__, such as numpy's
    integers) in the C type's range; not a float, not None."""
    if not isinstance(value, numbers.Integral):
        raise TypeError("%s: %s must be an int, not %s" % (owner, argument,
                                                           type(value).__name__))
    if not low <= int(value) <= high:
        raise TypeError("%s: %s %d is out of range" % (owner, argument, int(value)))
    return int(value)


def _parameters(value):
    """Triton's PyParametersToJSON: a dict of str keys and bool, int or str values (or None), as
    its JSON text."""
    if value is None:
        return "{}"
    if not isinstance(value, dict):
        raise _pb().TritonModelException("Expect dict, got %s" % type(value))
    for key, item in value.items():
        if not isinstance(key, str):
            raise _pb().TritonModelException(
                "Expect parameters keys to have type str, found type %s" % type(key))
        if not isinstance(item, (bool, int, str)):
            raise _pb().TritonModelException(
                "Expect parameters values to have type bool/int/str, found type %s" % type(item))
    return json.dumps(value)


class PreferredMemory:
    """Where a BLS call's outputs should be (Triton's PreferredMemory). Every tensor here is in
    CPU memory, which is where they are."""

    def __init__(self, preferred_memory_type, preferred_device_id=0):
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


class InferenceTrace:
    """A request's trace (Triton's InferenceTrace); sonic traces no BLS call: no context."""

    def get_context(self):
        return None


class InferenceResponse:
    """One response: its output tensors, or an error; parameters, a dict of bool, int or str."""

    def __init__(self, output_tensors=None, error=None, parameters=None):
        if output_tensors is None:
            output_tensors = []
        if not isinstance(output_tensors, (list, tuple)):
            raise _pb().TritonModelException('"output_tensors" must be a list.')
        for tensor in output_tensors:
            if not isinstance(tensor, _pb().Tensor):
                raise TypeError("InferenceResponse: output_tensors must hold pb_utils.Tensor, "
                                "not %s" % type(tensor).__name__)
        if error is not None and not isinstance(error, _pb().TritonError):
            raise TypeError("InferenceResponse: error must be a pb_utils.TritonError, not %s"
                            % type(error).__name__)
        self._outputs = list(output_tensors)
        self._error = error
        self._parameters = _parameters(parameters)

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        """The response's parameters as a JSON object (a string), as Triton gives them."""
        return self._parameters


class ResponseIterator:
    """A decoupled BLS call's responses (exec(decoupled=True)), each as it comes. As Triton's:
    once every response came, iterating again gives them again from the first; cancel() stops
    reading (the responses still to come are dropped; the called model is not told, and runs to
    its end)."""

    def __init__(self, responses):
        self._source = iter(responses)
        self._seen = []
        self._at = 0
        self._finished = False

    def __iter__(self):
        if self._finished and self._at >= len(self._seen):
            self._at = 0
        return self

    def __next__(self):
        if self._at < len(self._seen):
            self._at += 1
            return self._seen[self._at - 1]
        if self._finished:
            raise StopIteration
        try:
            response = next(self._source)
        except StopIteration:
            self._finished = True
            raise
        self._seen.append(response)
        self._at = len(self._seen)
        return response

    def cancel(self):
        if not self._finished:
            close = getattr(self._source, "close", None)
            if close is not None:
                close()
            self._finished = True


class InferenceResponseSender:
    """How a decoupled model answers a request: any number of send(response), then one with
    flags=TRITONSERVER_RESPONSE_COMPLETE_FINAL (its response may be None). Usable from any
    thread, also after execute() returned."""

    def __init__(self, channel, execute, index):
        self._channel = channel
        self._execute = execute
        self._index = index
        self._closed = False

    def send(self, response=None, flags=0):
        final = _pb().TRITONSERVER_RESPONSE_COMPLETE_FINAL
        flags = _integer("send", "flags", flags, 0, 2**32 - 1)
        if flags & ~final:
            # Triton's ResponseSender: "Unable to send response. Unsupported flag provided."
            raise _pb().TritonModelException(
                "Unable to send response. Unsupported flag provided.")
        if self._closed:
            raise _pb().TritonModelException(
                "Unable to send response. Response sender has been closed.")
        if response is None and not flags & final:
            raise _pb().TritonModelException(
                "Inference Response object must be provided when the response flags is set to "
                "zero.")
        if response is not None and not isinstance(response, InferenceResponse):
            raise TypeError("send: response must be a pb_utils.InferenceResponse, not %s"
                            % type(response).__name__)
        if flags & final:
            self._closed = True
        self._channel.send_response(self._execute, self._index, response, flags)

    def is_cancelled(self):
        """Whether the request's caller went away (cancelled its call, closed its connection, or
        passed its deadline): a model may stop sending then, as Triton's may."""
        return self._channel.is_cancelled(self._execute)


class InferenceRequest:
    """A request: one the model is given in execute(), or one it makes to run another model of
    the server (BLS) with exec() or, in an `async def execute`, `await async_exec()`."""

    def __init__(self, request_id="", correlation_id=0, inputs=(), requested_output_names=(),
                 model_name="", model_version=-1, flags=0, timeout=0, preferred_memory=None,
                 trace=None, parameters=None):
        owner = "InferenceRequest"
        self._request_id = _string(owner, "request_id", request_id)
        if isinstance(correlation_id, str):
            self._correlation_id = correlation_id
        elif isinstance(correlation_id, numbers.Integral) and not isinstance(correlation_id,
                                                                             bool):
            self._correlation_id = _integer(owner, "correlation_id", correlation_id, 0,
                                            2**64 - 1)
        else:
            raise _pb().TritonModelException("Correlation ID must be integer or string")
        if inputs is None or isinstance(inputs, (str, bytes)):
            raise TypeError("InferenceRequest: inputs must be a list of pb_utils.Tensor")
        self._inputs = list(inputs)
        for tensor in self._inputs:
            if not isinstance(tensor, _pb().Tensor):
                raise TypeError("InferenceRequest: inputs must hold pb_utils.Tensor, not %s"
                                % type(tensor).__name__)
        if requested_output_names is None or isinstance(requested_output_names, (str, bytes)):
            raise TypeError("InferenceRequest: requested_output_names must be a list of str")
        self._requested_output_names = [_string(owner, "requested_output_names", name)
                                        for name in requested_output_names]
        self._model_name = _string(owner, "model_name", model_name)
        self._model_version = _integer(owner, "model_version", model_version, -2**63, 2**63 - 1)
        self._flags = _integer(owner, "flags", flags, 0, 2**32 - 1)
        self._timeout = _integer(owner, "timeout", timeout, 0, 2**64 - 1)
        self._preferred_memory = preferred_memory or PreferredMemory(TRITONSERVER_MEMORY_CPU)
        self._trace = trace or InferenceTrace()
        self._parameters = _parameters(parameters)
        self._release_flags = _pb().TRITONSERVER_REQUEST_RELEASE_ALL
        self._sender = None
        self._execute = None  # set on the requests execute() is given

    def inputs(self):
        return self._inputs

    def request_id(self):
        return self._request_id

    def correlation_id(self):
        return self._correlation_id

    def requested_output_names(self):
        return self._requested_output_names

    def model_name(self):
        return self._model_name

    def model_version(self):
        return self._model_version

    def flags(self):
        return self._flags

    def set_flags(self, flags):
        self._flags = _integer("set_flags", "flags", flags, 0, 2**32 - 1)

    def timeout(self):
        return self._timeout

    def trace(self):
        return self._trace

    def parameters(self):
        """The request's parameters as a JSON object (a string), as Triton gives them."""
        return self._parameters

    def set_release_flags(self, flags):
        """Triton's request rescheduling (TRITONSERVER_REQUEST_RELEASE_RESCHEDULE), for
        sequence-batched decoupled models; sonic accepts the flag and releases every request
        (TRITONSERVER_REQUEST_RELEASE_ALL)."""
        self._release_flags = _integer("set_release_flags", "flags", flags, 0, 2**32 - 1)

    def is_cancelled(self):
        """Whether the caller of this request went away: it cancelled its call, closed its
        connection, or its deadline passed (Triton's request cancellation). A model that runs
        long may ask, and stop. Always False for a request the model made itself (BLS)."""
        channel = _pb()._channel
        if channel is None or self._execute is None:
            return False
        return channel.is_cancelled(self._execute)

    def get_response_sender(self):
        if self._sender is None:
            raise _pb().TritonModelException(
                "get_response_sender() is for the requests execute() is given")
        return self._sender

    def exec(self, decoupled=False):  # noqa: A003 (Triton's name)
        """Runs this request on the server's model `model_name` (BLS) and waits for it: an
        InferenceResponse, or with decoupled=True an iterator that yields each response of a
        decoupled model's stream as it comes. Errors come back in the response (has_error())."""
        channel = _pb()._channel
        if channel is None:
            raise _pb().TritonModelException("exec() needs the stub's connection to the server")
        if not isinstance(decoupled, bool):
            raise TypeError("exec: decoupled must be a bool")
        return channel.bls(self, decoupled)

    def async_exec(self, decoupled=False):
        """exec() for an `async def execute`: an awaitable of its answer. As Triton's, it runs
        exec() in the running loop's default executor (a thread), so that several calls are in
        flight at once (asyncio.gather)."""
        loop = asyncio.get_running_loop()
        return loop.run_in_executor(None, self.exec, decoupled)
