"""Bearer tokens from Python: sonic.Client(token_file=..., bearer_token=...) against
sonic-server --auth-token-file, over grpc:// and tcp://; and Google's grpcio, which knows
nothing of sonic, sending the same "authorization" metadata to the same server."""

import os
import sys

import numpy as np
import pytest

import sonic
from conftest import Server

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = {"INPUT0": np.ones((1, 16), np.int32), "INPUT1": np.ones((1, 16), np.int32)}


@pytest.fixture(scope="module")
def token_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("token") / "token"
    path.write_text("py-s3cret\n")
    return str(path)


@pytest.fixture(scope="module")
def guarded(token_file):
    started = Server("--auth-token-file", token_file)
    yield started
    started.stop()


@pytest.mark.parametrize("scheme", ["grpc", "tcp"])
def test_without_the_token_every_call_is_unauthenticated(guarded, scheme):
    url = guarded.grpc if scheme == "grpc" else guarded.tcp
    with sonic.Client(url, max_attempts=1) as client:
        with pytest.raises(sonic.Unauthenticated):
            client.infer("simple", INPUTS)
        with pytest.raises(sonic.Unauthenticated):
            client.model_metadata("simple")
    with sonic.Client(url, bearer_token="not-it", max_attempts=1) as client:
        with pytest.raises(sonic.Unauthenticated):
            client.infer("simple", INPUTS)


@pytest.mark.parametrize("scheme", ["grpc", "tcp"])
def test_the_token_from_a_file_or_a_string_is_let_in(guarded, token_file, scheme):
    url = guarded.grpc if scheme == "grpc" else guarded.tcp
    for option in ({"token_file": token_file}, {"bearer_token": "py-s3cret"}):
        with sonic.Client(url, **option) as client:
            out = client.infer("simple", INPUTS)
            assert out["OUTPUT0"][0, 0] == 2


def test_grpcio_with_the_same_metadata(guarded, tmp_path):
    """The header is the one gRPC's own clients send (call metadata), not a sonic invention."""
    grpc = pytest.importorskip("grpc")
    sys.path.insert(0, os.path.join(HERE, "..", "interop"))
    from stubs import load_stubs
    _, pb2, pb2_grpc = load_stubs(os.path.join(HERE, "..", "..", "proto"), str(tmp_path))
    target = guarded.grpc[len("grpc://"):]
    with grpc.insecure_channel(target) as channel:
        stub = pb2_grpc.GRPCInferenceServiceStub(channel)
        request = pb2.ServerReadyRequest()
        with pytest.raises(grpc.RpcError) as refused:
            stub.ServerReady(request, timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert stub.ServerReady(request, timeout=10,
                                metadata=[("authorization", "Bearer py-s3cret")]).ready
