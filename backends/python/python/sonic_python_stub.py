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

and metric -> metric_answer (pb_utils.MetricFamily, Metric) within initialize, auto_complete or
an execute. The connection itself is sonic_stub_channel.py's.

The stub ends when the socket closes (the server unloaded the model or is gone)."""

import asyncio
import importlib.util
import json
import os
import socket
import struct
import sys
import threading
import traceback

SOCKET_FD = 3


def describe(exception):
    return "%s: %s" % (type(exception).__name__, exception)


class Stub:
    def __init__(self, channel, model_file):
        self.channel = channel
        self.model_file = model_file
        self.model_class = None
        self.model = None
        self.model_name = ""  # the request's model_name(), model_version(): this model's
        self.model_version = -1
        self.loop = None  # the asyncio loop of `async def execute`, made when first needed

    def run_coroutine(self, coroutine, in_background):
        """Runs an `async def execute`'s coroutine as Triton's stub does (pb_stub.cc,
        Stub::RunCoroutine): on one event loop that runs forever in a daemon thread, waited for
        (its result), or, for a decoupled model, left to run ("Do not wait for async decoupled
        execute to return"), its error ending the streams it leaves open."""
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
            threading.Thread(target=self.loop.run_forever, daemon=True).start()
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        if not in_background:
            return future.result()
        return future

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
        self.channel.end_load({"type": "config", "config": json.dumps(config.as_dict())})

    def initialize(self, header):
        args = header["args"]
        self.model_name = args.get("model_name", "")
        version = str(args.get("model_version", ""))
        self.model_version = int(version) if version.isdigit() else -1
        self.channel.decoupled = bool(header.get("decoupled"))
        pb_utils.Logger.prefix = args.get("model_instance_name", "") + ": "
        self.model = self.model_type()()
        if hasattr(self.model, "initialize"):
            self.model.initialize(args)
        self.channel.end_load({"type": "initialized"})

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
                flags=described.get("flags", 0), model_name=self.model_name,
                model_version=self.model_version)
            request._parameters = described.get("parameters", "{}")  # JSON, as the server sent it
            request._execute = execute
            if self.channel.decoupled:
                request._sender = pb_utils.InferenceResponseSender(self.channel, execute, index)
            requests.append(request)
        senders = None
        if not self.channel.decoupled:
            # Triton lets a model that is not decoupled answer through the sender too: one
            # response each, with the final flag, in place of execute()'s list (or its None).
            senders = OneResponseEach(self.channel, execute, len(requests))
            for index, request in enumerate(requests):
                request._sender = pb_utils.InferenceResponseSender(senders, execute, index)
        if self.channel.decoupled:
            error = None
            try:
                returned = self.model.execute(requests)
                if asyncio.iscoroutine(returned):
                    self.run_coroutine(returned, True).add_done_callback(
                        lambda future: self.end_streams(requests, future))
                elif returned is not None:
                    raise pb_utils.TritonModelException(  # Triton's words (pb_stub.cc)
                        "Python model '%s' is using the decoupled mode and the execute function "
                        "must return None." % self.model_name)
            except Exception as failure:  # the model's own error: its requests fail with it
                error = describe(failure)
                self.end_streams(requests)
            self.channel.end_execute({"type": "executed", "execute": execute, "error": error})
            return
        try:
            responses = self.model.execute(requests)
            if asyncio.iscoroutine(responses):
                responses = self.run_coroutine(responses, False)
            responses = senders.complete(responses)
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

    @staticmethod
    def end_streams(requests, future=None):
        """Ends the streams a decoupled execute that raised left open: a response sent later is
        refused (the sender is closed), as no request is left to take it. `future`: an async
        execute's, which ends them only when it raised, with its error."""
        error = None
        if future is not None:
            if future.cancelled() or future.exception() is None:
                return
            error = pb_utils.TritonError(describe(future.exception()))
            pb_utils.Logger.log_error("async execute failed: " + str(error))
        for request in requests:
            if not request._sender._closed:
                try:
                    request._sender.send(
                        None if error is None else pb_utils.InferenceResponse(error=error),
                        flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                except (pb_utils.TritonModelException, EOFError, OSError):
                    pass  # sent meanwhile, or the server is gone

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
                self.channel.loading = True  # metric calls are answered until it answers
                try:
                    handlers[kind](header)
                except Exception as failure:
                    self.channel.end_load({"type": "error", "message": describe(failure),
                                           "traceback": traceback.format_exc()})
            else:
                self.channel.write({"type": "error", "message": "unknown message %r" % kind})

    def finalize_quietly(self):
        if self.model is not None and hasattr(self.model, "finalize"):
            try:
                self.model.finalize()
            except Exception:
                pass


class OneResponseEach:
    """The response senders of a model that is not decoupled (Triton's ResponseSender rules):
    each request takes one response and the final flag (together or in that order), which
    stands for its entry of execute()'s list (None there, or no list at all)."""

    def __init__(self, channel, execute, count):
        self._channel = channel
        self._sent = [None] * count
        self._final = [False] * count
        self._done = threading.Condition()

    def send_response(self, execute, index, response, flags):
        with self._done:
            if response is not None and self._sent[index] is not None:
                raise pb_utils.TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send more than one "
                    "response.")
            if response is None and self._sent[index] is None:
                raise pb_utils.TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send complete final "
                    "before sending a response.")
            if response is not None:
                self._sent[index] = response
            if flags & pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL:
                self._final[index] = True
                self._done.notify_all()

    def is_cancelled(self, execute):
        return self._channel.is_cancelled(execute)

    def complete(self, returned):
        """execute()'s list with the senders' responses in place of its None entries (all of
        them for None), waiting for those a model's thread still owes (the server's
        execute_timeout_ms bounds the wait)."""
        if returned is not None and not isinstance(returned, (list, tuple)):
            return returned
        wanted = [i for i in range(len(self._sent))
                  if returned is None or (i < len(returned) and returned[i] is None)]
        with self._done:
            if not any(self._sent) and returned is not None:
                return returned  # the usual case: the list is the answer
            for i in range(len(self._sent)):
                if i not in wanted and self._sent[i] is not None:
                    raise pb_utils.TritonModelException(
                        "Non-decoupled model cannot send more than one response (request %d "
                        "was answered through its sender and in execute()'s list)" % i)
            self._done.wait_for(lambda: all(self._final[i] for i in wanted))
        answers = list(returned) if returned is not None else [None] * len(self._sent)
        for i in wanted:
            answers[i] = self._sent[i]
        return answers


def _shape_of(value):
    if isinstance(value, (list, tuple)):
        return "%d item(s)" % len(value)
    return type(value).__name__


def refuse(message):
    """Says why the stub cannot start, in a frame of its own (the channel needs numpy)."""
    encoded = json.dumps({"type": "error", "message": message}).encode()
    with socket.socket(fileno=SOCKET_FD) as connection:
        connection.sendall(struct.pack("<II", len(encoded), 0) + encoded)


def main():
    global pb_utils, Channel, decode_tensor, encode_response
    # This script's directory holds triton_python_backend_utils.py and the channel as well.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import triton_python_backend_utils as pb_utils
        from sonic_stub_channel import Channel, decode_tensor, encode_response
    except ImportError as failure:
        refuse("the Python backend needs numpy in %s (%s)" % (sys.executable, failure))
        return 1
    channel = Channel(SOCKET_FD)
    pb_utils.set_channel(channel)
    try:
        Stub(channel, sys.argv[1]).serve()
    except (EOFError, BrokenPipeError, ConnectionResetError):
        pass  # the server went away: nothing is left to answer
    return 0


if __name__ == "__main__":
    sys.exit(main())
