"""The stub's connection to the server (sonic_python_stub.py runs the model): frames over the
socket (backends/python/src/stub_frame.hpp), the threads that wait on it, and the tensors,
responses and errors in the server's words."""

import collections
import json
import socket
import struct
import threading

import numpy as np
import triton_python_backend_utils as pb_utils


class Channel:
    """Frames over the socket. No thread is set aside to read it: whichever thread waits for a
    message reads the socket while no other does, keeps what is its own and hands the rest on
    (the main loop's messages to next(), a BLS call's answers to the thread that made the call,
    by the call's number). The main loop thus reads each execute itself, with no thread switch
    on the way. Writes may come from any thread.

    A BLS call is answered only while an execute is under way (the server reads the socket only
    then): from the execute's message until its responses were written, or, for a decoupled
    model, until execute() returned and every sender sent its final flag. A call outside that is
    refused here, at once. A metric call (pb_utils.Metric) is answered then too, and during
    auto_complete_config() and initialize() (`loading`), when the server reads as well."""

    MAIN = "main"  # the main loop's inbox; a BLS call's is its number

    def __init__(self, fd):
        self._socket = socket.socket(fileno=fd)
        self._write_lock = threading.Lock()
        # The execute under way. Held while writing what begins or ends a conversation with the
        # server, so that no BLS call is written after the message that ends the execute.
        self._state = threading.Lock()
        # Guards the inboxes and who reads. Never held while reading or writing the socket, and
        # taken after _state where both are: the reading thread must never wait for a writer.
        self._arrivals = threading.Condition()
        self._inboxes = {Channel.MAIN: collections.deque()}  # (header, buffers) each
        self._reading = False  # a thread is reading the socket
        self._closed = False
        self._next_call = 0
        self._open_senders = 0
        self._executed = False
        self.decoupled = False
        self.execute = None  # the number of the execute under way; None between them
        self.loading = False  # in auto_complete_config() or initialize()
        self.released = collections.deque()  # metric handles deleted since the last metric call

    def _read_exactly(self, size):
        buffer = bytearray(size)
        view = memoryview(buffer)
        got = 0
        while got < size:
            count = self._socket.recv_into(view[got:], size - got)
            if count == 0:
                raise EOFError("the server closed the connection")
            got += count
        return buffer

    def read(self):
        header_size, count = struct.unpack("<II", self._read_exactly(8))
        sizes = struct.unpack("<%dQ" % count, self._read_exactly(8 * count)) if count else ()
        header = json.loads(bytes(self._read_exactly(header_size)))
        # Each buffer in an allocation of its own, which numpy arrays of it then share.
        return header, [self._read_exactly(size) for size in sizes]

    def _take(self, inbox):
        """The next message for `inbox`; EOFError once the socket closed and it is empty."""
        with self._arrivals:
            while True:
                if self._inboxes[inbox]:
                    return self._inboxes[inbox].popleft()
                if self._closed:
                    raise EOFError("the server closed the connection")
                if not self._reading:
                    self._reading = True
                    break
                self._arrivals.wait()
        while True:
            try:
                message = self.read()
            except (EOFError, OSError, ValueError):
                message = None
            except BaseException:  # KeyboardInterrupt, MemoryError: a waiting thread reads on
                with self._arrivals:
                    self._reading = False
                    self._arrivals.notify_all()
                raise
            with self._arrivals:
                if message is None:
                    self._closed = True
                    self._reading = False
                    self._arrivals.notify_all()
                    raise EOFError("the server closed the connection")
                header = message[0]
                owner = Channel.MAIN
                if header.get("type") in ("bls_response", "bls_end", "cancelled",
                                          "metric_answer", "ready"):
                    owner = header.get("call")
                    if owner not in self._inboxes:
                        continue  # the rest of a stream its caller stopped reading: dropped
                if owner == inbox:
                    self._reading = False  # a waiting thread reads on
                    self._arrivals.notify_all()
                    return message
                self._inboxes[owner].append(message)
                self._arrivals.notify_all()

    def next(self):
        """The server's next message for the main loop; EOFError once the socket closed."""
        return self._take(Channel.MAIN)

    def write(self, header, buffers=()):
        views = [memoryview(b).cast("B") for b in buffers]
        encoded = json.dumps(header).encode()
        prefix = struct.pack("<II", len(encoded), len(views))
        if views:
            prefix += struct.pack("<%dQ" % len(views), *(v.nbytes for v in views))
        pieces = [prefix, encoded] + [v for v in views if v.nbytes]
        with self._write_lock:
            while pieces:
                sent = self._socket.sendmsg(pieces[:1024])
                while pieces and sent >= len(pieces[0]):
                    sent -= len(pieces[0])
                    pieces.pop(0)
                if sent:
                    pieces[0] = memoryview(pieces[0])[sent:]

    def end_load(self, header):
        """Writes a load step's answer (config, initialized, error): metric calls end with it."""
        with self._state:
            self.write(header)
            self.loading = False

    def metric(self, header):
        """Asks the server to run a metric operation (sonic_pb_metrics.py); its answer (a dict),
        or TritonModelException with the server's reason."""
        with self._state:
            if self.execute is None and not self.loading:
                raise pb_utils.TritonModelException(
                    "a metric is reachable only in initialize(), auto_complete_config() and while "
                    "a request is under way (the server reads the model's messages then)")
            call = self._open_call()
            released = []  # a few thousand a message, within the server's header limit
            while self.released and len(released) < 4096:
                released.append(self.released.popleft())
            self.write(dict(header, type="metric", call=call, release=released))
        try:
            answer, _ = self._take(call)
        finally:
            self._forget(call)
        if answer.get("error"):
            raise pb_utils.TritonModelException(answer["error"].get("message", "metric failed"))
        return answer

    def _open_call(self):
        """A new call's number and inbox; EOFError once the socket closed."""
        with self._arrivals:
            if self._closed:
                raise EOFError("the server closed the connection")
            call = self._next_call
            self._next_call += 1
            self._inboxes[call] = collections.deque()
            return call

    def begin_execute(self, execute, senders):
        with self._state:
            self.execute = execute
            self._open_senders = senders
            self._executed = False

    def end_execute(self, header, buffers=()):
        """Writes the execute's last message of the main loop's (responses, error, executed)."""
        with self._state:
            self.write(header, buffers)
            if self.decoupled:
                self._executed = True
                if self._open_senders == 0:
                    self.execute = None
            else:
                self.execute = None

    def send_response(self, execute, index, response, flags):
        buffers = []
        encoded = encode_response(response, buffers) if response is not None else None
        with self._state:
            self.write({"type": "response", "execute": execute, "index": index,
                        "response": encoded, "flags": flags}, buffers)
            if flags & pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL and execute == self.execute:
                self._open_senders -= 1
                if self._open_senders == 0 and self._executed:
                    self.execute = None

    def bls(self, request, decoupled):
        buffers = []
        header = {
            "type": "bls",
            "decoupled": bool(decoupled),
            "model_name": request.model_name(),
            "model_version": "" if request.model_version() in (-1, None, "")
            else str(request.model_version()),
            "request_id": request.request_id(),
            "parameters": request.parameters(),
            "correlation_id": request.correlation_id(),
            "flags": request.flags(),
            "timeout": request.timeout(),
            "inputs": [encode_tensor(t, buffers) for t in request.inputs()],
            "requested_outputs": list(request.requested_output_names()),
        }
        with self._state:
            if self.execute is None:
                refused = pb_utils.TritonError(
                    "a BLS call is answered only while a request is under way: this one came "
                    "between requests (after execute() returned, or after a decoupled model's "
                    "final responses)", pb_utils.TritonError.UNAVAILABLE)
                response = pb_utils.InferenceResponse(error=refused)
                return pb_utils.ResponseIterator([response]) if decoupled else response
            call = self._open_call()
            header["execute"] = self.execute
            header["call"] = call
            self.write(header, buffers)
        if decoupled:
            return pb_utils.ResponseIterator(self._stream(call))
        try:
            answer, answer_buffers = self._take(call)
            if answer["type"] != "bls_response":
                raise pb_utils.TritonModelException(
                    "unexpected message from the server: %r" % answer["type"])
            return decode_response(answer["response"], answer_buffers)
        finally:
            self._forget(call)

    def is_cancelled(self, execute):
        """Whether the caller of execute `execute`'s request went away (cancelled, or past its
        deadline): asked of the server, which knows. An execute that is over has nobody
        waiting for it."""
        with self._state:
            if self.execute is None or self.execute != execute:
                return True
            with self._arrivals:
                if self._closed:
                    return True
                call = self._next_call
                self._next_call += 1
                self._inboxes[call] = collections.deque()
            self.write({"type": "is_cancelled", "execute": execute, "call": call})
        try:
            answer, _ = self._take(call)
            return bool(answer.get("cancelled", True))
        except EOFError:
            return True
        finally:
            self._forget(call)

    def model_ready(self, model_name, model_version):
        """Whether the server's model is loaded and in service (pb_utils.is_model_ready): asked
        of the server, while a request is under way, like a BLS call."""
        with self._state:
            if self.execute is None:
                raise pb_utils.TritonModelException(
                    "is_model_ready() is answered only while a request is under way")
            call = self._open_call()
            self.write({"type": "model_ready", "model_name": model_name,
                        "model_version": model_version, "call": call})
        try:
            answer, _ = self._take(call)
            return bool(answer.get("ready", False))
        finally:
            self._forget(call)

    def _stream(self, call):
        """A decoupled call's responses, each yielded as it comes (Triton's ResponseIterator)."""
        try:
            while True:
                answer, answer_buffers = self._take(call)
                if answer["type"] == "bls_response":
                    yield decode_response(answer["response"], answer_buffers)
                elif answer["type"] == "bls_end":
                    if answer.get("error"):
                        yield pb_utils.InferenceResponse(error=decode_error(answer["error"]))
                    return
                else:
                    raise pb_utils.TritonModelException(
                        "unexpected message from the server: %r" % answer["type"])
        finally:
            self._forget(call)

    def _forget(self, call):
        with self._arrivals:
            del self._inboxes[call]


