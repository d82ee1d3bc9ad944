"""Over 500 lines: one test per fault, each with the models it needs.

What a Python model's faults, and a client's malformed requests, may cost: each must cost its
own request (or, for a stub that can no longer be trusted, its own model) and never another
request's answer, the server's threads or its shutdown. Every test writes its models into a
repository of its own and starts a sonic-server on it, with short time limits."""

import os
import textwrap
import threading
import time
import grpc
import numpy as np
import pytest

from conftest import Server, tensor

TIMEOUT = 10

INT32_CONFIG = """\
name: "{name}"
backend: "python"
max_batch_size: 0
{extra}
parameters {{ key: "execute_timeout_ms" value {{ string_value: "{timeout}" }} }}
input [ {{ name: "IN" data_type: TYPE_INT32 dims: [ -1 ] }} ]
output [ {{ name: "OUT" data_type: TYPE_INT32 dims: [ -1 ] }} ]
"""

IDENTITY = """
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(
            [pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())])
            for r in requests]
"""


def write_model(root, name, model_py, extra="", timeout=2000):
    directory = os.path.join(root, name)
    os.makedirs(os.path.join(directory, "1"), exist_ok=True)
    with open(os.path.join(directory, "config.pbtxt"), "w") as f:
        f.write(INT32_CONFIG.format(name=name, extra=extra, timeout=timeout))
    with open(os.path.join(directory, "1", "model.py"), "w") as f:
        f.write(textwrap.dedent(model_py))


