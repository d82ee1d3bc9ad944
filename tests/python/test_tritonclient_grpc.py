"""Over 500 lines: one test per example client and call, all against the same server.

sonic.tritonclient.grpc in the shapes of Triton's own example clients (simple_grpc_infer_client,
simple_grpc_async_infer_client, simple_grpc_string_infer_client, simple_grpc_health_metadata,
simple_grpc_model_control, simple_grpc_sequence_sync_infer_client, ...), against sonic-server,
with sonic.tritonclient imports only.

What a call returns is checked against what tritonclient returns for the same call, computed as
tritonclient's source computes it from the server's answer (grpcio and protobuf classes generated
from proto/): json.loads(MessageToJson(response, preserving_proto_field_name=True)) for
as_json=True (tritonclient/grpc/_client.py), the response message's fields otherwise, and for a
failed call InferenceServerException(msg=rpc_error.details(), status=str(rpc_error.code()))
(tritonclient/grpc/_utils.py, get_error_grpc).
"""

import json
import os
import time
from functools import partial

import grpc
import numpy as np
import pytest
from google.protobuf.json_format import MessageToJson

import sonic.tritonclient.grpc as grpcclient
from sonic.tritonclient.grpc.auth import BasicAuth
from sonic.tritonclient.utils import InferenceServerException

from conftest import Server


def host_port(url):
    """tritonclient's url ("127.0.0.1:8001") of a sonic URL."""
    return url.split("://", 1)[1]


class Reference:
    """The server as tritonclient reaches it: grpcio and the protobuf stub."""

    def __init__(self, url, stubs):
        self.pb2, pb2_grpc = stubs
        self.channel = grpc.insecure_channel(host_port(url))
        self.stub = pb2_grpc.GRPCInferenceServiceStub(self.channel)

    def call(self, method, **fields):
        """The response message of `method` for a request with `fields`."""
        return getattr(self.stub, method)(getattr(self.pb2, method + "Request")(**fields))

    def error(self, method, **fields):
        """(message(), status()) of the exception tritonclient raises when the call fails."""
        with pytest.raises(grpc.RpcError) as failure:
            self.call(method, **fields)
        return failure.value.details(), str(failure.value.code())


@pytest.fixture
def reference(server, stubs):
    made = Reference(server.grpc, stubs)
    yield made
    made.channel.close()


@pytest.fixture
def client(server):
    with grpcclient.InferenceServerClient(url=host_port(server.grpc)) as made:
        yield made


def tritonclient_json(message):
    """What tritonclient's as_json=True returns for a response message."""
    return json.loads(MessageToJson(message, preserving_proto_field_name=True))


TIMING = ("sonic_server_queue_ns", "sonic_server_compute_ns")


def same_timing(ours, theirs):
    """Gives two ModelInferResponses (ours, and protobuf's) the same sonic-server timing
    parameters (how long each request queued and ran differs from one to the next), once both
    have them."""
    for key in TIMING:
        assert key in ours.parameters and key in theirs.parameters
        ours.parameters[key].int64_param = theirs.parameters[key].int64_param = 1


def assert_same_fields(ours, theirs, where="response"):
    """Every field of the protobuf message `theirs` reads the same from `ours`, set or not,
    with the same Python type."""
    for field in theirs.DESCRIPTOR.fields:
        mine, expected = getattr(ours, field.name), getattr(theirs, field.name)
        path = where + "." + field.name
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            assert set(mine) == set(expected), path
            for key in expected:
                if entry.fields_by_name["value"].message_type is not None:
                    assert_same_fields(mine[key], expected[key], "%s[%r]" % (path, key))
                else:
                    assert mine[key] == expected[key], path
        elif field.label == field.LABEL_REPEATED:
            assert len(mine) == len(expected), path
            for index, (a, b) in enumerate(zip(mine, expected)):
                if entry is not None:
                    assert_same_fields(a, b, "%s[%d]" % (path, index))
                else:
                    assert a == b and type(a) == type(b), "%s[%d]" % (path, index)
        elif entry is not None:
            assert_same_fields(mine, expected, path)
        else:
            assert mine == expected and type(mine) == type(expected), path