def encode_tensor(tensor, buffers):
    array = tensor.as_numpy()
    wire = pb_utils.numpy_to_wire(array.dtype)
    if wire is None:
        raise pb_utils.TritonModelException(
            "output '%s' has dtype %s, which has no Triton data type" % (tensor.name(),
                                                                          array.dtype))
    if wire == "BYTES":
        data = pb_utils.serialize_byte_tensor(array)
        data = b"" if data is None else data
    else:
        # The array's own buffer when it is contiguous: sent without a copy.
        data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    buffers.append(data)
    return {"name": tensor.name(), "datatype": wire, "shape": list(array.shape),
            "buffer": len(buffers) - 1}


def decode_tensor(described, buffers):
    data = buffers[described["buffer"]]
    shape = described["shape"]
    if described["datatype"] == "BYTES":
        array = pb_utils.deserialize_bytes_tensor(data).reshape(shape)
    else:
        numpy_type = pb_utils.wire_to_numpy(described["datatype"])
        if numpy_type is None:
            raise pb_utils.TritonModelException(
                "tensor '%s' is %s, which numpy has no type for" % (described["name"],
                                                                     described["datatype"]))
        # Over the received bytes, not a copy of them.
        array = np.frombuffer(data, dtype=numpy_type).reshape(shape)
    return pb_utils.Tensor(described["name"], array)


