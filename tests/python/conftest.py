"""Fixtures of the Python binding tests: a sonic-server on loopback ports it picks, stopped at
the end of the session. The build (tests/python/CMakeLists.txt) sets SONIC_SERVER,
SONIC_TEST_MODELS and PYTHONPATH (the build tree's package)."""

import os
import re
import subprocess
import sys
import tempfile
import time

import pytest


class Server:
    """A sonic-server child: `grpc` and `tcp` are its URLs."""

    def __init__(self, *options, env=None):
        self.log = tempfile.NamedTemporaryFile(prefix="sonic-server-", suffix=".log")
        self.process = subprocess.Popen(
            [os.environ["SONIC_SERVER"], "--host", "127.0.0.1", "--port", "0",
             "--tcp-port", "0", *options],
            stdout=self.log, stderr=subprocess.STDOUT,
            env=None if env is None else {**os.environ, **env})
        deadline = time.monotonic() + 20
        grpc = tcp = None
        while time.monotonic() < deadline and not (grpc and tcp):
            text = open(self.log.name).read()
            grpc = re.search(r"^sonic-server listening on .*:(\d+)$", text, re.M)
            tcp = re.search(r"^sonic-server tcp listening on .*:(\d+)$", text, re.M)
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        if not (grpc and tcp):
            self.stop()
            raise RuntimeError("sonic-server did not start: " + open(self.log.name).read())
        self.grpc = "grpc://127.0.0.1:%s" % grpc.group(1)
        self.tcp = "tcp://127.0.0.1:%s" % tcp.group(1)
        self.shm = "grpc+shm://127.0.0.1:%s" % grpc.group(1)

    def stop(self):
        stop_process(self.process)
        self.log.close()


def stop_process(process):
    """SIGTERM, then SIGKILL if it is still there after 10 s; reaped either way."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def server():
    started = Server()
    yield started
    started.stop()


@pytest.fixture(scope="session")
def models():
    """The generated Triton repository (jet_mlp_onnx, ...), or a skip when not generated."""
    path = os.environ.get("SONIC_TEST_MODELS")
    if not path or not os.path.isdir(os.path.join(path, "repository")):
        pytest.skip("no generated model repository (SONIC_TEST_MODELS)")
    return os.path.join(path, "repository")


@pytest.fixture
def certificates(tmp_path):
    """A directory of certificates made for the test (tests/support/make_test_certificates.sh
    lists them), with the openssl command."""
    script = os.path.join(os.path.dirname(__file__), "..", "support", "make_test_certificates.sh")
    subprocess.run([script, str(tmp_path / "tls")], check=True)
    return tmp_path / "tls"


@pytest.fixture
def dead_url():
    """A loopback URL where nothing listens: a port bound and closed again."""
    import socket
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return "grpc://127.0.0.1:%d" % port


@pytest.fixture
def silent_url():
    """A loopback URL whose listener never answers: connections open (the kernel completes
    them), requests go out, and nothing comes back, so a request lasts until it is cancelled
    or its deadline passes."""
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    yield "grpc://127.0.0.1:%d" % listener.getsockname()[1]
    listener.close()


@pytest.fixture(scope="session")
def stubs(tmp_path_factory):
    """grpc_service_pb2 and grpc_service_pb2_grpc, generated from proto/ by grpc_tools (the
    interoperability tests' generator): Google's gRPC stack, to call sonic-server with."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "interop"))
    from stubs import load_stubs
    _, pb2, pb2_grpc = load_stubs(os.path.join(here, "..", "..", "proto"),
                                  str(tmp_path_factory.mktemp("stubs")))
    return pb2, pb2_grpc