def simple_inputs(module=grpcclient):
    """simple's inputs as Triton's examples make them: 0..15 and ones."""
    input0 = np.expand_dims(np.arange(start=0, stop=16, dtype=np.int32), axis=0)
    input1 = np.ones(shape=(1, 16), dtype=np.int32)
    inputs = [module.InferInput("INPUT0", [1, 16], "INT32"),
              module.InferInput("INPUT1", [1, 16], "INT32")]
    inputs[0].set_data_from_numpy(input0)
    inputs[1].set_data_from_numpy(input1)
    return inputs, input0, input1


@pytest.mark.parametrize("compression", [None, "gzip", "deflate"])
def test_simple_infer_client(client, reference, compression):
    """simple_grpc_infer_client.py: with outputs and headers, statistics, without outputs; the
    response reads as the one tritonclient gets for the same request."""
    inputs, input0, input1 = simple_inputs()
    outputs = [grpcclient.InferRequestedOutput("OUTPUT0"),
               grpcclient.InferRequestedOutput("OUTPUT1")]
    results = client.infer(model_name="simple", inputs=inputs, outputs=outputs,
                           client_timeout=10.0, headers={"test": "1"},
                           compression_algorithm=compression)
    statistics = client.get_inference_statistics(model_name="simple")
    assert len(statistics.model_stats) == 1
    np.testing.assert_array_equal(results.as_numpy("OUTPUT0"), input0 + input1)
    np.testing.assert_array_equal(results.as_numpy("OUTPUT1"), input0 - input1)
    assert results.as_numpy("NOT_AN_OUTPUT") is None

    results = client.infer(model_name="simple", inputs=inputs, outputs=None,
                           compression_algorithm=compression)
    np.testing.assert_array_equal(results.as_numpy("OUTPUT0"), input0 + input1)
    np.testing.assert_array_equal(results.as_numpy("OUTPUT1"), input0 - input1)

    request = reference.pb2.ModelInferRequest(model_name="simple")
    for name, data in (("INPUT0", input0), ("INPUT1", input1)):
        request.inputs.add(name=name, datatype="INT32", shape=[1, 16])
        request.raw_input_contents.append(data.tobytes())
    expected = reference.stub.ModelInfer(request)
    same_timing(results.get_response(), expected)
    assert results.get_response(as_json=True) == tritonclient_json(expected)
    assert_same_fields(results.get_response(), expected)
    assert_same_fields(results.get_output("OUTPUT1"), expected.outputs[1])
    assert results.get_output("OUTPUT1", as_json=True) == tritonclient_json(expected.outputs[1])
    assert results.get_output("NOT_AN_OUTPUT") is None


def test_async_infer_client(client):
    """simple_grpc_async_infer_client.py: the callback's last two parameters are result and
    error, passed by keyword."""
    inputs, input0, input1 = simple_inputs()
    outputs = [grpcclient.InferRequestedOutput("OUTPUT0"),
               grpcclient.InferRequestedOutput("OUTPUT1")]

    def callback(user_data, result, error):
        user_data.append(error if error else result)

    user_data = []
    context = client.async_infer(model_name="simple", inputs=inputs,
                                 callback=partial(callback, user_data), outputs=outputs,
                                 client_timeout=10.0)
    assert isinstance(context, grpcclient.CallContext)
    both = []  # what each argument holds: (result, error)
    client.async_infer("simple", inputs, lambda result, error: both.append((result, error)))
    deadline = time.monotonic() + 10
    while not (user_data and both) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(user_data) == 1
    assert type(user_data[0]) != InferenceServerException, user_data[0]
    np.testing.assert_array_equal(user_data[0].as_numpy("OUTPUT0"), input0 + input1)
    np.testing.assert_array_equal(user_data[0].as_numpy("OUTPUT1"), input0 - input1)
    (result, error), = both
    assert error is None and isinstance(result, grpcclient.InferResult)