def _error_codes():
    """TritonError's codes and the wire's status names."""
    error = pb_utils.TritonError
    return {error.UNKNOWN: "UNKNOWN", error.INTERNAL: "INTERNAL", error.NOT_FOUND: "NOT_FOUND",
            error.INVALID_ARG: "INVALID_ARGUMENT", error.UNAVAILABLE: "UNAVAILABLE",
            error.UNSUPPORTED: "UNIMPLEMENTED", error.ALREADY_EXISTS: "ALREADY_EXISTS",
            error.CANCELLED: "CANCELLED"}


_ERROR_CODES = _error_codes()


def encode_error(error):
    if error is None:
        return None
    code = error.code() if hasattr(error, "code") else pb_utils.TritonError.INTERNAL
    return {"message": str(error.message() if hasattr(error, "message") else error),
            "code": _ERROR_CODES.get(code, "INTERNAL")}


def decode_error(error):
    codes = {name: code for code, name in _ERROR_CODES.items()}
    return pb_utils.TritonError(error["message"], codes.get(error["code"],
                                                            pb_utils.TritonError.UNKNOWN))


def encode_response(response, buffers):
    if not isinstance(response, pb_utils.InferenceResponse):
        raise pb_utils.TritonModelException(
            "expected an InferenceResponse, got %s" % type(response).__name__)
    if response.has_error():
        return {"outputs": [], "error": encode_error(response.error())}
    # The parameters as the JSON text Triton's InferResponse keeps (PyParametersToJSON); the
    # server sets them on the response as Triton's python_backend does, or fails it.
    return {"outputs": [encode_tensor(t, buffers) for t in response.output_tensors()],
            "parameters": response.parameters(), "error": None}


def decode_response(described, buffers):
    if described.get("error"):
        return pb_utils.InferenceResponse(error=decode_error(described["error"]))
    response = pb_utils.InferenceResponse(
        [decode_tensor(t, buffers) for t in described["outputs"]])
    # A BLS call's response parameters, as the called model set them (any KServe type: they are
    # the server's, not checked as a model's own are).
    response._parameters = described.get("parameters") or "{}"
    return response