@pytest.fixture
def serve(tmp_path):
    """serve({name: (model_py, extra_config)}) -> a sonic-server with those models loaded."""
    started = []

    def start(models, *options):
        root = str(tmp_path / "models")
        for name, (model_py, extra) in models.items():
            write_model(root, name, model_py, extra)
        server = Server("--model-repository", root, "--model-control-mode", "explicit",
                        "--load-model", "*", *options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def stub(server, pb):
    return pb[2].GRPCInferenceServiceStub(server.channel())


def request(pb, model, value, request_id=""):
    built = pb[1].ModelInferRequest(model_name=model, id=request_id)
    tensor(pb, built, "IN", np.array(value, np.int32))
    return built


def infer(server, pb, model, value, timeout=TIMEOUT, **kw):
    answer = stub(server, pb).ModelInfer(request(pb, model, value, **kw), timeout=timeout)
    return np.frombuffer(answer.raw_output_contents[0], np.int32).tolist()


def send_raw(server, pb, raw):
    """A ModelInferRequest's bytes as given, which the protobuf library would not serialize
    (strings that are not UTF-8)."""
    call = server.channel().unary_unary(
        "/inference.GRPCInferenceService/ModelInfer", request_serializer=lambda x: x,
        response_deserializer=pb[1].ModelInferResponse.FromString)
    return call(raw, timeout=TIMEOUT)


def index(server, pb):
    answer = stub(server, pb).RepositoryIndex(pb[1].RepositoryIndexRequest(), timeout=TIMEOUT)
    return {m.name: m for m in answer.models}


@pytest.mark.parametrize("where", ["request_id", "parameter", "tensor_name"])
def test_strings_that_are_not_utf8_are_refused_and_the_model_serves_on(serve, pb, where):
    server = serve({"ident": (IDENTITY, "")})
    built = request(pb, "ident", [1], request_id="QQQQ" if where == "request_id" else "")
    if where == "parameter":
        built.parameters["note"].string_param = "QQQQ"
    if where == "tensor_name":
        built.outputs.add(name="QQQQ")
    raw = built.SerializeToString().replace(b"QQQQ", b"\xff\xfe\xfd\xfc")
    with pytest.raises(grpc.RpcError) as refused:
        send_raw(server, pb, raw)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # The instance is free again: the next request is answered at once.
    assert infer(server, pb, "ident", [5], timeout=5) == [5]


CALLER = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            mode = int(pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()[0])
            call = pb_utils.InferenceRequest(
                model_name="ident", inputs=[pb_utils.Tensor("IN", np.array([7], np.int32))],
                requested_output_names=["OUT"])
            if mode == 1:
                call._request_id = 123  # past the constructor: what a faulty stub would send
            answer = call.exec()
            if answer.has_error():
                raise RuntimeError("call failed: " + answer.error().message())
            out.append(pb_utils.InferenceResponse(answer.output_tensors()))
        return out
"""


def test_a_bls_call_with_fields_of_the_wrong_type_fails_only_itself(serve, pb):
    server = serve({"ident": (IDENTITY, ""), "caller": (CALLER, "")})
    assert infer(server, pb, "caller", [0]) == [7]
    with pytest.raises(grpc.RpcError) as failed:
        infer(server, pb, "caller", [1])
    assert failed.value.code() == grpc.StatusCode.INTERNAL
    assert "request_id" in failed.value.details()
    assert infer(server, pb, "caller", [0], timeout=5) == [7]
    assert index(server, pb)["caller"].state == "READY"


def test_request_ids_of_other_types_are_refused_as_triton_does(serve, pb):
    model = CALLER.replace("call._request_id = 123", "pass").replace(
        'requested_output_names=["OUT"])',
        'requested_output_names=["OUT"], request_id=123 if mode == 1 else "")')
    server = serve({"ident": (IDENTITY, ""), "caller": (model, "")})
    with pytest.raises(grpc.RpcError) as failed:
        infer(server, pb, "caller", [1])
    assert "TypeError" in failed.value.details()
    assert infer(server, pb, "caller", [0], timeout=5) == [7]


# ---- decoupled responses reach their own request ----

THREADED_SENDER = """
import threading
import time

import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        # As Triton's decoupled examples do: the responses come from a thread, after execute()
        # returned; an error response does not end the stream.
        for request in requests:
            sender = request.get_response_sender()
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().copy()

            def work(sender=sender, value=value):
                time.sleep(0.05)
                if value[0] == 1:
                    sender.send(pb_utils.InferenceResponse(
                        error=pb_utils.TritonError("soft error for 1")))
                    time.sleep(0.05)
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", value)]))
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

            threading.Thread(target=work).start()
        return None
"""

DECOUPLED = "model_transaction_policy { decoupled: true }"


def stream(server, pb, model, value, timeout=TIMEOUT):
    """(outputs, error messages) of one request on a stream of its own."""
    values, errors = [], []
    for answer in stub(server, pb).ModelStreamInfer(iter([request(pb, model, value)]),
                                                     timeout=timeout):
        if answer.error_message:
            errors.append(answer.error_message)
        else:
            values.extend(np.frombuffer(raw, np.int32).tolist()
                          for raw in answer.infer_response.raw_output_contents)
    return values, errors


def test_decoupled_responses_sent_after_execute_reach_their_own_request(serve, pb):
    server = serve({"sender": (THREADED_SENDER, DECOUPLED)})
    for value in (1, 2, 3, 4):
        values, errors = stream(server, pb, "sender", [value])
        assert values == [[value]]
        assert [("soft error for 1" in e) for e in errors] == ([True] if value == 1 else [])


# ---- BLS calls from threads of the model's own ----

BLS_FROM_RESPONSE_THREAD = """
import threading
import time

import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().copy()

            def work(sender=sender, value=value):
                time.sleep(0.1)  # execute() has returned by now
                answer = pb_utils.InferenceRequest(
                    model_name="ident", inputs=[pb_utils.Tensor("IN", value * 10)],
                    requested_output_names=["OUT"]).exec()
                if answer.has_error():
                    sender.send(pb_utils.InferenceResponse(error=answer.error()))
                else:
                    sender.send(pb_utils.InferenceResponse(answer.output_tensors()))
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

            threading.Thread(target=work).start()
        return None
"""


def test_a_bls_call_from_a_response_thread_is_answered(serve, pb):
    server = serve({"ident": (IDENTITY, ""), "dbls": (BLS_FROM_RESPONSE_THREAD, DECOUPLED)})
    for value in (1, 2):
        assert stream(server, pb, "dbls", [value], timeout=5) == ([[value * 10]], [])
    assert index(server, pb)["dbls"].state == "READY"


BLS_BETWEEN_REQUESTS = """
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        self.outcome = None

    def execute(self, requests):
        mode = int(pb_utils.get_input_tensor_by_name(requests[0], "IN").as_numpy()[0])
        if mode == 0:
            def late_call():
                time.sleep(0.2)  # after this execute() answered, before the next request
                answer = pb_utils.InferenceRequest(
                    model_name="ident", inputs=[pb_utils.Tensor("IN", np.array([1], np.int32))],
                    requested_output_names=["OUT"]).exec()
                self.outcome = answer.error().message() if answer.has_error() else "answered"

            threading.Thread(target=late_call).start()
            return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([0], np.int32))])]
        deadline = time.monotonic() + 3
        while self.outcome is None and time.monotonic() < deadline:
            time.sleep(0.01)
        refused = self.outcome is not None and "between" in self.outcome
        return [pb_utils.InferenceResponse(
            [pb_utils.Tensor("OUT", np.array([1 if refused else 2], np.int32))])]