def test_async_infer_cancelled_and_timed_out(silent_url):
    """CallContext.cancel() and client_timeout on a server that never answers: the callback
    gets tritonclient's errors (grpc/_utils.py get_cancelled_error; the docs of client_timeout:
    "Deadline Exceeded")."""
    errors = []
    with grpcclient.InferenceServerClient(host_port(silent_url)) as client:
        inputs, _, _ = simple_inputs()
        context = client.async_infer("simple", inputs,
                                     lambda result, error: errors.append((result, error)))
        context.cancel()
        client.async_infer("simple", inputs, lambda result, error: errors.append((result, error)),
                           client_timeout=0.2)
        deadline = time.monotonic() + 10
        while len(errors) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(InferenceServerException) as timed_out:
            client.infer("simple", inputs, client_timeout=0.2)
    assert [result for result, _ in errors] == [None, None]
    (cancelled,) = [e for _, e in errors if e.status() == "StatusCode.CANCELLED"]
    assert cancelled.message() == "Locally cancelled by application!"
    (late,) = [e for _, e in errors if e.status() == "StatusCode.DEADLINE_EXCEEDED"]
    assert late.message() == "Deadline Exceeded"
    assert timed_out.value.status() == "StatusCode.DEADLINE_EXCEEDED"
    assert str(timed_out.value) == "[StatusCode.DEADLINE_EXCEEDED] Deadline Exceeded"


def test_string_infer_client(client):
    """simple_grpc_string_infer_client.py: BYTES tensors as object arrays of UTF-8 bytes, with
    an embedded NUL, as bytes_ arrays; other objects go as str(object), as tritonclient's
    serialize_byte_tensor sends them."""
    in0 = np.arange(start=0, stop=16, dtype=np.int32).reshape(1, 16)
    in1 = np.ones(shape=(1, 16), dtype=np.int32)
    inputs = [grpcclient.InferInput("INPUT0", [1, 16], "BYTES"),
              grpcclient.InferInput("INPUT1", [1, 16], "BYTES")]
    inputs[0].set_data_from_numpy(
        np.array([str(x).encode("utf-8") for x in in0.flatten()], dtype=np.object_).reshape(1, 16))
    inputs[1].set_data_from_numpy(
        np.array([str(x).encode("utf-8") for x in in1.flatten()], dtype=np.object_).reshape(1, 16))
    outputs = [grpcclient.InferRequestedOutput("OUTPUT0"),
               grpcclient.InferRequestedOutput("OUTPUT1")]
    results = client.infer(model_name="simple_string", inputs=inputs, outputs=outputs)
    assert [int(x) for x in results.as_numpy("OUTPUT0")[0]] == list((in0 + in1)[0])
    assert [int(x) for x in results.as_numpy("OUTPUT1")[0]] == list((in0 - in1)[0])
    assert results.get_output("OUTPUT0").datatype == "BYTES"

    def identity(array):
        inputs = [grpcclient.InferInput("INPUT0", array.shape, "BYTES")]
        inputs[0].set_data_from_numpy(array)
        return client.infer(model_name="simple_identity", inputs=inputs,
                            outputs=[grpcclient.InferRequestedOutput("OUTPUT0")]).as_numpy(
                                "OUTPUT0")

    null_chars = np.array(["he\x00llo".encode("utf-8")] * 16, dtype=np.object_).reshape([1, 16])
    np.testing.assert_array_equal(identity(null_chars), null_chars)
    blobs = np.array([b"\x00\x01\x02\x03"] * 16, dtype=np.bytes_).reshape([1, 16])
    assert identity(blobs).tolist() == [[b"\x00\x01\x02\x03"] * 16]
    mixed = np.array([[7, "zwei", b"three", 2.5]], dtype=np.object_)
    assert identity(mixed).tolist() == [[b"7", b"zwei", b"three", b"2.5"]]


def test_sequence_sync_infer_client(client):
    """simple_grpc_sequence_sync_infer_client.py: sequences of blocking calls, numeric and
    string ids; simple_sequence answers a sequence's first input plus one, then its inputs."""
    values = [11, 7, 5, 3, 2, 0, 1]

    def send(value, sequence_id, first, last):
        inputs = [grpcclient.InferInput("INPUT", [1, 1], "INT32")]
        inputs[0].set_data_from_numpy(np.full((1, 1), value, dtype=np.int32))
        result = client.infer(model_name="simple_sequence", inputs=inputs,
                              outputs=[grpcclient.InferRequestedOutput("OUTPUT")],
                              sequence_id=sequence_id, sequence_start=first, sequence_end=last)
        return int(result.as_numpy("OUTPUT")[0][0])

    for sequence_id, start in ((1000, 0), ("this-is-a-string-id", 100)):
        sent = [start] + values
        answers = [send(v, sequence_id, i == 0, i == len(sent) - 1) for i, v in enumerate(sent)]
        assert answers == [start + 1] + values
    with pytest.raises(InferenceServerException) as refused:
        send(1, 4242, False, False)  # a sequence that never started
    assert refused.value.status() == "StatusCode.INVALID_ARGUMENT"


