"""sonic.tritonclient.http in the shapes of Triton's own HTTP example clients
(simple_http_infer_client, simple_http_async_infer_client, simple_http_string_infer_client,
simple_http_health_metadata, simple_http_model_control, simple_http_sequence_sync_infer_client),
with sonic.tritonclient imports only, against sonic-server's HTTP port and against
triton_http_server.py (a server that answers as Triton's HTTP frontend does).

What a call returns is checked against what tritonclient.http returns for the same call, computed
as its source computes it from the server's answer: json.loads of the answer's body for the
control calls (tritonclient/http/_client.py), the status alone for health, and for a failed call
InferenceServerException(msg=body["error"], status=str(http status)) (http/_utils.py,
_get_error). The answers are read with Python's http.client."""

import json
import time

import numpy as np
import pytest

import sonic.tritonclient.http as httpclient
from sonic.tritonclient.utils import InferenceServerException

from test_http import http_port, request
from triton_http_server import TritonHttpServer


class Rest:
    """A server's HTTP port: its tritonclient url, and its answers as tritonclient.http reads
    them."""

    def __init__(self, port, writes_defaults):
        self.port = port
        self.url = "127.0.0.1:%d" % port
        # Whether it writes a model configuration's default values, as Triton does
        # (always_print_primitive_fields); triton_http_server.py writes a short one.
        self.writes_defaults = writes_defaults

    def json(self, method, path, body=None):
        status, _, answer = request(self.port, method, path, body)
        assert status == 200, answer
        return json.loads(answer)

    def error(self, method, path, body=None):
        """(message(), status()) of tritonclient.http's exception for that call."""
        status, _, answer = request(self.port, method, path, body)
        assert status != 200
        if not answer:
            return "client received an empty response from the server.", str(status)
        return json.loads(answer)["error"], str(status)


@pytest.fixture(scope="module")
def sonic_rest(server):
    return Rest(http_port(server), writes_defaults=True)


@pytest.fixture(scope="module")
def triton_rest():
    with TritonHttpServer(slow_seconds=0.5) as started:
        yield Rest(started.server_address[1], writes_defaults=False)


@pytest.fixture(params=["sonic-server", "triton"])
def rest(request, sonic_rest, triton_rest):
    return sonic_rest if request.param == "sonic-server" else triton_rest


@pytest.fixture
def client(rest):
    with httpclient.InferenceServerClient(url=rest.url) as made:
        yield made


def simple_inputs(binary_data=True):
    """simple's inputs as Triton's examples make them: 0..15 and ones, INPUT1 as JSON when
    binary_data is False."""
    input0 = np.expand_dims(np.arange(start=0, stop=16, dtype=np.int32), axis=0)
    input1 = np.ones(shape=(1, 16), dtype=np.int32)
    inputs = [httpclient.InferInput("INPUT0", [1, 16], "INT32"),
              httpclient.InferInput("INPUT1", [1, 16], "INT32")]
    inputs[0].set_data_from_numpy(input0, binary_data=True)
    inputs[1].set_data_from_numpy(input1, binary_data=binary_data)
    return inputs, input0, input1