"""


def test_a_bls_call_between_requests_is_refused_at_once(serve, pb):
    server = serve({"ident": (IDENTITY, ""), "late": (BLS_BETWEEN_REQUESTS, "")})
    assert infer(server, pb, "late", [0]) == [0]
    time.sleep(0.5)
    assert infer(server, pb, "late", [1]) == [1]
    assert infer(server, pb, "late", [0]) == [0]


# ---- waiting for an instance ----

SELF_CALL = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            v = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            if v[0] > 0:
                answer = pb_utils.InferenceRequest(
                    model_name="{callee}", inputs=[pb_utils.Tensor("IN", v - 1)],
                    requested_output_names=["OUT"]).exec()
                if answer.has_error():
                    raise RuntimeError(answer.error().message())
                v = answer.output_tensors()[0].as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", v)]))
        return out
"""


def test_a_bls_call_needing_an_instance_its_own_chain_holds_fails_at_once(serve, pb):
    server = serve({"selfcall": (SELF_CALL.replace("{callee}", "selfcall"), ""),
                    "ping": (SELF_CALL.replace("{callee}", "pong"), ""),
                    "pong": (SELF_CALL.replace("{callee}", "ping"), "")})
    for model in ("selfcall", "ping"):
        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as failed:
            infer(server, pb, model, [2], timeout=5)
        assert time.monotonic() - started < 2
        assert "its own call chain" in failed.value.details()
        assert infer(server, pb, model, [0]) == [0]
    assert index(server, pb)["selfcall"].state == "READY"


SLEEPER = """
import time

import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        value = pb_utils.get_input_tensor_by_name(requests[0], "IN").as_numpy()
        time.sleep(value[0] / 1000)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", value)])]
"""

SHORT_WAIT = 'parameters { key: "instance_wait_timeout_ms" value { string_value: "300" } }'


def test_the_wait_for_a_free_instance_is_bounded(serve, pb):
    server = serve({"sleeper": (SLEEPER, SHORT_WAIT)})
    busy = threading.Thread(target=infer, args=(server, pb, "sleeper", [1500]))
    busy.start()
    time.sleep(0.3)
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as failed:
        infer(server, pb, "sleeper", [0], timeout=5)
    assert time.monotonic() - started < 1
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "instance_wait_timeout_ms" in failed.value.details()
    busy.join()
    assert infer(server, pb, "sleeper", [0]) == [0]


# ---- the time limit covers writes to the stub ----

STOPS_READING = """
import os
import signal
import threading

import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        # Stands for a stub that stops reading its socket between requests.
        threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGSTOP)).start()
        value = pb_utils.get_input_tensor_by_name(requests[0], "IN").as_numpy()[:1]
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", value)])]
"""