def test_health_metadata_and_configuration(client, reference):
    """simple_grpc_health_metadata.py, and every control call's answer as tritonclient's: the
    same JSON with as_json=True, the same fields otherwise."""
    assert client.is_server_live(headers={"test": "1", "dummy": "2"})
    assert client.is_server_ready()
    assert client.is_model_ready("simple")
    assert not client.is_model_ready("wrong_model_name")
    metadata = client.get_model_metadata("simple", headers={"test": "1", "dummy": "2"})
    assert metadata.name == "simple" and metadata.inputs[0].datatype == "INT32"
    assert list(metadata.inputs[0].shape) == [-1, 16]
    config = client.get_model_config("simple")
    assert config.config.name == "simple"

    calls = [
        (client.get_server_metadata, (), "ServerMetadata", {}),
        (client.get_model_metadata, ("simple",), "ModelMetadata", {"name": "simple"}),
        (client.get_model_metadata, ("simple_sequence", "1"), "ModelMetadata",
         {"name": "simple_sequence", "version": "1"}),
        (client.get_model_config, ("simple",), "ModelConfig", {"name": "simple"}),
        (client.get_model_config, ("simple_sequence",), "ModelConfig",
         {"name": "simple_sequence"}),
        (client.get_model_repository_index, (), "RepositoryIndex", {}),
        (client.get_inference_statistics, ("simple",), "ModelStatistics", {"name": "simple"}),
        (client.get_inference_statistics, (), "ModelStatistics", {}),
        (client.get_system_shared_memory_status, (), "SystemSharedMemoryStatus", {}),
        (client.get_cuda_shared_memory_status, (), "CudaSharedMemoryStatus", {}),
    ]
    for ours, arguments, method, fields in calls:
        try:
            expected = reference.call(method, **fields)
        except grpc.RpcError as failure:  # CUDA regions, where the server has no CUDA
            with pytest.raises(InferenceServerException) as refused:
                ours(*arguments)
            assert (refused.value.message(), refused.value.status()) == \
                (failure.details(), str(failure.code()))
            continue
        assert ours(*arguments, as_json=True) == tritonclient_json(expected), method
        assert_same_fields(ours(*arguments), expected, method)
    for method, flag in (("ServerLive", client.is_server_live()),
                         ("ServerReady", client.is_server_ready())):
        assert flag is getattr(reference.call(method), method[6:].lower())


def test_errors_are_tritonclients(client, reference, dead_url):
    """A failed call raises InferenceServerException with the server's message and the gRPC
    status as str(grpc.StatusCode); a mistake found before sending has no status."""
    with pytest.raises(InferenceServerException) as unknown:
        client.get_model_metadata("wrong_model_name")
    assert "Request for unknown model" in unknown.value.message()  # the example's check
    assert (unknown.value.message(), unknown.value.status()) == \
        reference.error("ModelMetadata", name="wrong_model_name")
    assert str(unknown.value) == "[%s] %s" % (unknown.value.status(), unknown.value.message())
    assert "NOT_FOUND" in unknown.value.debug_details()

    inputs, _, _ = simple_inputs()
    with pytest.raises(InferenceServerException) as no_model:
        client.infer("wrong_model_name", inputs)
    request = reference.pb2.ModelInferRequest(model_name="wrong_model_name")
    for infer_input in inputs:
        request.inputs.add(name=infer_input.name(), datatype="INT32", shape=[1, 16])
        request.raw_input_contents.append(infer_input._data.tobytes())
    with pytest.raises(grpc.RpcError) as expected:
        reference.stub.ModelInfer(request)
    assert (no_model.value.message(), no_model.value.status()) == \
        (expected.value.details(), str(expected.value.code()))

    with grpcclient.InferenceServerClient(host_port(dead_url), max_attempts=1) as down:
        with pytest.raises(InferenceServerException) as unavailable:
            down.is_server_live()
    assert unavailable.value.status() == "StatusCode.UNAVAILABLE"

    with pytest.raises(InferenceServerException) as version:
        client.infer("simple", inputs, model_version=1)
    assert version.value.message() == "model version must be a string"
    assert version.value.status() is None
    for reserved in ("sequence_id", "priority", "binary_data_output"):
        with pytest.raises(InferenceServerException) as refused:
            client.infer("simple", inputs, parameters={reserved: 1})
        assert refused.value.message() == \
            'Parameter "%s" is a reserved parameter and cannot be specified.' % reserved


