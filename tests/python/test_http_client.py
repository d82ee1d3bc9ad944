"""sonic's http:// client transport against servers it did not write: a server that answers as
Triton's HTTP frontend does (triton_http_server.py, from Triton's http_server.cc), raw-socket
servers that answer wrongly, and sonic-server's own HTTP port, whose answers must equal its
gRPC port's."""

import socket
import threading
import time

import numpy as np
import pytest

import sonic
from test_http import http_port
from triton_http_server import TritonHttpServer


@pytest.fixture(scope="module")
def triton():
    with TritonHttpServer(slow_seconds=2.0) as server:
        yield server


def test_inference_both_ways_in_binary(triton):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    with sonic.Client(triton.url) as client:
        result = client.infer("simple", {"INPUT0": a, "INPUT1": b}, request_id="r-1")
        np.testing.assert_array_equal(result["OUTPUT0"], a + b)
        np.testing.assert_array_equal(result["OUTPUT1"], a - b)
        strings = np.array([[b"first", b"", b"\x00\xff third"]], dtype=object)
        echoed = client.infer("simple_identity", {"INPUT0": strings})["OUTPUT0"]
        assert [bytes(e) for e in echoed.reshape(-1)] == list(strings.reshape(-1))


def test_large_tensors_cross_unchanged(triton):
    # 8 MiB each way: the answer's bytes are read straight into the output's buffer.
    values = np.random.default_rng(7).standard_normal((512, 4096)).astype(np.float32)
    with sonic.Client(triton.url) as client:
        np.testing.assert_array_equal(client.infer("identity_fp32", {"INPUT0": values})["OUTPUT0"],
                                      values)


@pytest.mark.parametrize("compression", ["gzip", "deflate"])
def test_compressed_requests_and_answers(triton, compression):
    values = np.zeros((64, 1024), dtype=np.float32)  # compresses well
    values[::7, ::3] = 1.5
    del triton.encodings[:]
    with sonic.Client(triton.url, compression=compression) as client:
        np.testing.assert_array_equal(client.infer("identity_fp32", {"INPUT0": values})["OUTPUT0"],
                                      values)
        strings = np.array([[b"one", b"two"]], dtype=object)
        echoed = client.infer("simple_identity", {"INPUT0": strings})["OUTPUT0"]
        assert [bytes(e) for e in echoed.reshape(-1)] == [b"one", b"two"]
    assert triton.encodings == [compression, compression]


def test_named_outputs_come_in_the_order_asked(triton):
    a = np.ones((1, 16), dtype=np.int32)
    with sonic.Client(triton.url) as client:
        result = client.infer("simple", {"INPUT0": a, "INPUT1": a}, outputs=["OUTPUT1"])
        np.testing.assert_array_equal(result["OUTPUT1"], np.zeros((1, 16), np.int32))
        with pytest.raises(KeyError):
            result["OUTPUT0"]


def test_control_calls_read_the_rest_answers(triton):
    with sonic.Client(triton.url) as client:
        assert client.server_live() and client.server_ready()
        assert client.model_ready("simple") and not client.model_ready("nosuch")
        metadata = client.model_metadata("simple")
        assert metadata["inputs"][0] == {"name": "INPUT0", "datatype": "INT32", "shape": [-1, 16]}
        assert "binary_tensor_data" in client.server_metadata()["extensions"]
        config = client.model_config("identity_fp32")
        assert config["name"] == "identity_fp32"
        assert config["input"][0]["data_type"] == "TYPE_FP32"
        client.infer("identity_fp32", {"INPUT0": np.zeros((1, 1), np.float32)})
        (stats,) = client.model_statistics("identity_fp32")
        assert stats["inference_count"] >= 1
        assert stats["inference_stats"]["success"]["count"] >= 1
        assert "slow" in {m["name"] for m in client.repository_index()}


def test_load_and_unload_reach_the_repository(triton):
    with sonic.Client(triton.url) as client:
        client.unload_model("simple_identity")
        try:
            assert not client.model_ready("simple_identity")
            states = {m["name"]: m["state"] for m in client.repository_index()}
            assert states["simple_identity"] == "UNAVAILABLE"
        finally:
            client.load_model("simple_identity")
        assert client.model_ready("simple_identity")


def test_errors_carry_tritons_words_and_codes(triton):
    a = np.ones((1, 16), dtype=np.int32)
    with sonic.Client(triton.url, validate_inputs=False, max_attempts=1) as client:
        with pytest.raises(sonic.NotFound, match="unknown model: 'nosuch'"):
            client.infer("nosuch", {"INPUT0": a})
        with pytest.raises(sonic.InvalidArgument, match="data-type is 'FP32'"):
            client.infer("simple", {"INPUT0": a.astype(np.float32), "INPUT1": a})


def test_keep_alive_holds_connections_to_the_limit(triton):
    before = triton.connections
    a = np.ones((1, 16), dtype=np.int32)
    with sonic.Client(triton.url, http_connections=2, share_connections=False) as client:
        futures = [client.infer_async("simple", {"INPUT0": a, "INPUT1": a}) for _ in range(64)]
        for future in futures:
            future.result(timeout=30)
        for _ in range(16):
            client.infer("simple", {"INPUT0": a, "INPUT1": a})
    # Blocking calls drive a connection of the calling thread's own: one more.
    assert triton.connections - before <= 3


