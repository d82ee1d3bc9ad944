"""Over 500 lines: one test per route and per hostile client, all on the same port.

sonic-server's HTTP/REST port (Triton's 8000, KServe v2 REST) driven by independent clients:
Python's http.client and raw sockets, and curl. The answers are those of Triton's HTTP frontend
(server src/http_server.cc): empty 200/400 for health, {"error": ...} bodies with the status
Triton derives from the error's code, JSON tensors flat in row-major order, and the binary
tensor data extension (Inference-Header-Content-Length). Hostile clients are cut off with a
bounded cost while the port keeps serving."""

import gzip
import http.client
import json
import re
import shutil
import socket
import subprocess
import time
import zlib

import numpy as np
import pytest

import sonic
from conftest import Server


def http_port(server):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = re.search(r"^sonic-server http listening on .*:(\d+)$",
                          open(server.log.name).read(), re.M)
        if found:
            return int(found.group(1))
        time.sleep(0.02)
    raise RuntimeError("no HTTP port: " + open(server.log.name).read())


@pytest.fixture(scope="module")
def rest():
    """A sonic-server with a free HTTP port, a 1 MiB message limit and short timeouts."""
    started = Server("--max-message-bytes", "1M", "--handshake-timeout", "1",
                     "--stall-timeout", "1")
    started.http_port = http_port(started)
    yield started
    started.stop()


def request(port, method, path, body=None, headers=None, connection=None):
    """(status, headers, body bytes) of one request; `connection` is reused when given."""
    own = connection is None
    connection = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        if own:
            connection.close()


def infer_json(port, model, body, headers=None):
    status, headers, raw = request(port, "POST", "/v2/models/%s/infer" % model,
                                   json.dumps(body), headers)
    return status, headers, raw