def test_a_request_larger_than_the_socket_buffer_to_a_stub_that_stopped_reading(serve, pb):
    server = serve({"frozen": (STOPS_READING, "")})
    assert infer(server, pb, "frozen", [3]) == [3]
    time.sleep(0.5)
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as failed:
        infer(server, pb, "frozen", np.ones(2 << 20, np.int32), timeout=8)
    assert time.monotonic() - started < 5
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "execute_timeout_ms" in failed.value.details()
    assert index(server, pb)["frozen"].state == "UNAVAILABLE"


# ---- the stub's process and its children ----

FORKS_A_HELPER = """
import os
import time

import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        child = os.fork()
        if child == 0:  # a helper child, which keeps the stub's socket open
            time.sleep(60)
            os._exit(0)
        with open(os.path.join(args["model_repository"], "child.pid"), "w") as f:
            f.write(str(child))

    def execute(self, requests):
        os._exit(7)
"""


def alive(pid):
    """Whether `pid` runs (a zombie does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_stub_that_dies_is_seen_at_once_and_its_children_end_with_it(serve, pb, tmp_path):
    server = serve({"forker": (FORKS_A_HELPER, "")})
    child = int((tmp_path / "models" / "forker" / "child.pid").read_text())
    assert alive(child)
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as failed:
        infer(server, pb, "forker", [1])
    assert time.monotonic() - started < 1.5
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "exited with status 7" in failed.value.details()
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


SIGNALS = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        wanted = (1 << 1) | (1 << 14)  # SIGINT, SIGTERM
        blocked = int(status["SigBlk"], 16) & wanted
        ignored = int(status["SigIgn"], 16) & wanted
        return [pb_utils.InferenceResponse(
            [pb_utils.Tensor("OUT", np.array([blocked, ignored], np.int32))])]
"""


def test_stubs_do_not_inherit_the_servers_blocked_signals(serve, pb):
    server = serve({"signals": (SIGNALS, "")})
    assert infer(server, pb, "signals", [0]) == [0, 0]


# ---- a late failure of an old load leaves the new one in service ----

HANGS_ON_ZERO = """
import time

import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        value = pb_utils.get_input_tensor_by_name(requests[0], "IN").as_numpy()
        if value[0] == 0:
            time.sleep(60)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", value)])]
"""


def test_a_stub_of_an_old_load_that_fails_leaves_the_new_load_in_service(serve, pb):
    server = serve({"flaky": (HANGS_ON_ZERO, "")})
    failed = []

    def hang():
        try:
            infer(server, pb, "flaky", [0])
        except grpc.RpcError as e:
            failed.append(e.code())

    old = threading.Thread(target=hang)
    old.start()
    time.sleep(0.5)
    stub(server, pb).RepositoryModelLoad(pb[1].RepositoryModelLoadRequest(model_name="flaky"),
                                         timeout=TIMEOUT)
    old.join()
    assert failed == [grpc.StatusCode.UNAVAILABLE]
    assert index(server, pb)["flaky"].state == "READY"
    assert infer(server, pb, "flaky", [5]) == [5]


# ---- what Triton gives a model of a request ----

SEQUENCE = """
import json

import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            keys = len(json.loads(r.parameters()))
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor(
                "OUT", np.array([r.correlation_id(), r.flags(), keys], np.int32))]))
        return out
"""


def test_a_request_of_a_sequence_gives_its_correlation_id_and_flags(serve, pb):
    server = serve({"seq": (SEQUENCE, "")})
    for start, end, flags in ((True, False, 1), (False, False, 0), (False, True, 2)):
        built = request(pb, "seq", [1])
        built.parameters["sequence_id"].int64_param = 42
        built.parameters["sequence_start"].bool_param = start
        built.parameters["sequence_end"].bool_param = end
        built.parameters["other"].string_param = "kept"
        answer = stub(server, pb).ModelInfer(built, timeout=TIMEOUT)
        assert np.frombuffer(answer.raw_output_contents[0], np.int32).tolist() == [42, flags, 1]