def test_infer_input_checks_its_array():
    """InferInput refuses what tritonclient's refuses, with its words."""
    wrong = grpcclient.InferInput("INPUT0", [1, 16], "INT32")
    with pytest.raises(InferenceServerException) as datatype:
        wrong.set_data_from_numpy(np.ones((1, 16), np.float32))
    assert datatype.value.message() == "got unexpected datatype FP32 from numpy array, " \
        "expected INT32"
    with pytest.raises(InferenceServerException) as shape:
        wrong.set_data_from_numpy(np.ones((2, 8), np.int32))
    assert shape.value.message() == "got unexpected numpy array shape [2, 8], expected [1, 16]"
    with pytest.raises(InferenceServerException) as not_an_array:
        wrong.set_data_from_numpy([1] * 16)
    assert not_an_array.value.message() == "input_tensor must be a numpy array"
    bf16 = grpcclient.InferInput("INPUT0", [2], "BF16")
    with pytest.raises(InferenceServerException) as bf16_dtype:
        bf16.set_data_from_numpy(np.ones(2, np.float16))
    assert bf16_dtype.value.message() == \
        "got unexpected datatype float16 from numpy array, expected <class 'numpy.float32'> " \
        "for BF16 type"
    classified = grpcclient.InferRequestedOutput("OUTPUT0", class_count=3)
    with pytest.raises(InferenceServerException) as no_shm:
        classified.set_shared_memory("region", 64)
    assert no_shm.value.message() == "shared memory can't be set on classification output"


def test_bf16_and_classification(client):
    """BF16 goes as float32 truncated to its upper 16 bits and comes back as float32, as
    tritonclient converts it; class_count asks for the top classes as "value:index" strings."""
    values = np.array([[1.005859375, -2.5, 3.14159]], dtype=np.float32)
    inputs = [grpcclient.InferInput("INPUT0", [1, 3], "BF16")]
    inputs[0].set_data_from_numpy(values)
    result = client.infer("identity_bf16", inputs)
    truncated = (values.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    assert result.as_numpy("OUTPUT0").dtype == np.float32
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), truncated)
    assert result.as_numpy("OUTPUT0")[0][0] == 1.0  # rounding would give 1.0078125
    assert result.get_output("OUTPUT0").datatype == "BF16"
    assert result.get_response(as_json=True)["outputs"][0]["datatype"] == "BF16"

    inputs = [grpcclient.InferInput("INPUT0", [1, 5], "FP32")]
    inputs[0].set_data_from_numpy(np.array([[0.5, 3.0, -1.0, 2.0, 7.5]], np.float32))
    result = client.infer("identity_fp32", inputs,
                          outputs=[grpcclient.InferRequestedOutput("OUTPUT0", class_count=2)])
    top = [item.decode().split(":") for item in result.as_numpy("OUTPUT0").flatten()]
    assert [(float(value), int(index)) for value, index in top] == [(7.5, 4), (3.0, 1)]
    assert result.get_output("OUTPUT0").datatype == "BYTES"


@pytest.fixture(scope="module")
def explicit_server(models):
    """A sonic-server whose models clients load and unload (tritonserver's explicit mode), of
    the generated repository, with jet_mlp_onnx loaded."""
    started = Server("--model-repository", models, "--model-control-mode", "explicit",
                     "--load-model", "jet_mlp_onnx")
    yield started
    started.stop()