SIMPLE_INPUTS = [
    {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": list(range(16))},
    # Nested arrays are read in row-major order, as flat ones.
    {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": [[1] * 16]},
]


def test_health_and_metadata(rest):
    port = rest.http_port
    for path in ("/v2/health/live", "/v2/health/ready"):
        status, _, body = request(port, "GET", path)
        assert (status, body) == (200, b"")
    status, headers, body = request(port, "POST", "/v2/health/live")
    assert status == 405
    assert json.loads(body) == {"error": "Method Not Allowed"}

    status, headers, body = request(port, "GET", "/v2")
    assert status == 200 and headers["Content-Type"] == "application/json"
    metadata = json.loads(body)
    assert metadata["name"] == "sonic-server"
    assert "binary_tensor_data" in metadata["extensions"]

    # A model's metadata says what the gRPC port says of it.
    status, _, body = request(port, "GET", "/v2/models/simple")
    assert status == 200
    rest_view = json.loads(body)
    with sonic.Client(rest.grpc) as client:
        grpc_view = client.model_metadata("simple")
    assert rest_view["name"] == "simple"
    assert [(t["name"], t["datatype"], t["shape"]) for t in rest_view["inputs"]] == \
        [(t["name"], t["datatype"], list(t["shape"])) for t in grpc_view["inputs"]]
    assert request(port, "GET", "/v2/models/simple/versions/1")[0] == 200

    assert request(port, "GET", "/v2/models/simple/ready")[:1] == (200,)
    status, _, body = request(port, "GET", "/v2/models/no_such_model/ready")
    assert status == 400 and json.loads(body) == {"error": "Model version not ready"}
    status, _, body = request(port, "GET", "/v2/models/no_such_model")
    assert status == 404 and "error" in json.loads(body)
    # A path the port does not serve: Triton's bare 400.
    assert request(port, "GET", "/v2/nothing/here")[0] == 400


def test_json_inference(rest):
    status, headers, body = infer_json(rest.http_port, "simple",
                                       {"id": "r1", "inputs": SIMPLE_INPUTS})
    assert status == 200, body
    answer = json.loads(body)
    assert answer["model_name"] == "simple" and answer["id"] == "r1"
    outputs = {o["name"]: o for o in answer["outputs"]}
    assert outputs["OUTPUT0"]["data"] == [i + 1 for i in range(16)]
    assert outputs["OUTPUT1"]["data"] == [i - 1 for i in range(16)]
    assert outputs["OUTPUT0"]["shape"] == [1, 16] and outputs["OUTPUT0"]["datatype"] == "INT32"
    # Asking for one output returns that one.
    status, _, body = infer_json(rest.http_port, "simple",
                                 {"inputs": SIMPLE_INPUTS, "outputs": [{"name": "OUTPUT1"}]})
    assert [o["name"] for o in json.loads(body)["outputs"]] == ["OUTPUT1"]


def binary_body(header, *arrays):
    text = json.dumps(header).encode()
    return text + b"".join(a.tobytes() for a in arrays), len(text)


def split_binary(headers, body):
    length = int(headers["Inference-Header-Content-Length"])
    return json.loads(body[:length]), body[length:]


def test_binary_inputs_and_outputs(rest):
    values = np.random.default_rng(3).standard_normal((2, 64)).astype(np.float32)
    header = {"inputs": [{"name": "INPUT0", "shape": [2, 64], "datatype": "FP32",
                          "parameters": {"binary_data_size": values.nbytes}}],
              "parameters": {"binary_data_output": True}}
    body, length = binary_body(header, values)
    status, headers, raw = request(rest.http_port, "POST", "/v2/models/identity_fp32/infer",
                                   body, {"Inference-Header-Content-Length": str(length)})
    assert status == 200, raw
    answer, data = split_binary(headers, raw)
    out = answer["outputs"][0]
    assert out["parameters"]["binary_data_size"] == values.nbytes and "data" not in out
    assert np.array_equal(np.frombuffer(data, np.float32).reshape(2, 64), values)

    # One output as JSON despite binary_data_output: its own parameter wins.
    header["outputs"] = [{"name": "OUTPUT0", "parameters": {"binary_data": False}}]
    body, length = binary_body(header, values)
    status, headers, raw = request(rest.http_port, "POST", "/v2/models/identity_fp32/infer",
                                   body, {"Inference-Header-Content-Length": str(length)})
    assert status == 200 and "Inference-Header-Content-Length" not in headers
    out = json.loads(raw)["outputs"][0]
    assert np.allclose(np.array(out["data"], np.float32), values.ravel())


def test_compressed_bodies_both_ways(rest):
    """Triton's HTTP frontend inflates a request body sent with Content-Encoding gzip or deflate
    (Inference-Header-Content-Length measures the inflated JSON), and compresses the answer for
    a client whose Accept-Encoding lists one. A body that inflates past --max-message-bytes
    (1 MiB here) is refused, and the port goes on serving."""
    values = np.random.default_rng(5).standard_normal((2, 64)).astype(np.float32)
    header = {"inputs": [{"name": "INPUT0", "shape": [2, 64], "datatype": "FP32",
                          "parameters": {"binary_data_size": values.nbytes}}],
              "parameters": {"binary_data_output": True}}
    body, length = binary_body(header, values)
    path = "/v2/models/identity_fp32/infer"
    status, headers, raw = request(rest.http_port, "POST", path, gzip.compress(body),
                                   {"Inference-Header-Content-Length": str(length),
                                    "Content-Encoding": "gzip", "Accept-Encoding": "gzip"})
    assert status == 200, raw
    assert headers["Content-Encoding"] == "gzip"
    answer, data = split_binary(headers, gzip.decompress(raw))
    assert np.array_equal(np.frombuffer(data, np.float32).reshape(2, 64), values)

    # deflate is a zlib stream, as HTTP and gRPC name it; no Accept-Encoding, no compression.
    status, headers, raw = request(rest.http_port, "POST", path, zlib.compress(body),
                                   {"Inference-Header-Content-Length": str(length),
                                    "Content-Encoding": "deflate"})
    assert status == 200 and "Content-Encoding" not in headers, raw
    assert split_binary(headers, raw)[1] == values.tobytes()

    # A bomb: 16 MiB of zeros in about 16 KiB.
    bomb = gzip.compress(json.dumps({"inputs": []}).encode() + bytes(16 << 20))
    status, _, raw = request(rest.http_port, "POST", path, bomb,
                             {"Inference-Header-Content-Length": "13",
                              "Content-Encoding": "gzip"})
    assert status == 400 and b"inflates past the limit" in raw, raw
    status, _, raw = request(rest.http_port, "POST", path, b"not gzip at all",
                             {"Content-Encoding": "gzip"})
    assert status == 500 and b"invalid compressed message" in raw, raw
    status, _, raw = request(rest.http_port, "POST", path, body, {"Content-Encoding": "br"})
    assert status == 501 and b"unsupported Content-Encoding" in raw, raw
    assert request(rest.http_port, "GET", "/v2/health/ready")[0] == 200


def test_json_of_the_wrong_shape_is_answered(rest):
    """A name that is a number, a datatype that is not a string: answered 400 with the reason,
    on the same connection, which goes on serving (it once got no answer at all)."""
    connection = http.client.HTTPConnection("127.0.0.1", rest.http_port, timeout=10)
    try:
        for entry in ({"name": 5, "shape": [1], "datatype": "FP32", "data": [1]},
                      {"name": "INPUT0", "shape": [1, 1], "datatype": 7, "data": [1]}):
            status, _, body = request(rest.http_port, "POST", "/v2/models/identity_fp32/infer",
                                      json.dumps({"inputs": [entry]}), connection=connection)
            assert status == 400 and b"malformed request JSON" in body, body
        assert request(rest.http_port, "GET", "/v2/health/ready", connection=connection)[0] == 200
    finally:
        connection.close()


def test_bytes_and_bool_tensors_as_json(rest):
    strings = ["", "a", "héllo", "x" * 300]
    status, _, body = infer_json(rest.http_port, "identity_bytes", {"inputs": [
        {"name": "INPUT0", "shape": [1, 4], "datatype": "BYTES", "data": strings}]})
    assert status == 200, body
    assert json.loads(body)["outputs"][0]["data"] == strings
    status, _, body = infer_json(rest.http_port, "identity_bool", {"inputs": [
        {"name": "INPUT0", "shape": [1, 3], "datatype": "BOOL", "data": [True, False, True]}]})
    assert status == 200, body
    assert json.loads(body)["outputs"][0]["data"] == [True, False, True]


def test_errors_have_triton_bodies(rest):
    port = rest.http_port
    cases = [
        (b"{not json", 400),
        (json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "FP16",
                                 "data": [0] * 16}]}).encode(), 400),
        (json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "INT32",
                                 "data": [1.5] * 16}]}).encode(), 400),
        (json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "INT32",
                                 "parameters": {"binary_data_size": 64}}]}).encode(), 400),
    ]
    for body, expected in cases:
        status, headers, raw = request(port, "POST", "/v2/models/simple/infer", body)
        assert status == expected, raw
        assert headers["Content-Type"] == "application/json"
        assert json.loads(raw)["error"]
    status, _, raw = infer_json(port, "no_such_model", {"inputs": SIMPLE_INPUTS})
    assert status in (400, 404) and json.loads(raw)["error"]
    assert request(port, "GET", "/v2/models/simple/infer")[0] == 405


