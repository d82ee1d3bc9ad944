"""No model can hang or take down sonic-server: a load that blocks passes its time limit and
leaves its model UNAVAILABLE, a broken file fails alone, and SIGTERM ends the server within 2 s
at any moment, loads included. A model file that is a named pipe makes a load that blocks for
real: the backend's read waits for a writer that never comes."""

import base64
import http.client
import json
import os
import re
import shutil
import signal
import time

import grpc
import numpy as np
import onnx
import pytest

import make_models
from conftest import Server

CONFIG = make_models.CONFIGS


def repository_with(tmp_path, broken):
    """simple, and `broken`, a copy of simple whose model file is what `broken` says."""
    root = tmp_path / "repository"
    os.makedirs(root)
    make_models.save(make_models.add_sub(make_models.TensorProto.INT32),
                     str(root / "simple" / "1" / "model.onnx"))
    shutil.copy(f"{CONFIG}/simple/config.pbtxt", root / "simple" / "config.pbtxt")
    for name, how in broken.items():
        os.makedirs(root / name / "1")
        with open(f"{CONFIG}/simple/config.pbtxt") as f:
            text = f.read().replace('name: "simple"', 'name: "%s"' % name)
        (root / name / "config.pbtxt").write_text(text)
        model = root / name / "1" / "model.onnx"
        if how == "blocks":
            os.mkfifo(model)
        else:
            model.write_bytes(b"\x08\x07 not an onnx graph " * 10)
    return str(root)


def index(server, pb):
    stub = pb[2].GRPCInferenceServiceStub(server.channel())
    return {m.name: m for m in stub.RepositoryIndex(pb[1].RepositoryIndexRequest()).models}


def test_a_load_that_blocks_passes_its_limit_and_the_others_serve(tmp_path, pb):
    repository = repository_with(tmp_path, {"blocked": "blocks", "broken": "garbage"})
    started = time.monotonic()
    server = Server("--model-repository", repository, "--model-load-timeout", "2")
    try:
        assert time.monotonic() - started < 15
        models = index(server, pb)
        assert models["simple"].state == "READY"
        assert models["blocked"].state == "UNAVAILABLE"
        assert "took longer than its limit" in models["blocked"].reason
        assert models["broken"].state == "UNAVAILABLE"
        assert "model.onnx" in models["broken"].reason
        stub = pb[2].GRPCInferenceServiceStub(server.channel())
        assert not stub.ServerReady(pb[1].ServerReadyRequest()).ready
        assert stub.ModelReady(pb[1].ModelReadyRequest(name="simple")).ready
        assert "UNAVAILABLE: " in server.output() and "READY (version 1)" in server.output()
    finally:
        server.stop()


def test_sigterm_during_a_blocked_load_ends_the_server_within_2_s(tmp_path):
    repository = repository_with(tmp_path, {"blocked": "blocks"})
    server = Server("--model-repository", repository, "--model-load-timeout", "0", wait=False)
    try:
        # The loads have started (so the server handles signals: its libraries' start-up, libtorch's
        # among them, may take over a second on a busy machine), and one of them blocks.
        deadline = time.monotonic() + 15
        while "model simple: READY" not in server.output() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        assert server.process.poll() is None and server.address is None
        sent = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(10)
        assert time.monotonic() - sent < 2
        assert server.process.returncode == 0
        assert "a signal came while models were loading" in server.output()
    finally:
        server.stop()


def test_sigint_while_serving_ends_the_server_within_2_s(tmp_path):
    repository = repository_with(tmp_path, {})
    server = Server("--model-repository", repository)
    try:
        sent = time.monotonic()
        server.process.send_signal(signal.SIGINT)
        server.process.wait(10)
        assert time.monotonic() - sent < 2
        assert server.process.returncode == 0
    finally:
        server.stop()


# ---- model control as tritonclient drives it (Triton's model repository extension) -----------
# Each request is built as tritonclient builds it: grpc/_client.py and grpc_client.cc (a
# RepositoryModelLoadRequest with "config" as string_param and each "file:<path>" as bytes_param;
# a RepositoryModelUnloadRequest with "unload_dependents" as bool_param, always), and
# http/_client.py and http_client.cc (a JSON body {"parameters": {...}}, the files base64).

SENT = {"name": "sent", "platform": "onnxruntime_onnx", "max_batch_size": 8,
        "input": [{"name": n, "data_type": "TYPE_INT32", "dims": [16]}
                  for n in ("INPUT0", "INPUT1")],
        "output": [{"name": n, "data_type": "TYPE_INT32", "dims": [16]}
                   for n in ("OUTPUT0", "OUTPUT1")]}
POLL_FAILED = "failed to load '%s', failed to poll from model repository"