@pytest.mark.parametrize("compression", [None, "gzip", "deflate"])
def test_simple_infer_client(client, rest, compression):
    """simple_http_infer_client.py: one output in binary, one as JSON; the answer reads as the
    one tritonclient.http gets for the body it would send (generate_request_body(), posted by
    http.client, parsed by parse_response_body())."""
    inputs, input0, input1 = simple_inputs(binary_data=False)
    outputs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True),
               httpclient.InferRequestedOutput("OUTPUT1", binary_data=False)]
    results = client.infer("simple", inputs, outputs=outputs, request_id="r-7",
                           headers={"test": "1"}, query_params={"test_1": 1},
                           request_compression_algorithm=compression,
                           response_compression_algorithm=compression)
    np.testing.assert_array_equal(results.as_numpy("OUTPUT0"), input0 + input1)
    np.testing.assert_array_equal(results.as_numpy("OUTPUT1"), input0 - input1)
    assert results.as_numpy("NOT_AN_OUTPUT") is None
    assert results.get_output("NOT_AN_OUTPUT") is None

    body, json_size = httpclient.InferenceServerClient.generate_request_body(
        inputs, outputs=outputs, request_id="r-7")
    headers = {"Inference-Header-Content-Length": str(json_size)}
    status, answer_headers, answer = request(rest.port, "POST", "/v2/models/simple/infer",
                                             body, headers)
    assert status == 200, answer
    expected = httpclient.InferenceServerClient.parse_response_body(
        answer, header_length=answer_headers.get("Inference-Header-Content-Length"))
    for name in ("OUTPUT0", "OUTPUT1"):
        np.testing.assert_array_equal(results.as_numpy(name), expected.as_numpy(name))
    response = results.get_response()
    assert response == expected.get_response()
    assert response["id"] == "r-7" and response["model_name"] == "simple"
    assert results.get_output("OUTPUT1")["data"] == list((input0 - input1).reshape(-1))
    assert results.get_output("OUTPUT0")["parameters"] == {"binary_data_size": 64}

    results = client.infer("simple", simple_inputs()[0])  # every output, in binary
    np.testing.assert_array_equal(results.as_numpy("OUTPUT0"), input0 + input1)
    assert all("data" not in output for output in results.get_response()["outputs"])
    statistics = client.get_inference_statistics(model_name="simple")
    assert len(statistics["model_stats"]) == 1
    assert statistics["model_stats"][0]["inference_count"] >= 2


def test_async_infer_client(client):
    """simple_http_async_infer_client.py: requests sent together, their results read back."""
    inputs, input0, input1 = simple_inputs()
    requests = [client.async_infer("simple", inputs, request_id=str(i),
                                   outputs=[httpclient.InferRequestedOutput("OUTPUT0")])
                for i in range(8)]
    assert all(isinstance(r, httpclient.InferAsyncRequest) for r in requests)
    for i, sent in enumerate(requests):
        result = sent.get_result()
        assert result.get_response()["id"] == str(i)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), input0 + input1)
        assert result.as_numpy("OUTPUT1") is None  # not asked for


def test_async_infer_errors_and_time_limits(triton_rest):
    """get_result() of a failed request raises the server's error; of one not done in time,
    tritonclient.http's "failed to obtain inference response"."""
    values = np.zeros((1, 4), np.float32)
    inputs = [httpclient.InferInput("INPUT0", [1, 4], "FP32").set_data_from_numpy(values)]
    with httpclient.InferenceServerClient(triton_rest.url, concurrency=2) as client:
        slow = client.async_infer("slow", inputs)
        with pytest.raises(InferenceServerException) as early:
            slow.get_result(block=False)
        assert early.value.message() == "failed to obtain inference response"
        np.testing.assert_array_equal(slow.get_result().as_numpy("OUTPUT0"), values)
        wrong = client.async_infer("simple", inputs)
        with pytest.raises(InferenceServerException) as refused:
            wrong.get_result()
        assert refused.value.status() == "400"
    with httpclient.InferenceServerClient(triton_rest.url, network_timeout=0.1) as client:
        with pytest.raises(InferenceServerException):
            client.infer("slow", inputs)


def test_string_infer_client(client, rest):
    """simple_http_string_infer_client.py: BYTES inputs in binary and as JSON; an output as
    JSON comes back as str elements, one in binary as bytes, as tritonclient.http gives them."""
    strings = np.array([[str(x).encode("utf-8") for x in range(16)]], dtype=np.object_)
    for binary in (True, False):
        inputs = [httpclient.InferInput("INPUT0", [1, 16], "BYTES")]
        inputs[0].set_data_from_numpy(strings, binary_data=binary)
        outputs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary)]
        result = client.infer("simple_identity", inputs, outputs=outputs)
        expected = strings if binary else strings.astype(str).astype(np.object_)
        assert result.as_numpy("OUTPUT0").tolist() == expected.tolist()
        assert result.get_output("OUTPUT0")["datatype"] == "BYTES"
    blobs = np.array([[b"\x00\xff"]], dtype=np.object_)
    with pytest.raises(InferenceServerException) as not_text:
        httpclient.InferInput("INPUT0", [1, 1], "BYTES").set_data_from_numpy(
            blobs, binary_data=False)
    assert "Please use binary_data=True" in not_text.value.message()
    inputs = [httpclient.InferInput("INPUT0", [1, 1], "BYTES").set_data_from_numpy(blobs)]
    assert client.infer("simple_identity", inputs).as_numpy("OUTPUT0").tolist() == [[b"\x00\xff"]]