def test_keep_alive_and_pipelining(rest):
    connection = http.client.HTTPConnection("127.0.0.1", rest.http_port, timeout=10)
    try:  # several requests, an error among them, on one connection
        for _ in range(3):
            assert request(rest.http_port, "GET", "/v2/health/ready",
                           connection=connection)[0] == 200
            assert request(rest.http_port, "POST", "/v2/models/simple/infer", "{}",
                           connection=connection)[0] == 400
    finally:
        connection.close()
    # Two requests in one write are answered in order.
    body = json.dumps({"inputs": SIMPLE_INPUTS}).encode()
    infer = (b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
             % len(body)) + body
    health = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", rest.http_port), timeout=10) as s:
        s.sendall(infer + health)
        received = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            received += chunk
    answers = re.findall(rb"HTTP/1.1 (\d+) ", received)
    assert answers == [b"200", b"200"]
    assert received.index(b"OUTPUT0") < received.rindex(b"HTTP/1.1 200")


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl(rest):
    base = "http://127.0.0.1:%d" % rest.http_port
    ready = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                            base + "/v2/health/ready"], capture_output=True, text=True, timeout=20)
    assert ready.stdout == "200"
    # A body over 1 KiB with Expect: 100-continue, as curl sends large ones.
    inputs = [dict(SIMPLE_INPUTS[0], data=list(range(16))), SIMPLE_INPUTS[1]]
    body = json.dumps({"id": "c" * 2000, "inputs": inputs})
    answer = subprocess.run(["curl", "-s", "--fail-with-body", "-H", "Expect: 100-continue",
                             "-H", "Content-Type: application/json", "--data-binary", body,
                             base + "/v2/models/simple/infer"],
                            capture_output=True, text=True, timeout=20)
    assert answer.returncode == 0, answer.stdout + answer.stderr
    assert json.loads(answer.stdout)["outputs"][0]["data"] == [i + 1 for i in range(16)]


