"""Fixtures of the Triton repository tests: grpcio stubs of sonic's protos and of gRPC's health
service, sonic-server children on loopback ports they pick, and copies of Triton's example
repository. The build (tests/triton_repository/CMakeLists.txt) sets SONIC_SERVER, SONIC_PROTO_DIR
and PYTHONPATH (the build tree's sonic package)."""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import grpc
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
sys.path.insert(0, HERE)

import make_models  # noqa: E402
import stubs  # noqa: E402


class Server:
    """A sonic-server child; `address` is its gRPC host:port once it listens."""

    def __init__(self, *options, wait=True):
        self.log = tempfile.NamedTemporaryFile(prefix="sonic-server-", suffix=".log")
        self.process = subprocess.Popen(
            [os.environ["SONIC_SERVER"], "--host", "127.0.0.1", "--port", "0", *options],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.address = None
        if wait and not self.wait_listening(30):
            self.stop()
            raise RuntimeError("sonic-server did not start: " + self.output())

    def output(self):
        with open(self.log.name) as f:
            return f.read()

    def wait_listening(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.process.poll() is None:
            found = re.search(r"^sonic-server listening on (.*:\d+)$", self.output(), re.M)
            if found:
                self.address = found.group(1)
                return True
            time.sleep(0.05)
        return False

    def channel(self):
        return grpc.insecure_channel(self.address)

    def stop(self):
        """SIGTERM; the server must end by itself, with status 0 (a sanitizer's report, or a
        server that had to be killed, fails the test)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        output = self.output()
        self.log.close()
        assert self.process.returncode == 0, output


@pytest.fixture(scope="session")
def pb(tmp_path_factory):
    """(model_config_pb2, grpc_service_pb2, grpc_service_pb2_grpc) of sonic's proto/."""
    return stubs.load_stubs(os.environ["SONIC_PROTO_DIR"], str(tmp_path_factory.mktemp("stubs")))


@pytest.fixture(scope="session")
def health_pb(tmp_path_factory):
    """(health_pb2, health_pb2_grpc), generated from health.proto with grpc_tools."""
    out = str(tmp_path_factory.mktemp("health"))
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + HERE, "--python_out=" + out,
                    "--grpc_python_out=" + out, os.path.join(HERE, "health.proto")], check=True)
    sys.path.insert(0, out)
    import health_pb2  # noqa: E402
    import health_pb2_grpc  # noqa: E402
    return health_pb2, health_pb2_grpc


@pytest.fixture(scope="session")
def triton_repository(tmp_path_factory):
    """A copy of Triton's example repository: its configs as published, models made here."""
    return make_models.make(str(tmp_path_factory.mktemp("triton") / "model_repository"))


@pytest.fixture(scope="session")
def triton_server(triton_repository):
    started = Server("--model-repository", triton_repository)
    yield started
    started.stop()