@pytest.fixture
def explicit(tmp_path, monkeypatch):
    """A server in explicit mode with simple loaded; its private directories under `tmp`."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    server = Server("--model-repository", repository_with(tmp_path, {}),
                    "--model-control-mode", "explicit", "--load-model", "simple")
    server.scratch = scratch
    server.http = int(re.search(r"^sonic-server http listening on .*:(\d+)$", server.output(),
                                re.M).group(1))
    yield server
    server.stop()


def onnx_bytes():
    return onnx.helper.make_model(make_models.add_sub(make_models.TensorProto.INT32),
                                  opset_imports=[onnx.helper.make_opsetid(
                                      "", make_models.OPSET)]).SerializeToString()


def load(server, pb, name, config=None, files=None, **parameters):
    request = pb[1].RepositoryModelLoadRequest(model_name=name)
    if config is not None:
        request.parameters["config"].string_param = config
    for path, content in (files or {}).items():
        request.parameters[path].bytes_param = content
    for key, value in parameters.items():
        request.parameters[key].string_param = value
    return pb[2].GRPCInferenceServiceStub(server.channel()).RepositoryModelLoad(request,
                                                                                 timeout=30)


def unload(server, pb, name, dependents=False):
    request = pb[1].RepositoryModelUnloadRequest(model_name=name)
    request.parameters["unload_dependents"].bool_param = dependents
    return pb[2].GRPCInferenceServiceStub(server.channel()).RepositoryModelUnload(request,
                                                                                   timeout=30)


def refusal(call):
    with pytest.raises(grpc.RpcError) as failed:
        call()
    return failed.value.code(), failed.value.details()


def post(server, path, body):
    connection = http.client.HTTPConnection("127.0.0.1", server.http, timeout=30)
    connection.request("POST", path, body)
    answer = connection.getresponse()
    return answer.status, answer.read()


def adds(server, pb, name):
    stub = pb[2].GRPCInferenceServiceStub(server.channel())
    request = pb[1].ModelInferRequest(model_name=name)
    for n in ("INPUT0", "INPUT1"):
        request.inputs.add(name=n, datatype="INT32", shape=[1, 16])
        request.raw_input_contents.append(np.arange(16, dtype=np.int32).tobytes())
    answer = stub.ModelInfer(request, timeout=30)
    return np.frombuffer(answer.raw_output_contents[0], np.int32).tolist()


def ready(server, pb, name):
    stub = pb[2].GRPCInferenceServiceStub(server.channel())
    return stub.ModelReady(pb[1].ModelReadyRequest(name=name)).ready


def private_directories(server):
    """The server's private directories in its TMPDIR (other libraries write there too)."""
    return sorted(server.scratch.glob("sonic-server-*"))


def written(server):
    """The files in the server's private directories."""
    return [f for top in private_directories(server) for _, _, files in os.walk(top)
            for f in files]


def test_unload_takes_unload_dependents_as_tritonclient_sends_it(explicit, pb):
    unload(explicit, pb, "simple", dependents=False)
    assert not ready(explicit, pb, "simple")
    load(explicit, pb, "simple")
    unload(explicit, pb, "simple", dependents=True)
    assert not ready(explicit, pb, "simple")
    request = pb[1].RepositoryModelUnloadRequest(model_name="simple")
    request.parameters["unload_dependents"].string_param = "yes"
    stub = pb[2].GRPCInferenceServiceStub(explicit.channel())
    # Triton's grpc_server.cc words.
    assert refusal(lambda: stub.RepositoryModelUnload(request)) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "invalid value type for 'unload_dependents' parameter, expected bool_param.")
    for body in (b"", json.dumps({"parameters": {"unload_dependents": False}}).encode()):
        load(explicit, pb, "simple")
        assert post(explicit, "/v2/repository/models/simple/unload", body)[0] == 200
        assert not ready(explicit, pb, "simple")


def test_index_ready_flag_and_load_parameters_as_triton_reads_them(explicit, pb):
    stub = pb[2].GRPCInferenceServiceStub(explicit.channel())
    unload(explicit, pb, "simple")
    assert list(stub.RepositoryIndex(pb[1].RepositoryIndexRequest(ready=True)).models) == []
    assert [m.name for m in stub.RepositoryIndex(pb[1].RepositoryIndexRequest()).models] == \
        ["simple"]
    status, body = post(explicit, "/v2/repository/index", json.dumps({"ready": True}))
    assert (status, json.loads(body)) == (200, [])
    assert json.loads(post(explicit, "/v2/repository/index", b"")[1])[0]["name"] == "simple"
    assert json.loads(post(explicit, "/v2/repository/index", b'{"ready": 1}')[1]) == {
        "error": "Invalid value for 'ready': expected a boolean"}
    config = json.dumps(dict(SENT, name="simple", max_batch_size=4))
    load(explicit, pb, "simple", config=config)
    assert stub.ModelConfig(pb[1].ModelConfigRequest(name="simple")).config.max_batch_size == 4
    status, _ = post(explicit, "/v2/repository/models/simple/load",
                     json.dumps({"parameters": {"config": config.replace("4", "2", 1)}}))
    assert status == 200
    assert refusal(lambda: load(explicit, pb, "simple", other="x")) == (
        grpc.StatusCode.INVALID_ARGUMENT, "unrecognized load parameter 'other'.")
    assert refusal(lambda: load(explicit, pb, "simple", files={"config": b"{}"})) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "invalid value type for load parameter 'config', expected string_param.")
    assert refusal(lambda: load(explicit, pb, "simple", **{"file:1/model.onnx": "x"})) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "invalid value type for load parameter 'file:1/model.onnx', expected bytes_param.")
    request = pb[1].RepositoryModelLoadRequest(model_name="simple", repository_name="r")
    assert refusal(lambda: stub.RepositoryModelLoad(request)) == (
        grpc.StatusCode.UNIMPLEMENTED, "'repository_name' specification is not supported")