def closed_within(s, seconds):
    """True when the server closes `s` within `seconds` (whatever it sends first)."""
    s.settimeout(seconds)
    try:
        while s.recv(4096):
            pass
        return True
    except socket.timeout:
        return False


def test_hostile_clients_are_cut_off_and_the_port_keeps_serving(rest):
    port = rest.http_port
    with socket.create_connection(("127.0.0.1", port)) as s:  # a head past 16 KiB
        s.sendall(b"GET /v2 HTTP/1.1\r\n" + b"X-Pad: " + b"a" * 20000 + b"\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 431")
    with socket.create_connection(("127.0.0.1", port)) as s:  # a body past the message limit
        s.sendall(b"POST /v2/models/simple/infer HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 413")
    with socket.create_connection(("127.0.0.1", port)) as s:  # chunked: its length unknown
        s.sendall(b"POST /v2/models/simple/infer HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 411")
    with socket.create_connection(("127.0.0.1", port)) as s:  # two lengths: which one ends it?
        s.sendall(b"POST /v2/models/simple/infer HTTP/1.1\r\nContent-Length: 2\r\n"
                  b"Content-Length: 40\r\n\r\n{}")
        assert s.recv(100).startswith(b"HTTP/1.1 400")
    with socket.create_connection(("127.0.0.1", port)) as s:  # a length that is not a number
        s.sendall(b"POST /v2/models/simple/infer HTTP/1.1\r\nContent-Length: 1x\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400")
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as s:  # a head a byte at a time
        try:  # the whole head is due within the 1 s handshake timeout, however it trickles
            for byte in b"GET /v2/health/ready HTTP/1.1\r\nX-Slow: " + b"a" * 100:
                s.sendall(bytes([byte]))
                time.sleep(0.05)
            assert closed_within(s, 4)
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed while the client still sent
    assert time.monotonic() - start < 6
    with socket.create_connection(("127.0.0.1", port)) as s:  # a body that stops coming
        s.sendall(b"POST /v2/models/simple/infer HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{")
        assert closed_within(s, 4)
    # The port still serves.
    assert request(port, "GET", "/v2/health/ready")[0] == 200


def test_https_with_the_servers_certificate(certificates):
    """--tls-cert serves the HTTP port over TLS too, and no plaintext there."""
    import ssl
    server = Server("--tls-cert", str(certificates / "server.pem"),
                    "--tls-key", str(certificates / "server.key"))
    try:
        port = http_port(server)
        context = ssl.create_default_context(cafile=str(certificates / "ca.pem"))
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
        try:
            assert request(port, "GET", "/v2/health/ready", connection=connection)[0] == 200
            status, _, body = request(port, "POST", "/v2/models/simple/infer",
                                      json.dumps({"inputs": SIMPLE_INPUTS}),
                                      connection=connection)
            assert status == 200, body
            assert json.loads(body)["outputs"][0]["data"] == [i + 1 for i in range(16)]
        finally:
            connection.close()
        # Plaintext is not served on it.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n")
            assert not s.recv(100).startswith(b"HTTP/1.1 200")
        if shutil.which("curl"):
            answer = subprocess.run(["curl", "-s", "--cacert", str(certificates / "ca.pem"),
                                     "-o", "/dev/null", "-w", "%{http_code}",
                                     "https://127.0.0.1:%d/v2/health/live" % port],
                                    capture_output=True, text=True, timeout=20)
            assert answer.stdout == "200"
    finally:
        server.stop()


