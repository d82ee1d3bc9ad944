"""Triton's shared memory extension on sonic-server's HTTP/REST port, driven with the exact
requests tritonclient.http sends (client src/python/library/tritonclient/http: _client.py's
register body {"key", "offset", "byte_size"}, _infer_input.py's and _requested_output.py's
set_shared_memory() parameters, _utils.py's _get_inference_request), in the shapes of its
simple_http_shm_client.py and simple_http_shm_string_client.py examples; the answers those of
Triton's HTTP frontend (server src/http_server.cc). Then sonic's own http:// client carrying
the same parameters, against sonic-server and against a server that answers as Triton's
(triton_http_server.py)."""

import base64
import gzip
import http.client
import json
import uuid

import numpy as np
import pytest

import sonic.tritonclient.grpc as grpcclient
import sonic.tritonclient.utils.shared_memory as shm
from conftest import Server
from sonic.tritonclient import utils
from test_http import http_port
from triton_http_server import TritonHttpServer


@pytest.fixture(scope="module")
def rest():
    started = Server("--http-port", "0")
    started.http_port = http_port(started)
    yield started
    started.stop()


class Rest:
    """One keep-alive connection, as tritonclient.http's pool keeps."""

    def __init__(self, port):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def call(self, method, path, body=None, headers=None):
        """(status, headers, body bytes)."""
        self.connection.request(method, path, body=body, headers=headers or {})
        response = self.connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()

    def register(self, name, key, byte_size, offset=0):
        status, _, answer = self.call(
            "POST", "/v2/systemsharedmemory/region/%s/register" % name,
            json.dumps({"key": key, "offset": offset, "byte_size": byte_size}))
        assert (status, answer) == (200, b""), answer

    def infer(self, model, inputs, outputs):
        """The JSON answer (or error) of a request with no binary data: every tensor in
        shared memory or in JSON."""
        body = json.dumps({"inputs": inputs, "outputs": outputs})
        status, headers, answer = self.call("POST", "/v2/models/%s/infer" % model, body)
        return status, headers, answer

    def close(self):
        self.connection.close()


def key(name):
    return "/sonic_http_shm_%s_%s" % (name, uuid.uuid4().hex[:12])


def placed(region, byte_size, offset=0):
    """set_shared_memory()'s parameters: the offset only when it is not 0."""
    parameters = {"shared_memory_region": region, "shared_memory_byte_size": byte_size}
    if offset:
        parameters["shared_memory_offset"] = offset
    return parameters


def shm_input(name, datatype, region, byte_size, offset=0):
    return {"name": name, "shape": [1, 16], "datatype": datatype,
            "parameters": placed(region, byte_size, offset)}


def shm_output(name, region, byte_size, offset=0):
    # InferRequestedOutput(binary_data=True).set_shared_memory() turns binary_data off.
    parameters = {"binary_data": False, **placed(region, byte_size, offset)}
    return {"name": name, "parameters": parameters}


@pytest.fixture
def regions():
    """Regions made as tritonclient.utils.shared_memory makes them, destroyed at the end."""
    made = []

    def make(name, size):
        handle = shm.create_shared_memory_region(name, key(name), size)
        made.append(handle)
        return handle
    yield make
    for handle in made:
        shm.destroy_shared_memory_region(handle)