def test_model_control(explicit_server, stubs):
    """simple_grpc_model_control.py: repository index, load, load with another configuration,
    unload, and a model that does not exist; errors as tritonclient's for the same calls."""
    reference = Reference(explicit_server.grpc, stubs)
    model_name = "jet_mlp_onnx"
    with grpcclient.InferenceServerClient(host_port(explicit_server.grpc)) as client:
        index = client.get_model_repository_index()
        assert len(index.models) == len(reference.call("RepositoryIndex").models) > 8
        assert model_name in [model.name for model in index.models]
        client.load_model(model_name)
        assert client.is_model_ready(model_name)

        wrong_format = '"parameters": {"config": {{"max_batch_size": "16"}}}'
        with pytest.raises(InferenceServerException) as malformed:
            client.load_model(model_name, config=wrong_format)
        parameter = reference.pb2.ModelRepositoryParameter
        assert (malformed.value.message(), malformed.value.status()) == reference.error(
            "RepositoryModelLoad", model_name=model_name,
            parameters={"config": parameter(string_param=wrong_format)})
        assert "failed to load" in malformed.value.message()  # what the example looks for
        client.load_model(model_name, config='{"max_batch_size":"16"}')
        assert client.get_model_config(model_name).config.max_batch_size == 16

        client.unload_model(model_name)
        assert not client.is_model_ready(model_name)
        states = client.get_model_repository_index(as_json=True)
        assert states == tritonclient_json(reference.call("RepositoryIndex"))
        client.load_model(model_name)
        assert client.is_model_ready(model_name)
        assert client.get_model_config(model_name).config.max_batch_size == 64

        # A path component longer than NAME_MAX: Triton's INTERNAL, and the server lives on.
        with pytest.raises(InferenceServerException) as long_path:
            client.load_model(model_name, config="{}", files={"file:" + "A" * 256: b"a"})
        assert long_path.value.status() == "StatusCode.INTERNAL"
        assert "failed to poll from model repository" in long_path.value.message()
        assert client.is_server_live()

        with pytest.raises(InferenceServerException) as missing:
            client.load_model("wrong_model_name")
        assert "failed to load" in missing.value.message()
        assert (missing.value.message(), missing.value.status()) == \
            reference.error("RepositoryModelLoad", model_name="wrong_model_name")
        # Files sent with the load: a model.onnx that is not one fails as Triton's backend
        # load does (the message names the file, in a directory of its own for each load).
        with pytest.raises(InferenceServerException) as files:
            client.load_model(model_name, config="{}", files={"file:1/model.onnx": b"a"})
        message, status = reference.error("RepositoryModelLoad", model_name=model_name,
                                           parameters={
                                               "config": parameter(string_param="{}"),
                                               "file:1/model.onnx": parameter(bytes_param=b"a")})
        assert files.value.status() == status == "StatusCode.INVALID_ARGUMENT"
        for said in (files.value.message(), message):
            assert said.startswith("load failed for model '%s': " % model_name), said
    reference.channel.close()


def test_headers_and_plugins_reach_the_server(tmp_path, stubs):
    """A plugin's headers go with every call (tritonclient's register_plugin), and a call's
    headers= too: a server that wants a bearer token answers only calls that carry it."""
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    guarded = Server("--auth-token-file", str(token))
    try:
        url = host_port(guarded.grpc)

        class Bearer(grpcclient.InferenceServerClientPlugin):
            def __call__(self, request):
                request.headers["authorization"] = "Bearer s3cret"

        with grpcclient.InferenceServerClient(url, max_attempts=1) as client:
            with pytest.raises(InferenceServerException) as refused:
                client.is_server_ready()
            assert refused.value.status() == "StatusCode.UNAUTHENTICATED"
            assert client.is_server_ready(headers={"authorization": "Bearer s3cret"})
            inputs, input0, input1 = simple_inputs()
            result = client.infer("simple", inputs, headers={"authorization": "Bearer s3cret"})
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), input0 + input1)

            client.register_plugin(Bearer())
            assert isinstance(client.plugin(), Bearer)
            with pytest.raises(InferenceServerException) as twice:
                client.register_plugin(Bearer())
            assert twice.value.message().startswith("A plugin is already registered.")
            assert client.is_server_ready()
            assert client.get_model_metadata("simple").name == "simple"
            np.testing.assert_array_equal(client.infer("simple", inputs).as_numpy("OUTPUT1"),
                                          input0 - input1)
            client.unregister_plugin()
            with pytest.raises(InferenceServerException) as none:
                client.unregister_plugin()
            assert none.value.message() == "No plugin has been registered."

            responses = []
            client.start_stream(lambda result, error: responses.append((result, error)),
                                headers={"authorization": "Bearer s3cret"})
            client.async_stream_infer("simple", inputs)
            client.stop_stream()
            assert responses[0][1] is None
            np.testing.assert_array_equal(responses[0][0].as_numpy("OUTPUT0"), input0 + input1)

            client.register_plugin(BasicAuth("user", "s3cret"))  # not a bearer token
            with pytest.raises(InferenceServerException) as basic:
                client.is_server_ready()
            assert basic.value.status() == "StatusCode.UNAUTHENTICATED"
    finally:
        guarded.stop()


