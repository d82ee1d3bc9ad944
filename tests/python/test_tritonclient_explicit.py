"""Triton's grpc_explicit_*_content_client.py examples through sonic.tritonclient.grpc's
service_pb2 and service_pb2_grpc (Triton's protobuf messages and stub, for grpcio), against
sonic-server: inputs as typed contents instead of raw bytes."""

import grpc
import numpy as np
import pytest

from sonic.tritonclient import utils
from sonic.tritonclient.grpc import model_config_pb2, service_pb2, service_pb2_grpc


def host_port(url):
    return url.split("://", 1)[1]


@pytest.fixture
def grpc_stub(server):
    with grpc.insecure_channel(host_port(server.grpc)) as channel:
        yield service_pb2_grpc.GRPCInferenceServiceStub(channel)


def simple_request(model_name, datatype, fill):
    """A request for a model with INPUT0 = 0..15 and INPUT1 = ones, through `fill`, and both
    outputs."""
    request = service_pb2.ModelInferRequest()
    request.model_name = model_name
    request.model_version = ""
    inputs = []
    for name, values in (("INPUT0", list(range(16))), ("INPUT1", [1] * 16)):
        tensor = service_pb2.ModelInferRequest().InferInputTensor()
        tensor.name = name
        tensor.datatype = datatype
        tensor.shape.extend([1, 16])
        fill(tensor.contents, values)
        inputs.append(tensor)
    request.inputs.extend(inputs)
    for name in ("OUTPUT0", "OUTPUT1"):
        output = service_pb2.ModelInferRequest().InferRequestedOutputTensor()
        output.name = name
        request.outputs.extend([output])
    return request


def test_explicit_int_content_client(grpc_stub):
    """grpc_explicit_int_content_client.py: int_contents; contents together with raw input
    contents are refused with INVALID_ARGUMENT and Triton's words, which the example looks
    for."""
    def fill(contents, values):
        contents.int_contents[:] = values

    request = simple_request("simple", "INT32", fill)
    response = grpc_stub.ModelInfer(request)
    output_results = []
    for index, output in enumerate(response.outputs):
        shape = list(output.shape)
        output_results.append(np.resize(
            np.frombuffer(response.raw_output_contents[index], dtype=np.int32), shape))
    assert len(output_results) == 2
    for i in range(16):
        assert output_results[0][0][i] == i + 1 and output_results[1][0][i] == i - 1

    request.raw_input_contents.extend([np.array(list(range(8))).tobytes()])
    request.inputs[0].contents.int_contents[:] = list(range(8, 16))
    with pytest.raises(grpc.RpcError) as refused:
        grpc_stub.ModelInfer(request)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert ("contents field must not be specified when using raw_input_contents for 'INPUT0' "
            "for model 'simple'") in refused.value.details()


def test_explicit_int8_content_client(grpc_stub):
    """grpc_explicit_int8_content_client.py's tensors: INT8 values travel in int_contents."""
    def fill(contents, values):
        contents.int_contents[:] = values

    request = simple_request("identity_int8", "INT8", fill)
    del request.inputs[1]
    del request.outputs[1]
    response = grpc_stub.ModelInfer(request)
    assert response.outputs[0].datatype == "INT8"
    assert np.frombuffer(response.raw_output_contents[0], np.int8).tolist() == list(range(16))


def test_explicit_byte_content_client(grpc_stub):
    """grpc_explicit_byte_content_client.py: bytes_contents for simple_string, the outputs read
    with utils.deserialize_bytes_tensor."""
    def fill(contents, values):
        for value in values:
            contents.bytes_contents.append(str(value).encode("utf-8"))

    response = grpc_stub.ModelInfer(simple_request("simple_string", "BYTES", fill))
    output_results = []
    for index, output in enumerate(response.outputs):
        output_results.append(np.resize(
            utils.deserialize_bytes_tensor(response.raw_output_contents[index]),
            list(output.shape)))
    assert len(output_results) == 2
    for i in range(16):
        assert int(output_results[0][0][i]) == i + 1
        assert int(output_results[1][0][i]) == i - 1


def test_model_config_messages(grpc_stub):
    """model_config_pb2's ModelConfig is the message of ModelConfigResponse.config."""
    response = grpc_stub.ModelConfig(service_pb2.ModelConfigRequest(name="simple"))
    assert response.config.name == "simple"
    assert response.config.input[0].data_type == model_config_pb2.TYPE_INT32
    assert isinstance(response.config, model_config_pb2.ModelConfig)