def test_simple_http_shm_client(rest, regions):
    """simple_http_shm_client.py: simple's inputs in one region, its outputs written to another;
    Triton answers each output with its name, datatype and shape only (JSON, no binary data)."""
    a = np.arange(16, dtype=np.int32)
    b = np.ones(16, dtype=np.int32)
    out, into = regions("output_data", 128), regions("input_data", 128)
    shm.set_shared_memory_region(into, [a])
    shm.set_shared_memory_region(into, [b], offset=64)
    client = Rest(rest.http_port)
    try:
        client.register("output_data", out._shm_key, 128)
        client.register("input_data", into._shm_key, 128)
        status, headers, answer = client.infer(
            "simple",
            [shm_input("INPUT0", "INT32", "input_data", 64),
             shm_input("INPUT1", "INT32", "input_data", 64, 64)],
            [shm_output("OUTPUT0", "output_data", 64),
             shm_output("OUTPUT1", "output_data", 64, 64)])
        assert status == 200, answer
        assert "Inference-Header-Content-Length" not in headers
        assert json.loads(answer)["outputs"] == [
            {"name": "OUTPUT0", "datatype": "INT32", "shape": [1, 16]},
            {"name": "OUTPUT1", "datatype": "INT32", "shape": [1, 16]}]
        np.testing.assert_array_equal(shm.get_contents_as_numpy(out, np.int32, [1, 16])[0], a + b)
        np.testing.assert_array_equal(
            shm.get_contents_as_numpy(out, np.int32, [1, 16], offset=64)[0], a - b)

        # One output in the region, the other as binary data: the binary data is its alone.
        shm.set_shared_memory_region(out, [np.zeros(32, np.int32)])
        body = json.dumps({"inputs": [shm_input("INPUT0", "INT32", "input_data", 64),
                                      shm_input("INPUT1", "INT32", "input_data", 64, 64)],
                           "outputs": [shm_output("OUTPUT0", "output_data", 64),
                                       {"name": "OUTPUT1", "parameters": {"binary_data": True}}]})
        status, headers, answer = client.call("POST", "/v2/models/simple/infer", body)
        assert status == 200, answer
        length = int(headers["Inference-Header-Content-Length"])
        outputs = json.loads(answer[:length])["outputs"]
        assert outputs[0] == {"name": "OUTPUT0", "datatype": "INT32", "shape": [1, 16]}
        assert outputs[1]["parameters"] == {"binary_data_size": 64}
        np.testing.assert_array_equal(np.frombuffer(answer[length:], np.int32), a - b)
        np.testing.assert_array_equal(shm.get_contents_as_numpy(out, np.int32, [1, 16])[0], a + b)
    finally:
        client.call("POST", "/v2/systemsharedmemory/unregister")
        client.close()


def test_simple_http_shm_string_client(rest, regions):
    """simple_http_shm_string_client.py: BYTES tensors serialised into regions of their own."""
    in0, in1 = np.arange(16, dtype=np.int32), np.ones(16, dtype=np.int32)
    strings = [np.array([str(x).encode() for x in v], dtype=object) for v in (in0, in1)]
    serialized = [utils.serialize_byte_tensor(s) for s in strings]
    sizes = [utils.serialized_byte_size(s) for s in serialized]
    expected = [np.array([str(x).encode() for x in v], dtype=object)
                for v in (in0 + in1, in0 - in1)]
    out_sizes = [utils.serialized_byte_size(utils.serialize_byte_tensor(e)) for e in expected]
    client = Rest(rest.http_port)
    try:
        handles = {}
        for name, size in (("output0", out_sizes[0]), ("output1", out_sizes[1]),
                           ("input0", sizes[0]), ("input1", sizes[1])):
            handles[name] = regions(name + "_data", size)
            client.register(name + "_data", handles[name]._shm_key, size)
        shm.set_shared_memory_region(handles["input0"], [serialized[0]])
        shm.set_shared_memory_region(handles["input1"], [serialized[1]])
        status, _, answer = client.infer(
            "simple_string",
            [shm_input("INPUT0", "BYTES", "input0_data", sizes[0]),
             shm_input("INPUT1", "BYTES", "input1_data", sizes[1])],
            [shm_output("OUTPUT0", "output0_data", out_sizes[0]),
             shm_output("OUTPUT1", "output1_data", out_sizes[1])])
        assert status == 200, answer
        outputs = json.loads(answer)["outputs"]
        assert [o["datatype"] for o in outputs] == ["BYTES", "BYTES"]
        for handle, want, output in zip((handles["output0"], handles["output1"]), expected,
                                        outputs):
            got = shm.get_contents_as_numpy(handle, np.object_, output["shape"])
            assert list(got[0]) == list(want)
    finally:
        client.call("POST", "/v2/systemsharedmemory/unregister")
        client.close()