def test_health_metadata_and_configuration(client, rest):
    """simple_http_health_metadata.py, and every control call's answer as the JSON the server
    sent, as tritonclient.http returns it."""
    assert client.is_server_live(headers={"test": "1", "dummy": "2"})
    assert client.is_server_ready()
    assert client.is_model_ready("simple")
    assert not client.is_model_ready("wrong_model_name")
    metadata = client.get_model_metadata("simple", query_params={"test_1": 1})
    assert metadata["name"] == "simple" and metadata["inputs"][0]["shape"] == [-1, 16]
    calls = [
        (client.get_server_metadata, (), "GET", "/v2", None),
        (client.get_model_metadata, ("simple",), "GET", "/v2/models/simple", None),
        (client.get_model_metadata, ("simple", "1"), "GET", "/v2/models/simple/versions/1",
         None),
        (client.get_model_config, ("simple",), "GET", "/v2/models/simple/config", None),
        (client.get_model_config, ("simple_identity",), "GET",
         "/v2/models/simple_identity/config", None),
        (client.get_model_repository_index, (), "POST", "/v2/repository/index", "{}"),
        (client.get_inference_statistics, ("simple",), "GET", "/v2/models/simple/stats", None),
        (client.get_system_shared_memory_status, (), "GET", "/v2/systemsharedmemory/status",
         None),
    ]
    stats = client.get_inference_statistics("simple")["model_stats"][0]
    assert stats["response_stats"] == {} and stats["memory_usage"] == []
    for ours, arguments, method, path, body in calls:
        expected = rest.json(method, path, body)
        answer = ours(*arguments)
        if "stats" in path:  # the statistics of requests sent meanwhile by other tests differ
            for stats in expected["model_stats"] + answer["model_stats"]:
                stats.pop("last_inference")
        if ("config" in path and not rest.writes_defaults) or "stats" in path:
            # And what Triton writes that the server left out: a configuration's defaults, the
            # statistics' response_stats and memory_usage (core tritonserver.cc).
            assert_includes(answer, expected, path)
        else:
            assert answer == expected, path


def assert_includes(ours, theirs, where):
    """Everything of the JSON `theirs` is in `ours`, which may have more object members."""
    if isinstance(theirs, dict):
        for key, value in theirs.items():
            assert key in ours, where + "." + key
            assert_includes(ours[key], value, where + "." + key)
    elif isinstance(theirs, list):
        assert len(ours) == len(theirs), where
        for index, (mine, value) in enumerate(zip(ours, theirs)):
            assert_includes(mine, value, "%s[%d]" % (where, index))
    else:
        assert ours == theirs, where


def test_errors_are_tritonclients(client, rest):
    """A failed call raises tritonclient.http's exception: the server's {"error"} and the
    HTTP status."""
    for call, arguments, method, path in [
            (client.get_model_metadata, ("wrong_model_name",), "GET",
             "/v2/models/wrong_model_name"),
            (client.get_model_config, ("simple", "7"), "GET",
             "/v2/models/simple/versions/7/config")]:
        with pytest.raises(InferenceServerException) as failed:
            call(*arguments)
        assert (failed.value.message(), failed.value.status()) == rest.error(method, path)
    inputs, _, _ = simple_inputs()
    with pytest.raises(InferenceServerException) as refused:
        client.infer("simple", inputs[:1])
    assert refused.value.status() == "400"
    assert str(refused.value) == "[400] " + refused.value.message()
    with pytest.raises(InferenceServerException) as scheme:
        httpclient.InferenceServerClient("http://" + rest.url)
    assert scheme.value.message() == "url should not include the scheme"
    with pytest.raises(InferenceServerException) as version:
        client.is_model_ready("simple", 1)
    assert version.value.message() == "model version must be a string"