def test_load_errors_say_failed_to_load_as_triton_does(explicit, pb):
    code, message = refusal(lambda: load(explicit, pb, "simple", config='{"max_batch_size": '))
    assert code == grpc.StatusCode.INTERNAL
    assert message.startswith(POLL_FAILED % "simple" + ": ") and "JSON" in message
    assert adds(explicit, pb, "simple") == list(range(0, 32, 2))  # Triton's: it stays in service
    code, message = refusal(lambda: load(explicit, pb, "no_such_model"))
    assert (code, message.startswith(POLL_FAILED % "no_such_model")) == (
        grpc.StatusCode.INTERNAL, True)
    code, message = refusal(lambda: load(explicit, pb, "broken", config=json.dumps(
        dict(SENT, name="broken")), files={"file:1/model.onnx": b"\x08\x07 not a graph"}))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert message.startswith("load failed for model 'broken': ") and "model.onnx" in message
    status, body = post(explicit, "/v2/repository/models/simple/load",
                        json.dumps({"parameters": {"config": "{"}}))
    assert status == 500 and json.loads(body)["error"].startswith(POLL_FAILED % "simple")


def test_a_model_sent_as_files_loads_and_its_directory_goes_with_it(explicit, pb):
    model = onnx_bytes()
    load(explicit, pb, "sent", config=json.dumps(SENT), files={"file:1/model.onnx": model})
    assert adds(explicit, pb, "sent") == list(range(0, 32, 2))
    (private,) = private_directories(explicit)
    assert os.stat(private).st_mode & 0o777 == 0o700
    assert written(explicit) == ["model.onnx"]
    unload(explicit, pb, "sent")
    assert not ready(explicit, pb, "sent")
    assert written(explicit) == []
    # HTTP: the file's bytes in base64 (Triton's http_server.cc decodes them).
    body = {"parameters": {"config": json.dumps(dict(SENT, name="simple")),
                           "file:1/model.onnx": base64.b64encode(model).decode()}}
    status, answer = post(explicit, "/v2/repository/models/simple/load", json.dumps(body))
    assert status == 200, answer
    assert adds(explicit, pb, "simple") == list(range(0, 32, 2))
    load(explicit, pb, "simple")  # from the repository again: the sent files are let go
    assert written(explicit) == []
    load(explicit, pb, "sent", config=json.dumps(SENT), files={"file:1/model.onnx": model})
    explicit.process.send_signal(signal.SIGTERM)
    explicit.process.wait(10)
    assert private_directories(explicit) == []


def test_files_that_would_leave_their_directory_are_refused(explicit, pb, tmp_path):
    config = json.dumps(SENT)
    outside = tmp_path / "outside"
    for path in ("file:../outside", "file:1/../../outside", "file:" + str(outside)):
        code, message = refusal(lambda: load(explicit, pb, "sent", config=config,
                                             files={path: b"x", "file:1/model.onnx": b"x"}))
        assert code == grpc.StatusCode.INTERNAL, message
        assert message.startswith(POLL_FAILED % "sent" + ": Invalid file parameter '" + path)
        assert "must stay within model directory" in message
    assert not outside.exists()
    code, message = refusal(lambda: load(explicit, pb, "sent", files={"file:1/model.onnx": b"x"}))
    assert (code, message) == (grpc.StatusCode.INTERNAL, POLL_FAILED % "sent" + ": Load "
                               "parameter 'config' must be specified for model file override")
    code, message = refusal(lambda: load(explicit, pb, "../sent", config=config,
                                         files={"file:1/model.onnx": b"x"}))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "path traversal" in message
    assert written(explicit) == []


def test_a_path_component_longer_than_name_max_fails_and_the_server_stays_up(explicit, pb):
    long_name = "file:1/" + "a" * 300
    code, message = refusal(lambda: load(explicit, pb, "sent", config=json.dumps(SENT),
                                         files={long_name: b"x"}))
    assert code == grpc.StatusCode.INTERNAL and message.startswith(POLL_FAILED % "sent"), message
    stub = pb[2].GRPCInferenceServiceStub(explicit.channel())
    assert stub.ServerLive(pb[1].ServerLiveRequest(), timeout=10).live
    assert adds(explicit, pb, "simple") == list(range(0, 32, 2))


def test_unloading_a_model_the_server_does_not_have_is_answered_ok(explicit, pb):
    # Triton's ModelRepositoryManager::LoadUnloadModels reports errors of loads only: an
    # unload of a name it has no model of unloads nothing, and succeeds (gRPC and HTTP).
    unload(explicit, pb, "no_such_model")
    assert post(explicit, "/v2/repository/models/no_such_model/unload", b"")[0] == 200
    assert ready(explicit, pb, "simple")
