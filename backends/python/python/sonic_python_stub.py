"""The process that runs one instance of a Python model (a Triton model.py) for sonic's Python
backend (backends/python/src/python_backend.cpp), as Triton's python_backend runs each instance
in a stub process of its own.

    python3 -u -B sonic_python_stub.py MODEL_FILE INSTANCE_NAME

fd 3 is a stream socket to the server. Messages are frames (backends/python/src/stub_frame.hpp):
a JSON header and byte buffers. The server speaks first and the stub answers:

    (stub, at start)  {"type": "hello"}
    auto_complete     -> config | error     TritonPythonModel.auto_complete_config
    initialize        -> initialized | error
    execute           -> responses | error  (decoupled: response..., then executed)
                         with bls -> bls_response (decoupled: bls_response..., bls_end) between,
                         and is_cancelled -> cancelled (request.is_cancelled())
    finalize          -> finalized, and the stub exits

The stub ends when the socket closes (the server unloaded the model or is gone)."""

import collections
import importlib.util
import json
import os
import socket
import struct
import sys
import threading
import traceback

SOCKET_FD = 3


class Channel:
    """Frames over the socket. No thread is set aside to read it: whichever thread waits for a
    message reads the socket while no other does, keeps what is its own and hands the rest on
    (the main loop's messages to next(), a BLS call's answers to the thread that made the call,
    by the call's number). The main loop thus reads each execute itself, with no thread switch
    on the way. Writes may come from any thread.

    A BLS call is answered only while an execute is under way (the server reads the socket only
    then): from the execute's message until its responses were written, or, for a decoupled
    model, until execute() returned and every sender sent its final flag. A call outside that is
    refused here, at once."""

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
                if header.get("type") in ("bls_response", "bls_end", "cancelled"):
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
                return iter([response]) if decoupled else response
            with self._arrivals:
                if self._closed:
                    raise EOFError("the server closed the connection")
                call = self._next_call
                self._next_call += 1
                self._inboxes[call] = collections.deque()
            header["execute"] = self.execute
            header["call"] = call
            self.write(header, buffers)
        if decoupled:
            return self._stream(call)
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


_ERROR_CODES = {}  # filled in main(): the wire's status names and TritonError's codes


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
    return {"outputs": [encode_tensor(t, buffers) for t in response.output_tensors()],
            "error": None}


def decode_response(described, buffers):
    if described.get("error"):
        return pb_utils.InferenceResponse(error=decode_error(described["error"]))
    return pb_utils.InferenceResponse([decode_tensor(t, buffers) for t in described["outputs"]])


def describe(exception):
    return "%s: %s" % (type(exception).__name__, exception)