def test_statistics_and_repository_index(rest):
    """Triton's statistics and model repository extensions over HTTP: numbers, not strings."""
    port = rest.http_port

    def stats(path):
        status, _, body = request(port, "GET", path)
        assert status == 200, body
        return json.loads(body)["model_stats"]

    before = stats("/v2/models/simple/stats")[0]
    assert infer_json(port, "simple", {"inputs": SIMPLE_INPUTS})[0] == 200
    after = stats("/v2/models/simple/versions/1/stats")[0]
    assert after["name"] == "simple" and after["version"] == "1"
    assert after["inference_count"] == before["inference_count"] + 1
    success = after["inference_stats"]["success"]
    assert success["count"] == before["inference_stats"]["success"]["count"] + 1
    assert isinstance(success["ns"], int) and success["ns"] > 0
    assert after["inference_stats"]["cache_hit"] == {"count": 0, "ns": 0}
    assert {"simple", "identity_fp32"} <= {m["name"] for m in stats("/v2/models/stats")}
    status, _, body = request(port, "GET", "/v2/models/no_such_model/stats")
    assert status in (400, 404) and json.loads(body)["error"]

    status, _, body = request(port, "POST", "/v2/repository/index")
    assert status == 200
    index = json.loads(body)
    assert {"name": "simple", "version": "1", "state": "READY"} in index
    status, _, body = request(port, "POST", "/v2/repository/index", json.dumps({"ready": True}))
    assert status == 200 and all(m["state"] == "READY" for m in json.loads(body))
    assert request(port, "POST", "/v2/repository/index", "{oops")[0] == 400
    assert request(port, "GET", "/v2/repository/index")[0] == 405


def grpc_host_port(server):
    return server.grpc[len("grpc://"):]


def test_model_configuration(rest):
    """Triton's model configuration extension over HTTP: the configuration the gRPC port gives,
    printed as Triton's ModelConfigToJson prints it (protobuf's JSON with the proto's field
    names and always_print_primitive_fields, so fields at their defaults are there too, and
    dims, which protobuf writes as strings, as numbers)."""
    port = rest.http_port

    def holds(printed, expected):
        """Whether `printed` has every field of `expected`, with the same values."""
        if isinstance(expected, dict):
            return all(k in printed and holds(printed[k], v) for k, v in expected.items())
        if isinstance(expected, list):
            return len(printed) == len(expected) and all(map(holds, printed, expected))
        return printed == expected

    with sonic.Client(rest.grpc) as client:
        for model in ("simple", "identity_fp32"):
            status, headers, body = request(port, "GET", "/v2/models/%s/config" % model)
            assert status == 200 and headers["Content-Type"] == "application/json", body
            config = json.loads(body)
            expected = client.model_config(model)
            for tensor in expected["input"] + expected["output"]:
                tensor["dims"] = [int(d) for d in tensor["dims"]]
            assert holds(config, expected)
            assert all(isinstance(d, int) for t in config["input"] for d in t["dims"])
            # Fields at their defaults, which the gRPC answer's JSON leaves out.
            assert config["max_batch_size"] == expected.get("max_batch_size", 0)
            assert config["input"][0]["format"] == "FORMAT_NONE"
            assert config["input"][0]["is_shape_tensor"] is False
    status, _, body = request(port, "GET", "/v2/models/simple/versions/1/config")
    assert status == 200 and json.loads(body)["name"] == "simple"
    status, _, body = request(port, "GET", "/v2/models/no_such_model/config")
    assert status == 404 and "no_such_model" in json.loads(body)["error"]
    status, _, body = request(port, "POST", "/v2/models/simple/config")
    assert (status, json.loads(body)) == (405, {"error": "Method Not Allowed"})


