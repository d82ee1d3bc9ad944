"""No model can hang or take down sonic-server: a load that blocks passes its time limit and
leaves its model UNAVAILABLE, a broken file fails alone, and SIGTERM ends the server within 2 s
at any moment, loads included. A model file that is a named pipe makes a load that blocks for
real: the backend's read waits for a writer that never comes."""

import os
import shutil
import signal
import time

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