class Stub:
    def __init__(self, channel, model_file):
        self.channel = channel
        self.model_file = model_file
        self.model_class = None
        self.model = None

    def model_type(self):
        if self.model_class is None:
            # model.py's directory first on the path, so that it may import its neighbours.
            sys.path.insert(0, os.path.dirname(os.path.abspath(self.model_file)))
            spec = importlib.util.spec_from_file_location("model", self.model_file)
            module = importlib.util.module_from_spec(spec)
            sys.modules["model"] = module
            spec.loader.exec_module(module)
            if not hasattr(module, "TritonPythonModel"):
                raise pb_utils.TritonModelException(
                    "%s defines no class TritonPythonModel" % self.model_file)
            self.model_class = module.TritonPythonModel
        return self.model_class

    def auto_complete(self, header):
        config = pb_utils.ModelConfig(header["config"])
        method = getattr(self.model_type(), "auto_complete_config", None)
        if method is not None:
            completed = method(config)
            if not isinstance(completed, pb_utils.ModelConfig):
                raise pb_utils.TritonModelException(
                    "auto_complete_config must return its ModelConfig, not %s"
                    % type(completed).__name__)
            config = completed
        self.channel.write({"type": "config", "config": json.dumps(config.as_dict())})

    def initialize(self, header):
        args = header["args"]
        self.channel.decoupled = bool(header.get("decoupled"))
        pb_utils.Logger.prefix = args.get("model_instance_name", "") + ": "
        self.model = self.model_type()()
        if hasattr(self.model, "initialize"):
            self.model.initialize(args)
        self.channel.write({"type": "initialized"})

    def execute(self, header, buffers):
        execute = header.get("execute")
        self.channel.begin_execute(execute, len(header["requests"]) if self.channel.decoupled
                                   else 0)
        requests = []
        for index, described in enumerate(header["requests"]):
            request = pb_utils.InferenceRequest(
                inputs=[decode_tensor(t, buffers) for t in described["inputs"]],
                requested_output_names=described["requested_outputs"],
                request_id=described.get("request_id", ""),
                correlation_id=described.get("correlation_id", 0),
                flags=described.get("flags", 0),
                parameters=described.get("parameters", "{}"))
            request._execute = execute
            if self.channel.decoupled:
                request._sender = pb_utils.InferenceResponseSender(self.channel, execute, index)
            requests.append(request)
        if self.channel.decoupled:
            error = None
            try:
                self.model.execute(requests)
            except Exception as failure:  # the model's own error: its requests fail with it
                error = describe(failure)
                # Their streams end here: a response sent later is refused (the sender is
                # closed), as no request is left to take it.
                for request in requests:
                    if not request._sender._closed:
                        request._sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            self.channel.end_execute({"type": "executed", "execute": execute, "error": error})
            return
        try:
            responses = self.model.execute(requests)
            if not isinstance(responses, (list, tuple)) or len(responses) != len(requests):
                raise pb_utils.TritonModelException(
                    "execute() must return a list of %d InferenceResponse, one per request; it "
                    "returned %s" % (len(requests), _shape_of(responses)))
            buffers_out = []
            encoded = [encode_response(r, buffers_out) for r in responses]
        except Exception as failure:
            self.channel.end_execute({"type": "error", "execute": execute,
                                      "message": describe(failure)})
            return
        self.channel.end_execute({"type": "responses", "execute": execute, "responses": encoded},
                                 buffers_out)

    def finalize(self):
        if self.model is not None and hasattr(self.model, "finalize"):
            try:
                self.model.finalize()
            except Exception as failure:
                pb_utils.Logger.log_error("finalize failed: " + describe(failure))
        self.channel.write({"type": "finalized"})

    def serve(self):
        self.channel.write({"type": "hello", "python": sys.version.split()[0]})
        handlers = {"auto_complete": self.auto_complete, "initialize": self.initialize}
        while True:
            try:
                header, buffers = self.channel.next()
            except EOFError:
                self.finalize_quietly()
                return
            kind = header.get("type")
            if kind == "execute":
                self.execute(header, buffers)
            elif kind == "finalize":
                self.finalize()
                return
            elif kind in handlers:
                try:
                    handlers[kind](header)
                except Exception as failure:
                    self.channel.write({"type": "error", "message": describe(failure),
                                        "traceback": traceback.format_exc()})
            else:
                self.channel.write({"type": "error", "message": "unknown message %r" % kind})

    def finalize_quietly(self):
        if self.model is not None and hasattr(self.model, "finalize"):
            try:
                self.model.finalize()
            except Exception:
                pass


def _shape_of(value):
    if isinstance(value, (list, tuple)):
        return "%d item(s)" % len(value)
    return type(value).__name__


def main():
    global np, pb_utils
    channel = Channel(SOCKET_FD)
    # This script's directory holds triton_python_backend_utils.py as well.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import numpy as np
        import triton_python_backend_utils as pb_utils
    except ImportError as failure:
        channel.write({"type": "error", "message": "the Python backend needs numpy in %s (%s)"
                       % (sys.executable, failure)})
        return 1
    error = pb_utils.TritonError
    _ERROR_CODES.update({error.UNKNOWN: "UNKNOWN", error.INTERNAL: "INTERNAL",
                         error.NOT_FOUND: "NOT_FOUND", error.INVALID_ARG: "INVALID_ARGUMENT",
                         error.UNAVAILABLE: "UNAVAILABLE", error.UNSUPPORTED: "UNIMPLEMENTED",
                         error.ALREADY_EXISTS: "ALREADY_EXISTS", error.CANCELLED: "CANCELLED"})
    pb_utils.set_channel(channel)
    try:
        Stub(channel, sys.argv[1]).serve()
    except (EOFError, BrokenPipeError, ConnectionResetError):
        pass  # the server went away: nothing is left to answer
    return 0


if __name__ == "__main__":
    sys.exit(main())