def test_infer_input_and_output_as_tritonclient_http(rest):
    """The JSON of an input and of a requested output, and the body, as tritonclient.http
    makes them (http/_infer_input.py, _requested_output.py, _utils.py)."""
    data = np.arange(4, dtype=np.float32).reshape(1, 4)
    given = httpclient.InferInput("INPUT0", [1, 4], "FP32")
    given.set_data_from_numpy(data, binary_data=False)
    assert given._get_tensor() == {"name": "INPUT0", "shape": [1, 4], "datatype": "FP32",
                                   "data": [0.0, 1.0, 2.0, 3.0]}
    assert given._get_binary_data() is None
    given.set_data_from_numpy(data)
    assert given._get_tensor()["parameters"] == {"binary_data_size": 16}
    assert given._get_binary_data() == data.tobytes()
    with pytest.raises(InferenceServerException) as bf16:
        httpclient.InferInput("X", [1], "BF16").set_data_from_numpy(
            np.zeros(1, np.float32), binary_data=False)
    assert bf16.value.message() == ("BF16 inputs must be sent as binary data over HTTP. "
                                    "Please set binary_data=True")
    output = httpclient.InferRequestedOutput("OUTPUT0", binary_data=False, class_count=2)
    assert output._get_tensor() == {"name": "OUTPUT0",
                                    "parameters": {"classification": 2, "binary_data": False}}
    body, size = httpclient.InferenceServerClient.generate_request_body(
        [given], sequence_id=5, sequence_start=True, priority=2, parameters={"k": "v"})
    header = json.loads(body[:size])
    assert header["parameters"] == {"sequence_id": 5, "sequence_start": True,
                                    "sequence_end": False, "priority": 2, "k": "v",
                                    "binary_data_output": True}
    assert body[size:] == data.tobytes()
    with pytest.raises(InferenceServerException) as reserved:
        httpclient.InferenceServerClient.generate_request_body(
            [given], parameters={"priority": 1})
    assert reserved.value.message() == ('Parameter "priority" is a reserved parameter and '
                                        'cannot be specified.')


def test_trace_and_log_settings(client, rest):
    """Trace and log settings read and changed as Triton's routes answer them, by sonic-server
    as by triton_http_server.py."""
    assert client.get_trace_settings() == rest.json("GET", "/v2/trace/setting")
    changed = client.update_trace_settings(settings={"trace_rate": 5,
                                                     "trace_level": ["TIMESTAMPS", "TENSORS"]})
    assert changed["trace_rate"] == "5"
    assert changed["trace_level"] == ["TIMESTAMPS", "TENSORS"]
    model = client.update_trace_settings("simple", settings={"trace_count": 10})
    assert model == rest.json("GET", "/v2/models/simple/trace/setting")
    assert model["trace_count"] == "10"
    assert client.update_trace_settings(settings={"trace_rate": None})["trace_rate"] == "1000"
    assert client.get_log_settings() == rest.json("GET", "/v2/logging")
    logs = client.update_log_settings({"log_info": False, "log_verbose_level": 2,
                                       "log_format": "ISO8601"})
    assert logs == rest.json("GET", "/v2/logging")
    assert (logs["log_info"], logs["log_verbose_level"], logs["log_format"]) == (
        False, 2, "ISO8601")
    client.update_log_settings({"log_info": True, "log_verbose_level": 0,
                                "log_format": "default"})


def test_sequence_sync_infer_client(server):
    """simple_http_sequence_sync_infer_client.py: sequences of blocking calls, numeric and
    string ids; simple_sequence answers a sequence's first input plus one, then its inputs."""
    values = [11, 7, 5, 3, 2, 0, 1]
    with httpclient.InferenceServerClient("127.0.0.1:%d" % http_port(server)) as client:

        def send(value, sequence_id, first, last):
            inputs = [httpclient.InferInput("INPUT", [1, 1], "INT32")]
            inputs[0].set_data_from_numpy(np.full((1, 1), value, dtype=np.int32))
            result = client.infer("simple_sequence", inputs, sequence_id=sequence_id,
                                  sequence_start=first, sequence_end=last,
                                  outputs=[httpclient.InferRequestedOutput("OUTPUT")])
            return int(result.as_numpy("OUTPUT")[0][0])

        for sequence_id, start in ((1000, 0), ("this-is-a-string-id", 100)):
            sent = [start] + values
            answers = [send(v, sequence_id, i == 0, i == len(sent) - 1)
                       for i, v in enumerate(sent)]
            assert answers == [start + 1] + values
        with pytest.raises(InferenceServerException) as refused:
            send(1, 4242, False, False)  # a sequence that never started
        assert refused.value.status() == "400"


