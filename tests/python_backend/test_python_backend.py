"""Triton Python models (backend: "python", model.py) served by sonic-server and run by a
client's fallback: Triton's simple_identity, a BLS model calling an ONNX model, a decoupled
model, auto_complete_config, and models that raise, hang or end their own process, each of
which must cost its own requests and nothing else."""

import os
import time

import grpc
import numpy as np
import pytest

from conftest import Server, tensor

TIMEOUT = 30


def stub(server, pb):
    return pb[2].GRPCInferenceServiceStub(server.channel())


def outputs(pb, response):
    """{name: numpy array} of a ModelInferResponse's raw outputs."""
    types = {"FP32": np.float32, "INT32": np.int32, "INT64": np.int64}
    got = {}
    for output, raw in zip(response.outputs, response.raw_output_contents):
        if output.datatype == "BYTES":
            items, at = [], 0
            while at < len(raw):
                size = int.from_bytes(raw[at:at + 4], "little")
                items.append(raw[at + 4:at + 4 + size])
                at += 4 + size
            got[output.name] = np.array(items, dtype=np.object_).reshape(list(output.shape))
        else:
            got[output.name] = np.frombuffer(raw, types[output.datatype]).reshape(
                list(output.shape))
    return got


def infer(server, pb, model, inputs, request_id=""):
    request = pb[1].ModelInferRequest(model_name=model, id=request_id)
    for name, array in inputs.items():
        tensor(pb, request, name, array)
    return outputs(pb, stub(server, pb).ModelInfer(request, timeout=TIMEOUT))


def index(server, pb):
    answer = stub(server, pb).RepositoryIndex(pb[1].RepositoryIndexRequest(), timeout=TIMEOUT)
    return {m.name: m for m in answer.models}


STRINGS = np.array([[b"hello", b"", b"\x00binary\xff", "żółw".encode()]], dtype=np.object_)


def test_simple_identity_serves_strings(server, pb):
    got = infer(server, pb, "simple_identity", {"INPUT0": STRINGS})["OUTPUT0"]
    assert got.shape == STRINGS.shape
    assert got.tolist() == STRINGS.tolist()
    # The model's config as Triton completes it: the backend's name kept, no platform made up.
    config = stub(server, pb).ModelConfig(
        pb[1].ModelConfigRequest(name="simple_identity"), timeout=TIMEOUT).config
    assert config.backend == "python" and config.max_batch_size == 8


def test_simple_identity_runs_in_a_clients_fallback(repository):
    # No server at this address: the request runs in the client's fallback, which loads the
    # model from the repository and starts its stub in this process's stead.
    sonic = pytest.importorskip("sonic")
    client = sonic.Client("grpc://127.0.0.1:9", fallback_repository=repository,
                          connect_timeout=0.2)
    try:
        result = client.infer("simple_identity", {"INPUT0": STRINGS})
        assert [bytes(s) if not isinstance(s, bytes) else s
                for s in result.as_numpy("OUTPUT0").ravel()] == STRINGS.ravel().tolist()
        assert client.stats()["fallbacks"] >= 1
    finally:
        client.close()


def test_a_bls_model_answers_as_the_model_it_calls(server, pb):
    rng = np.random.default_rng(7)
    a = rng.random((3, 4), dtype=np.float32)
    b = rng.random((3, 4), dtype=np.float32)
    direct = infer(server, pb, "onnx_add_sub", {"INPUT0": a, "INPUT1": b})
    through_python = infer(server, pb, "bls_add_sub", {"INPUT0": a, "INPUT1": b})
    assert np.array_equal(direct["OUTPUT0"], a + b)
    for name in ("OUTPUT0", "OUTPUT1"):
        assert np.array_equal(through_python[name], direct[name])
    # exec(decoupled=True): the same through the iterator of responses.
    streamed = infer(server, pb, "bls_add_sub", {"INPUT0": a, "INPUT1": b},
                     request_id="decoupled")
    assert np.array_equal(streamed["OUTPUT1"], direct["OUTPUT1"])


def test_a_bls_call_that_fails_is_the_models_to_handle(server, pb):
    # onnx_add_sub takes batches of at most 8: the call fails, and the model answers its
    # request with the call's error.
    big = np.zeros((8, 4), np.float32)
    request = pb[1].ModelInferRequest(model_name="bls_add_sub")
    tensor(pb, request, "INPUT0", big)
    tensor(pb, request, "INPUT1", big[:, :3].copy())
    with pytest.raises(grpc.RpcError) as failed:
        stub(server, pb).ModelInfer(request, timeout=TIMEOUT)
    assert failed.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # The server refused the request before the model saw it (INPUT1's shape): the model lives.
    a = np.ones((1, 4), np.float32)
    assert np.array_equal(infer(server, pb, "bls_add_sub", {"INPUT0": a, "INPUT1": a})["OUTPUT0"],
                          2 * a)


def test_auto_complete_config_fills_inputs_and_outputs(server, pb):
    config = stub(server, pb).ModelConfig(pb[1].ModelConfigRequest(name="completed"),
                                          timeout=TIMEOUT).config
    assert [(t.name, list(t.dims)) for t in config.input] == [("X", [3])]
    assert [(t.name, list(t.dims)) for t in config.output] == [("DOUBLED", [3])]
    assert config.max_batch_size == 4
    assert config.HasField("dynamic_batching")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert np.array_equal(infer(server, pb, "completed", {"X": x})["DOUBLED"], 2 * x)