# ---- a decoupled BLS call's responses as they come ----

SLOW_STREAM = """
import time

import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        sender = requests[0].get_response_sender()
        for i in range(3):
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([i], np.int32))]))
            time.sleep(0.4)
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""

STREAM_READER = """
import time

import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        started = time.monotonic()
        call = pb_utils.InferenceRequest(
            model_name="slow", inputs=[pb_utils.Tensor("IN", np.array([0], np.int32))],
            requested_output_names=["OUT"])
        arrivals = []
        for answer in call.exec(decoupled=True):
            if answer.has_error():
                raise RuntimeError(answer.error().message())
            if answer.output_tensors():
                arrivals.append(int((time.monotonic() - started) * 1000))
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array(arrivals, np.int32))])]
"""


def test_a_decoupled_bls_call_yields_each_response_as_it_comes(serve, pb):
    server = serve({"slow": (SLOW_STREAM, DECOUPLED), "reader": (STREAM_READER, "")})
    arrivals = infer(server, pb, "reader", [0])
    assert len(arrivals) == 3
    assert arrivals[0] < 300 and arrivals[2] >= 700


FAST_STREAM = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        sender = requests[0].get_response_sender()
        for i in range(5):
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([i], np.int32))]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""

FIRST_ANSWER_ONLY = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        value = pb_utils.get_input_tensor_by_name(requests[0], "IN").as_numpy()
        call = pb_utils.InferenceRequest(
            model_name="fast", inputs=[pb_utils.Tensor("IN", value)], requested_output_names=["OUT"])
        for answer in call.exec(decoupled=True):
            first = answer.output_tensors()[0].as_numpy()
            break  # the rest of the stream is not read
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", first + value)])]
"""


def test_the_rest_of_a_decoupled_bls_stream_left_unread_reaches_no_later_request(serve, pb):
    # The server writes the stream's other responses and its end all the same; they must not
    # be taken for the next execute's messages.
    server = serve({"fast": (FAST_STREAM, DECOUPLED), "first": (FIRST_ANSWER_ONLY, "")})
    for value in range(1, 6):
        assert infer(server, pb, "first", [value]) == [value]


# ---- what a stub's tensors may cost the server ----

STRINGS_CONFIG = """\
name: "empty_strings"
backend: "python"
max_batch_size: 0
parameters { key: "max_message_bytes" value { string_value: "4096" } }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_STRING dims: [ -1 ] } ]
"""

EMPTY_STRINGS = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        # IN[0] empty strings: 4 bytes each on the wire.
        count = int(pb_utils.get_input_tensor_by_name(requests[0], "IN").as_numpy()[0])
        strings = np.array([b""] * count, dtype=np.object_)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", strings)])]
"""


def test_a_bytes_output_of_more_elements_than_max_message_bytes_allows_is_refused(tmp_path, pb):
    # 1000 empty strings fit a message of 4096 bytes, but their index (16 bytes an element)
    # would cost 4 times it: refused as the stub's fault, and the model serves on.
    directory = tmp_path / "models" / "empty_strings"
    (directory / "1").mkdir(parents=True)
    (directory / "config.pbtxt").write_text(STRINGS_CONFIG)
    (directory / "1" / "model.py").write_text(textwrap.dedent(EMPTY_STRINGS))
    server = Server("--model-repository", str(tmp_path / "models"), "--model-control-mode",
                    "explicit", "--load-model", "*")
    try:
        with pytest.raises(grpc.RpcError) as failed:
            stub(server, pb).ModelInfer(request(pb, "empty_strings", [1000]), timeout=TIMEOUT)
        assert failed.value.code() == grpc.StatusCode.INTERNAL
        assert "max_message_bytes" in failed.value.details()
        answer = stub(server, pb).ModelInfer(request(pb, "empty_strings", [10]), timeout=TIMEOUT)
        assert answer.raw_output_contents[0] == b"\0\0\0\0" * 10
        assert index(server, pb)["empty_strings"].state == "READY"
    finally:
        server.stop()