def test_a_destroyed_client_closes_its_connections(triton):
    a = np.ones((1, 16), dtype=np.int32)
    deadline = time.monotonic() + 10
    while triton.open_connections and time.monotonic() < deadline:  # other tests' clients
        time.sleep(0.01)
    client = sonic.Client(triton.url, share_connections=False, drive_blocking_calls=False)
    futures = [client.infer_async("simple", {"INPUT0": a, "INPUT1": a}) for _ in range(4)]
    for future in futures:
        future.result(timeout=30)
    assert triton.open_connections >= 1
    client.close()
    deadline = time.monotonic() + 5
    while triton.open_connections and time.monotonic() < deadline:
        time.sleep(0.01)
    assert triton.open_connections == 0


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def test_connection_attempts_to_a_dead_server_cost_no_memory():
    # Each failed attempt makes a pool and a connection (a 16 KiB read buffer among them): all
    # must go with the attempt, however long the server stays down.
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    url = "http://127.0.0.1:%d" % dead.getsockname()[1]
    dead.close()
    a = np.ones((1, 4), np.float32)
    with sonic.Client(url, reconnect_backoff=0.001, reconnect_backoff_max=0.001,
                      max_attempts=1, validate_inputs=False) as client:
        def attempts(n):
            for _ in range(n):
                with pytest.raises(sonic.Unavailable):
                    client.infer("m", {"INPUT0": a}, timeout=5)
        attempts(200)  # the steady state's allocations
        before = resident_bytes()
        attempts(3000)
        grown = resident_bytes() - before
    assert grown < 8 << 20, "%d KiB more after 3000 failed attempts" % (grown >> 10)


def test_a_server_that_closes_after_answering_costs_nothing(triton):
    a = np.ones((1, 16), dtype=np.int32)
    before = triton.connections
    with sonic.Client(triton.url, headers={"x-test-close": "1"}, max_attempts=1,
                      validate_inputs=False) as client:
        for _ in range(5):
            client.infer("simple", {"INPUT0": a, "INPUT1": a})
    assert triton.connections - before == 5


def test_deadline_ends_the_call_and_the_next_one_works(triton):
    values = np.ones((1, 4), np.float32)
    with sonic.Client(triton.url, max_attempts=1) as client:
        begun = time.monotonic()
        with pytest.raises(sonic.DeadlineExceeded):
            client.infer("slow", {"INPUT0": values}, timeout=0.2)
        assert time.monotonic() - begun < 1.5
        np.testing.assert_array_equal(client.infer("identity_fp32", {"INPUT0": values})["OUTPUT0"],
                                      values)


class WrongServer:
    """A loopback server that answers every request with `answer` (bytes) and then stops
    talking, to see what the client makes of answers no HTTP server should give."""

    def __init__(self, answer):
        self.answer = answer
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d" % self.socket.getsockname()[1]
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while True:
            try:
                peer, _ = self.socket.accept()
            except OSError:
                return
            with peer:
                peer.recv(65536)
                peer.sendall(self.answer)
                time.sleep(0.5)

    def close(self):
        self.socket.close()


@pytest.mark.parametrize("answer, error, words", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", sonic.ResourceExhausted,
     "exceeds max_message_bytes"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", sonic.Unavailable, "chunked"),
    (b"SSH-2.0-OpenSSH_9.2\r\n\r\n", sonic.Unavailable, "not HTTP"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Length: 11\r\n\r\n", sonic.Unavailable,
     "conflicting Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\nInference-Header-Content-Length: 20\r\n\r\n"
     b'{"outputs":[]}      ' + b"x" * 20, sonic.Internal, "binary data"),
])
def test_wrong_answers_fail_the_call_cleanly(answer, error, words):
    server = WrongServer(answer)
    try:
        with sonic.Client(server.url, validate_inputs=False, max_attempts=1,
                          max_message_bytes=1 << 20) as client:
            with pytest.raises(error, match=words):
                client.infer("m", {"INPUT0": np.ones((1, 4), np.float32)}, timeout=5)
    finally:
        server.close()


def test_sonic_servers_http_port_answers_as_its_grpc_port(models):
    from conftest import Server
    server = Server("--model-repository", models, "--http-port", "0")
    try:
        url = "http://127.0.0.1:%d" % http_port(server)
        features = np.random.default_rng(3).standard_normal((4, 16)).astype(np.float32)
        with sonic.Client(url) as over_http, sonic.Client(server.grpc) as over_grpc:
            answer = over_http.infer("jet_mlp_onnx", {"features": features})
            expected = over_grpc.infer("jet_mlp_onnx", {"features": features})
            np.testing.assert_array_equal(answer["probabilities"], expected["probabilities"])
            assert (over_http.model_metadata("jet_mlp_onnx") ==
                    over_grpc.model_metadata("jet_mlp_onnx"))
            assert over_http.model_ready("jet_mlp_onnx")
        with sonic.Client(url, compression="gzip") as compressed:
            np.testing.assert_array_equal(
                compressed.infer("jet_mlp_onnx", {"features": features})["probabilities"],
                expected["probabilities"])
    finally:
        server.stop()