def test_an_initialize_that_raises_fails_the_load_naming_model_py(server, pb):
    model = index(server, pb)["init_fails"]
    assert model.state == "UNAVAILABLE"
    assert "model.py" in model.reason and "no weights for init_fails" in model.reason
    assert "RuntimeError" in model.reason


def fragile(server, pb, mode):
    return infer(server, pb, "fragile", {"MODE": np.array([mode], np.int32)})["PID"][0]


def test_an_execute_that_raises_fails_its_request_and_the_model_stays(server, pb):
    pid = fragile(server, pb, 0)
    request = pb[1].ModelInferRequest(model_name="fragile")
    tensor(pb, request, "MODE", np.array([1], np.int32))
    with pytest.raises(grpc.RpcError) as failed:
        stub(server, pb).ModelInfer(request, timeout=TIMEOUT)
    assert failed.value.code() == grpc.StatusCode.INTERNAL
    assert "ValueError: mode 1 raises" in failed.value.details()
    assert fragile(server, pb, 0) == pid  # the same stub answers


@pytest.mark.parametrize("mode,reason", [
    (2, "did not answer within execute_timeout_ms (1000 ms) and was killed"),
    (3, "exited with status 3"),
    (4, "was killed by signal 9"),
], ids=["hangs", "exits", "killed"])
def test_a_stub_that_hangs_or_dies_is_contained(server, pb, mode, reason):
    if index(server, pb)["fragile"].state != "READY":
        load(server, pb, "fragile")
    first = fragile(server, pb, 0)
    request = pb[1].ModelInferRequest(model_name="fragile")
    tensor(pb, request, "MODE", np.array([mode], np.int32))
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as failed:
        stub(server, pb).ModelInfer(request, timeout=TIMEOUT)
    assert time.monotonic() - started < 10
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert reason in failed.value.details()
    # The stub is gone, the model is out of service with the reason, the server serves on.
    with pytest.raises(ProcessLookupError):
        os.kill(int(first), 0)
    model = index(server, pb)["fragile"]
    assert model.state == "UNAVAILABLE" and reason in model.reason
    assert infer(server, pb, "simple_identity", {"INPUT0": STRINGS})["OUTPUT0"].tolist() == \
        STRINGS.tolist()
    with pytest.raises(grpc.RpcError) as refused:
        fragile(server, pb, 0)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    # A load brings it back, in a new stub.
    load(server, pb, "fragile")
    assert index(server, pb)["fragile"].state == "READY"
    assert fragile(server, pb, 0) != first


def load(server, pb, model):
    stub(server, pb).RepositoryModelLoad(pb[1].RepositoryModelLoadRequest(model_name=model),
                                         timeout=TIMEOUT)


def test_stubs_end_with_the_server(repository, pb):
    server = Server("--model-repository", repository, "--model-control-mode", "explicit",
                    "--load-model", "fragile")
    try:
        pid = int(fragile(server, pb, 0))
        os.kill(pid, 0)
    finally:
        server.stop()
    # finalize() ran and the stub exited; the server reaped it.
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_stubs_end_when_the_server_is_killed(repository, pb):
    server = Server("--model-repository", repository, "--model-control-mode", "explicit",
                    "--load-model", "fragile")
    pid = int(fragile(server, pb, 0))
    server.process.kill()
    server.process.wait()
    server.log.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.05)
    assert not alive(pid)


def alive(pid):
    """Whether `pid` runs (a zombie does not: its parent, gone, left it to init)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_model_sees_its_caller_go_away_and_stops(server, pb):
    """request.is_cancelled() turns true once the client gives up (here Debian's grpcio, at its
    deadline: it resets the call), so that a long model stops and its one instance serves the
    next request, rather than working on for nobody."""
    request = pb[1].ModelInferRequest(model_name="until_cancelled")
    tensor(pb, request, "IN", np.array([7], dtype=np.int32))
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as late:
        stub(server, pb).ModelInfer(request, timeout=0.3)
    assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    # The model's one instance is free again well before the 20 s it would have worked.
    quick = pb[1].ModelInferRequest(model_name="until_cancelled")
    quick.parameters["steps"].int64_param = 1
    tensor(pb, quick, "IN", np.array([8], dtype=np.int32))
    answer = outputs(pb, stub(server, pb).ModelInfer(quick, timeout=TIMEOUT))
    assert answer["OUT"].tolist() == [8]
    assert time.monotonic() - started < 5


def test_a_decoupled_models_stream_stops_when_its_caller_resets_it(server, pb):
    """A decoupled model's response_sender.is_cancelled() turns true once the client cancels its
    stream, and the model ends it: the model's instance serves the next stream."""
    def one_request():
        request = pb[1].ModelInferRequest(model_name="streams_until_cancelled")
        tensor(pb, request, "IN", np.array([1], dtype=np.int32))
        return iter([request])

    started = time.monotonic()
    call = stub(server, pb).ModelStreamInfer(one_request(), timeout=TIMEOUT)
    taken = 0
    for answer in call:
        assert not answer.error_message
        taken += 1
        if taken == 3:
            call.cancel()  # RST_STREAM: the caller went away mid-stream
            break
    # Would it stream on, its one instance would stay busy for 20 s.
    again = stub(server, pb).ModelStreamInfer(one_request(), timeout=TIMEOUT)
    first = next(iter(again))
    assert not first.error_message
    again.cancel()
    assert time.monotonic() - started < 5