def test_shared_memory_errors_in_tritons_words(rest, regions):
    """The errors of Triton's frontend and SharedMemoryManager, with its statuses."""
    handle = regions("small", 64)
    client = Rest(rest.http_port)
    a = {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": [1] * 16}
    try:
        client.register("small", handle._shm_key, 64)
        cases = [
            # An unknown region: NOT_FOUND (404), GetMemoryInfo's words first.
            ([shm_input("INPUT0", "INT32", "nosuch", 64), a], [], 404,
             "Unable to find shared memory region: 'nosuch'"),
            # Offset and size past the region's end.
            ([shm_input("INPUT0", "INT32", "small", 64, 32), a], [], 400, "small"),
            # Both data and a region (ValidateInputContentType).
            ([dict(shm_input("INPUT0", "INT32", "small", 64), data=[0] * 16), a], [], 400,
             "Input must set only one of the following fields"),
            # Binary data and a region on one output (ValidateOutputParameter).
            ([dict(a, name="INPUT0"), a],
             [{"name": "OUTPUT0", "parameters": {"binary_data": True, **placed("small", 64)}}],
             400, "Output can't set both 'shared_memory_region' and 'binary_data'"),
            # An output larger than its space: INTERNAL, the words of Triton's allocator.
            ([dict(a, name="INPUT0"), a], [shm_output("OUTPUT0", "small", 32)], 500,
             "should be at least 64 bytes to hold the results"),
            # A CUDA region name that is not registered: the same NOT_FOUND.
            ([dict(a, name="INPUT0"), a], [shm_output("OUTPUT0", "gpu_region", 64)], 404,
             "Unable to find shared memory region: 'gpu_region'"),
        ]
        for inputs, outputs, want_status, words in cases:
            status, _, answer = client.infer("simple", inputs, outputs)
            assert status == want_status, answer
            assert words in json.loads(answer)["error"], answer
    finally:
        client.call("POST", "/v2/systemsharedmemory/unregister")
        client.close()


def test_only_inference_answers_are_compressed(rest):
    """Triton compresses inference answers alone (HTTPAPIServer::InferRequestClass's
    response_compression_type_); tritonclient.http decompresses nothing else, so metadata,
    control and shared memory answers come plain whatever Accept-Encoding asks."""
    client = Rest(rest.http_port)
    asks = {"Accept-Encoding": "gzip, deflate"}
    try:
        for method, path in (("GET", "/v2"), ("GET", "/v2/models/simple"),
                             ("GET", "/v2/models/simple/config"), ("GET", "/v2/models/stats"),
                             ("GET", "/v2/systemsharedmemory/status"),
                             ("GET", "/v2/cudasharedmemory/status"),
                             ("POST", "/v2/repository/index")):
            status, headers, answer = client.call(method, path, headers=asks)
            assert status == 200, (path, answer)
            assert "Content-Encoding" not in headers, path
            json.loads(answer)
        body = json.dumps({"inputs": [
            {"name": n, "shape": [1, 16], "datatype": "INT32", "data": [1] * 16}
            for n in ("INPUT0", "INPUT1")]})
        status, headers, answer = client.call("POST", "/v2/models/simple/infer", body, asks)
        assert (status, headers.get("Content-Encoding")) == (200, "gzip")
        assert json.loads(gzip.decompress(answer))["outputs"][0]["data"] == [2] * 16
    finally:
        client.close()


def test_cuda_registration_without_gpus(rest):
    """tritonclient.http's CUDA registration body; this server has no GPU (or no CUDA build):
    refused as Triton built without GPUs refuses it, and the region stays unknown."""
    client = Rest(rest.http_port)
    try:
        status, _, answer = client.call("GET", "/v2")
        if "cuda_shared_memory" in json.loads(answer)["extensions"]:
            pytest.skip("this server has a GPU")
        handle = base64.b64encode(bytes(64)).decode()
        status, _, answer = client.call(
            "POST", "/v2/cudasharedmemory/region/gpu/register",
            json.dumps({"raw_handle": {"b64": handle}, "device_id": 0, "byte_size": 64}))
        assert status == 400 and "GPUs not supported" in json.loads(answer)["error"]
        status, _, answer = client.call("GET", "/v2/cudasharedmemory/region/gpu/status")
        assert status == 404
    finally:
        client.close()


# ---- sonic's http:// client ---------------------------------------------------------------

def sonic_client_round_trip(url, regions):
    """simple through sonic's client over `url` (http://), every tensor in a system region,
    registered through the same client."""
    a = np.arange(16, dtype=np.int32)
    b = np.full(16, 2, dtype=np.int32)
    out, into = regions("output_data", 128), regions("input_data", 128)
    shm.set_shared_memory_region(into, [a])
    shm.set_shared_memory_region(into, [b], offset=64)
    with grpcclient.InferenceServerClient(url=url) as client:
        client.register_system_shared_memory("output_data", out._shm_key, 128)
        client.register_system_shared_memory("input_data", into._shm_key, 128)
        assert set(client.get_system_shared_memory_status().regions) == \
            {"input_data", "output_data"}
        inputs = [grpcclient.InferInput("INPUT0", [1, 16], "INT32"),
                  grpcclient.InferInput("INPUT1", [1, 16], "INT32")]
        inputs[0].set_shared_memory("input_data", 64)
        inputs[1].set_shared_memory("input_data", 64, offset=64)
        outputs = [grpcclient.InferRequestedOutput("OUTPUT0"),
                   grpcclient.InferRequestedOutput("OUTPUT1")]
        outputs[0].set_shared_memory("output_data", 64)
        outputs[1].set_shared_memory("output_data", 64, offset=64)
        results = client.infer(model_name="simple", inputs=inputs, outputs=outputs)
        output1 = results.get_output("OUTPUT1")
        assert (output1.datatype, list(output1.shape)) == ("INT32", [1, 16])
        assert results.as_numpy("OUTPUT0") is None  # its bytes are in the region
        np.testing.assert_array_equal(shm.get_contents_as_numpy(out, np.int32, [1, 16])[0],
                                      a + b)
        np.testing.assert_array_equal(
            shm.get_contents_as_numpy(out, np.int32, [1, 16], offset=64)[0], a - b)
        client.unregister_system_shared_memory()
        assert client.get_system_shared_memory_status(as_json=True) == {}


def test_sonic_client_over_http_against_sonic_server(rest, regions):
    sonic_client_round_trip("http://127.0.0.1:%d" % rest.http_port, regions)


def test_sonic_client_over_http_against_triton(regions):
    with TritonHttpServer() as triton:
        sonic_client_round_trip(triton.url, regions)


def test_a_region_outlives_the_connection_that_registered_it(regions):
    """Triton's C++ HTTP client registers on a curl handle of its own, closed after each call
    (http_client.cc's Post), and infers on another: its regions stay registered until they are
    unregistered, as Triton's server-wide SharedMemoryManager keeps them. They count against
    their user's bound, whatever connection registered them."""
    server = Server("--http-port", "0", "--max-connection-shm-regions", "2")
    port = http_port(server)
    a = np.arange(16, dtype=np.int32)
    into, out = regions("input_data", 128), regions("output_data", 128)
    shm.set_shared_memory_region(into, [a])
    shm.set_shared_memory_region(into, [a], offset=64)

    def once(method, path, body=None):
        client = Rest(port)
        try:
            return client.call(method, path, body)
        finally:
            client.close()

    try:
        for name, handle in (("input_data", into), ("output_data", out)):
            body = json.dumps({"key": handle._shm_key, "offset": 0, "byte_size": 128})
            assert once("POST", "/v2/systemsharedmemory/region/%s/register" % name, body)[0] == 200
        listed = json.loads(once("GET", "/v2/systemsharedmemory/status")[2])
        assert sorted(r["name"] for r in listed) == ["input_data", "output_data"]
        body = json.dumps({"inputs": [shm_input("INPUT0", "INT32", "input_data", 64),
                                      shm_input("INPUT1", "INT32", "input_data", 64, 64)],
                           "outputs": [shm_output("OUTPUT0", "output_data", 64)]})
        status, _, answer = once("POST", "/v2/models/simple/infer", body)
        assert status == 200, answer
        np.testing.assert_array_equal(shm.get_contents_as_numpy(out, np.int32, [1, 16])[0], a + a)
        # The user's bound holds across connections.
        extra = regions("extra", 64)
        body = json.dumps({"key": extra._shm_key, "offset": 0, "byte_size": 64})
        status, _, answer = once("POST", "/v2/systemsharedmemory/region/extra/register", body)
        assert status != 200 and b"regions" in answer, answer
        assert once("POST", "/v2/systemsharedmemory/unregister")[0] == 200
        assert json.loads(once("GET", "/v2/systemsharedmemory/status")[2]) == []
    finally:
        server.stop()