def test_connection_arguments(server, certificates):
    """The constructor's arguments: keepalive options and channel arguments map onto sonic's;
    ssl with certificate files reaches a TLS server; creds cannot be used; sonic's own options
    are extra keyword arguments."""
    url = host_port(server.grpc)
    keepalive = grpcclient.KeepAliveOptions(keepalive_time_ms=60000, keepalive_timeout_ms=5000)
    with grpcclient.InferenceServerClient(url, keepalive_options=keepalive) as client:
        assert client.is_server_live()
    with grpcclient.InferenceServerClient(
            url, channel_args=[("grpc.keepalive_time_ms", 60000),
                               ("grpc.max_receive_message_length", -1)]) as client:
        assert client.is_server_live()
    with grpcclient.InferenceServerClient(url, timeout=5.0, max_attempts=2) as client:
        assert client.is_model_ready("simple")
    with pytest.raises(InferenceServerException) as creds:
        grpcclient.InferenceServerClient(url, creds=object())
    assert "creds" in creds.value.message()
    with pytest.raises(TypeError):  # as Python refuses an unknown keyword of tritonclient's
        grpcclient.InferenceServerClient(url, no_such_sonic_option=1)

    secure = Server("--tls-cert", str(certificates / "server.pem"),
                    "--tls-key", str(certificates / "server.key"))
    try:
        with grpcclient.InferenceServerClient(
                host_port(secure.grpc), ssl=True,
                root_certificates=str(certificates / "ca.pem")) as client:
            inputs, input0, input1 = simple_inputs()
            np.testing.assert_array_equal(client.infer("simple", inputs).as_numpy("OUTPUT0"),
                                          input0 + input1)
    finally:
        secure.stop()


def test_sonic_fallback_underneath(models, dead_url):
    """sonic's options work underneath tritonclient's calls: with no server, a
    fallback_repository runs the model in-process."""
    reference_dir = os.path.join(models, "..", "reference", "jet_mlp_onnx")
    features = np.load(os.path.join(reference_dir, "features.npy"))
    with grpcclient.InferenceServerClient(host_port(dead_url), fallback_repository=models,
                                          max_attempts=1) as client:
        inputs = [grpcclient.InferInput("features", list(features.shape), "FP32")]
        inputs[0].set_data_from_numpy(features)
        result = client.infer("jet_mlp_onnx", inputs)
    np.testing.assert_allclose(result.as_numpy("probabilities"),
                               np.load(os.path.join(reference_dir, "probabilities.npy")),
                               rtol=1e-5, atol=1e-6)


def test_set_data_copies_the_array_as_tritonclient_does(client):
    """set_data_from_numpy() copies the array as tritonclient does (it serializes it then): a
    buffer refilled afterwards does not change what is sent; sonic's copy=False sends the
    array itself."""
    buffer = np.arange(16, dtype=np.int32).reshape(1, 16)
    strings = np.array([[b"a", b"b"]], dtype=np.object_)
    copied = grpcclient.InferInput("INPUT0", [1, 16], "INT32").set_data_from_numpy(buffer)
    borrowed = grpcclient.InferInput("INPUT0", [1, 16], "INT32").set_data_from_numpy(
        buffer, copy=False)
    text = grpcclient.InferInput("INPUT0", [1, 2], "BYTES").set_data_from_numpy(strings)
    buffer[...] = 7
    strings[0, 0] = b"changed"
    assert client.infer("identity_int32", [copied]).as_numpy("OUTPUT0").tolist() == \
        [list(range(16))]
    assert client.infer("identity_int32", [borrowed]).as_numpy("OUTPUT0").tolist() == \
        [[7] * 16]
    assert client.infer("simple_identity", [text]).as_numpy("OUTPUT0").tolist() == \
        [[b"a", b"b"]]