def test_server_metadata_lists_the_extensions_served(rest):
    """The HTTP port lists the gRPC port's extensions (both serve the same control calls) and
    the binary tensor data extension; without shared memory, neither lists it and its routes
    answer UNIMPLEMENTED (501)."""
    import sonic.tritonclient.grpc as grpcclient

    def extensions(server):
        status, _, body = request(server.http_port, "GET", "/v2")
        assert status == 200
        with grpcclient.InferenceServerClient(grpc_host_port(server)) as client:
            over_grpc = client.get_server_metadata(as_json=True)["extensions"]
        return json.loads(body)["extensions"], over_grpc

    over_http, over_grpc = extensions(rest)
    assert over_http == over_grpc + ["binary_tensor_data"]
    assert {"model_configuration", "model_repository", "system_shared_memory"} <= set(over_http)
    plain = Server("--no-shm")
    try:
        plain.http_port = http_port(plain)
        over_http, over_grpc = extensions(plain)
        assert over_http == over_grpc + ["binary_tensor_data"]
        assert "system_shared_memory" not in over_http
        status, _, body = request(plain.http_port, "GET", "/v2/systemsharedmemory/status")
        assert status == 501 and "SystemSharedMemoryStatus" in json.loads(body)["error"]
    finally:
        plain.stop()


def test_load_and_unload_need_explicit_model_control(rest):
    port = rest.http_port
    status, _, body = request(port, "POST", "/v2/repository/models/simple/unload")
    # Triton's words and code (UNAVAILABLE: 503) when its model control mode is not explicit.
    assert status == 503
    assert json.loads(body)["error"].startswith("explicit model load / unload is not allowed")
    assert request(port, "GET", "/v2/models/simple/ready")[0] == 200
    status, _, body = request(port, "GET", "/v2/repository/models/simple/load")
    assert (status, json.loads(body)) == (405, {"error": "Method Not Allowed"})
    status, _, body = request(port, "POST", "/v2/repository/mine/models/simple/load")
    assert (status, json.loads(body)) == \
        (501, {"error": "'repository_name' specification is not supported"})


@pytest.fixture(scope="module")
def explicit():
    """A sonic-server whose clients may unload and load models (explicit model control)."""
    started = Server("--model-control-mode", "explicit")
    started.http_port = http_port(started)
    yield started
    started.stop()


def test_unload_and_load_a_model(explicit):
    """Triton's model repository extension over HTTP: an empty 200 for each call; the model is
    unavailable between them, then serves again."""
    port = explicit.http_port
    assert infer_json(port, "simple", {"inputs": SIMPLE_INPUTS})[0] == 200
    assert request(port, "POST", "/v2/repository/models/simple/unload") == \
        (200, {"Content-Length": "0"}, b"")
    assert request(port, "GET", "/v2/models/simple/ready")[0] == 400
    status, _, body = infer_json(port, "simple", {"inputs": SIMPLE_INPUTS})
    assert status == 503 and json.loads(body)["error"]
    status, _, body = request(port, "POST", "/v2/repository/index")
    assert [m["state"] for m in json.loads(body) if m["name"] == "simple"] == ["UNAVAILABLE"]

    unload_params = json.dumps({"parameters": {"unload_dependents": False}})
    assert request(port, "POST", "/v2/repository/models/simple/load")[0] == 200
    assert request(port, "GET", "/v2/models/simple/ready")[0] == 200
    assert infer_json(port, "simple", {"inputs": SIMPLE_INPUTS})[0] == 200
    assert request(port, "POST", "/v2/repository/models/simple/unload", unload_params)[0] == 200
    assert request(port, "POST", "/v2/repository/models/simple/load", "{}")[0] == 200
    assert request(port, "GET", "/v2/models/simple/ready")[0] == 200