def test_model_control(triton_rest):
    """simple_http_model_control.py: repository index, unload, load, and a model the
    repository does not have, with the server's words."""
    with httpclient.InferenceServerClient(triton_rest.url) as client:
        index = client.get_model_repository_index()
        assert index == triton_rest.json("POST", "/v2/repository/index", "{}")
        assert "simple" in [model["name"] for model in index]
        client.unload_model("simple", unload_dependents=True)
        assert not client.is_model_ready("simple")
        unloaded = [m for m in client.get_model_repository_index() if m["name"] == "simple"]
        assert unloaded == [{"name": "simple", "version": "1", "state": "UNAVAILABLE",
                             "reason": "unloaded"}]
        client.load_model("simple", config='{"max_batch_size": 0}')
        assert client.is_model_ready("simple")
        with pytest.raises(InferenceServerException) as missing:
            client.load_model("wrong_model_name")
        assert (missing.value.message(), missing.value.status()) == triton_rest.error(
            "POST", "/v2/repository/models/wrong_model_name/load", "{}")


def test_sonic_options_and_fallback_underneath(models, dead_url):
    """sonic's keyword arguments reach sonic.Client: with no server, the fallback repository
    answers; and without one, the call fails as a refused HTTP call does."""
    port = dead_url.rsplit(":", 1)[1]
    features = np.zeros((2, 16), np.float32)
    inputs = [httpclient.InferInput("features", [2, 16], "FP32").set_data_from_numpy(features)]
    with httpclient.InferenceServerClient("127.0.0.1:" + port, max_attempts=1,
                                          fallback_repository=models) as client:
        result = client.infer("jet_mlp_onnx", inputs)
        assert result.as_numpy("probabilities").shape[0] == 2
    with httpclient.InferenceServerClient("127.0.0.1:" + port, max_attempts=1,
                                          connection_timeout=1) as client:
        started = time.monotonic()
        with pytest.raises(InferenceServerException) as refused:
            client.infer("jet_mlp_onnx", inputs)
        assert refused.value.status() == "503"
        assert time.monotonic() - started < 10


def test_connection_arguments(certificates):
    """ssl with ssl_options' files reaches a TLS server's HTTP port; an SSLContext factory
    and insecure cannot be used; sonic's own options are extra keyword arguments."""
    from conftest import Server
    secure = Server("--tls-cert", str(certificates / "server.pem"),
                    "--tls-key", str(certificates / "server.key"))
    url = "127.0.0.1:%d" % http_port(secure)
    try:
        with httpclient.InferenceServerClient(
                url, ssl=True, ssl_options={"ca_certs": str(certificates / "ca.pem")},
                concurrency=4, connection_timeout=5.0, network_timeout=10.0,
                max_attempts=2) as client:
            inputs, input0, input1 = simple_inputs()
            np.testing.assert_array_equal(client.infer("simple", inputs).as_numpy("OUTPUT0"),
                                          input0 + input1)
        with pytest.raises(InferenceServerException) as factory:
            httpclient.InferenceServerClient(url, ssl=True, ssl_context_factory=object)
        assert "ssl_context_factory" in factory.value.message()
        with pytest.raises(InferenceServerException) as insecure:
            httpclient.InferenceServerClient(url, ssl=True, insecure=True)
        assert "insecure" in insecure.value.message()
        with pytest.raises(TypeError):  # as Python refuses an unknown keyword of tritonclient's
            httpclient.InferenceServerClient(url, no_such_sonic_option=1)
    finally:
        secure.stop()