def test_model_control_errors(explicit):
    """Errors have Triton's bodies, with the status of the gRPC port's code for the same call."""
    import sonic.tritonclient.grpc as grpcclient
    from sonic.tritonclient.utils import InferenceServerException

    port = explicit.http_port
    statuses = {"StatusCode.INVALID_ARGUMENT": 400, "StatusCode.NOT_FOUND": 404,
                "StatusCode.INTERNAL": 500}

    def same_as_grpc(path, body, call):
        status, _, answer = request(port, "POST", path, body)
        with grpcclient.InferenceServerClient(grpc_host_port(explicit)) as client:
            with pytest.raises(InferenceServerException) as failed:
                call(client)
        assert (status, json.loads(answer)) == \
            (statuses[failed.value.status()], {"error": failed.value.message()})

    same_as_grpc("/v2/repository/models/no_such_model/load", None,
                 lambda c: c.load_model("no_such_model"))
    # A model built into the server takes no configuration.
    same_as_grpc("/v2/repository/models/simple/load",
                 json.dumps({"parameters": {"config": "{}"}}),
                 lambda c: c.load_model("simple", config="{}"))
    # unload_dependents is taken on both ports, with Triton's meaning.
    with grpcclient.InferenceServerClient(grpc_host_port(explicit)) as client:
        client.unload_model("simple", unload_dependents=True)
        assert not client.is_model_ready("simple")
        client.load_model("simple")
    assert request(port, "POST", "/v2/repository/models/simple/unload",
                   json.dumps({"parameters": {"unload_dependents": True}}))[0] == 200
    assert request(port, "POST", "/v2/repository/models/simple/load")[0] == 200

    for path, body in (("/v2/repository/models/simple/load", "{oops"),
                       ("/v2/repository/models/simple/load", '{"parameters": {"config": 1}}'),
                       ("/v2/repository/models/simple/unload",
                        '{"parameters": {"unload_dependents": "yes"}}')):
        status, _, answer = request(port, "POST", path, body)
        assert status == 400 and json.loads(answer)["error"], (path, body)
    assert request(port, "GET", "/v2/models/simple/ready")[0] == 200


def test_load_with_a_configuration(models):
    """A load's "config" parameter replaces the repository's configuration for that load, and
    the configuration then printed has the 64-bit fields Triton prints as numbers as numbers."""
    server = Server("--model-repository", models, "--model-control-mode", "explicit")
    try:
        port = http_port(server)
        config = {"max_batch_size": 16,
                  "dynamic_batching": {"max_queue_delay_microseconds": "250"}}
        status, _, body = request(port, "POST", "/v2/repository/models/jet_mlp_onnx/load",
                                  json.dumps({"parameters": {"config": json.dumps(config)}}))
        assert (status, body) == (200, b"")
        status, _, body = request(port, "GET", "/v2/models/jet_mlp_onnx/config")
        assert status == 200, body
        printed = json.loads(body)
        assert printed["max_batch_size"] == 16
        assert printed["dynamic_batching"]["max_queue_delay_microseconds"] == 250
        assert printed["input"][0]["dims"] == [16]
        assert request(port, "POST", "/v2/repository/models/jet_mlp_onnx/load")[0] == 200
        status, _, body = request(port, "GET", "/v2/models/jet_mlp_onnx/config")
        assert json.loads(body)["max_batch_size"] == 64
    finally:
        server.stop()


def shm_call(connection, method, path, body=None):
    status, _, answer = request(None, method, path, None if body is None else json.dumps(body),
                                connection=connection)
    return status, json.loads(answer) if answer else None


def test_system_shared_memory(rest):
    """Triton's system shared memory extension over HTTP with a real POSIX shared memory object:
    register, status ({name, key, offset, byte_size}, numbers), unregister. A region belongs to
    its user, not to the connection that registered it: it stays until unregistered, as in
    Triton (test_http_shm.py has Triton's C++ client's connection a call)."""
    from multiprocessing import shared_memory

    segment = shared_memory.SharedMemory(create=True, size=4096)
    key = "/" + segment.name
    first = http.client.HTTPConnection("127.0.0.1", rest.http_port, timeout=10)
    second = http.client.HTTPConnection("127.0.0.1", rest.http_port, timeout=10)
    try:
        region = {"name": "http_region", "key": key, "offset": 64, "byte_size": 1024}
        assert shm_call(first, "POST", "/v2/systemsharedmemory/region/http_region/register",
                        {"key": key, "offset": 64, "byte_size": 1024}) == (200, None)
        assert shm_call(first, "GET", "/v2/systemsharedmemory/status") == (200, [region])
        assert shm_call(first, "GET", "/v2/systemsharedmemory/region/http_region/status") == \
            (200, [region])
        # Another connection of the same user sees it too.
        assert shm_call(second, "GET", "/v2/systemsharedmemory/status") == (200, [region])
        status, error = shm_call(first, "POST",
                                 "/v2/systemsharedmemory/region/http_region/register",
                                 {"key": key, "byte_size": 16})
        assert status == 400 and "http_region" in error["error"]
        assert shm_call(first, "POST",
                        "/v2/systemsharedmemory/region/http_region/unregister") == (200, None)
        assert shm_call(first, "GET", "/v2/systemsharedmemory/status") == (200, [])
        status, error = shm_call(first, "GET", "/v2/systemsharedmemory/region/http_region/status")
        assert status == 404 and "http_region" in error["error"]

        # Registered again, then the connection closes: the region stays, until unregistered.
        assert shm_call(first, "POST", "/v2/systemsharedmemory/region/r2/register",
                        {"key": key, "byte_size": 16})[0] == 200
        first.close()
        assert [r["name"] for r in shm_call(second, "GET", "/v2/systemsharedmemory/status")[1]] \
            == ["r2"]
        assert shm_call(second, "POST", "/v2/systemsharedmemory/unregister") == (200, None)
        assert shm_call(second, "GET", "/v2/systemsharedmemory/status") == (200, [])
    finally:
        first.close()
        second.close()
        segment.close()
        segment.unlink()


def test_system_shared_memory_errors(rest):
    port = rest.http_port
    cases = [
        ("/v2/systemsharedmemory/register", {"key": "/k", "byte_size": 1},
         "'region name' is necessary to register system shared memory region"),
        ("/v2/systemsharedmemory/region/r/register", {"byte_size": 1},
         "Shared memory register request has no 'key' field"),
        ("/v2/systemsharedmemory/region/r/register", {"key": "/k"},
         "Shared memory register request has no 'byte_size' field"),
    ]
    for path, body, error in cases:
        status, _, answer = request(port, "POST", path, json.dumps(body))
        assert (status, json.loads(answer)) == (400, {"error": error})
    status, _, answer = request(port, "POST", "/v2/systemsharedmemory/region/r/register",
                                json.dumps({"key": "/sonic_no_such_key", "byte_size": 16}))
    assert status == 400 and "sonic_no_such_key" in json.loads(answer)["error"]
    assert request(port, "POST", "/v2/systemsharedmemory/region/r/register", "{oops")[0] == 400
    for method, path in (("POST", "/v2/systemsharedmemory/status"),
                         ("GET", "/v2/systemsharedmemory/region/r/register"),
                         ("GET", "/v2/cudasharedmemory/unregister")):
        status, _, answer = request(port, method, path)
        assert (status, json.loads(answer)) == (405, {"error": "Method Not Allowed"})
    assert request(port, "GET", "/v2/systemsharedmemory/region/r/other")[0] == 400


def test_cuda_shared_memory_fails_as_on_grpc(rest):
    """A CUDA registration on a server without CUDA fails with the gRPC port's answer; the
    status and unregister calls answer as Triton's do with no CUDA region."""
    import base64

    import sonic.tritonclient.grpc as grpcclient
    from sonic.tritonclient.utils import InferenceServerException

    handle = base64.b64encode(bytes(64)).decode()
    status, _, answer = request(rest.http_port, "POST", "/v2/cudasharedmemory/region/gpu/register",
                                json.dumps({"raw_handle": {"b64": handle}, "device_id": 0,
                                            "byte_size": 1024}))
    with grpcclient.InferenceServerClient(grpc_host_port(rest)) as client:
        if "cuda_shared_memory" in client.get_server_metadata(as_json=True)["extensions"]:
            pytest.skip("this server has CUDA")
        with pytest.raises(InferenceServerException) as failed:
            client.register_cuda_shared_memory("gpu", handle, 0, 1024)
    assert (status, json.loads(answer)) == (400, {"error": failed.value.message()})
    assert "GPUs not supported" in failed.value.message()
    status, _, answer = request(rest.http_port, "GET", "/v2/cudasharedmemory/status")
    assert (status, json.loads(answer)) == (200, [])
    assert request(rest.http_port, "POST", "/v2/cudasharedmemory/unregister")[:1] == (200,)
    status, _, answer = request(rest.http_port, "POST", "/v2/cudasharedmemory/region/gpu/register",
                                json.dumps({"device_id": 0, "byte_size": 1}))
    assert (status, json.loads(answer)) == \
        (400, {"error": "Shared memory register request has no 'raw_handle' field"})
