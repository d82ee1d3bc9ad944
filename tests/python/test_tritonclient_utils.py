"""sonic.tritonclient.utils and the protobuf-shaped answers, checked against tritonclient's
source (utils/__init__.py) and against protobuf itself: the plain objects sonic.tritonclient
answers with read, print and serialize as the protobuf messages tritonclient answers with."""

import inspect
import json
import os
import struct
import sys

import numpy as np
import pytest
from google.protobuf import text_format
from google.protobuf.json_format import MessageToJson

import sonic.tritonclient.grpc as grpcclient
import sonic.tritonclient.grpc.aio as aioclient
from sonic.tritonclient import _messages, utils
from sonic.tritonclient.utils import InferenceServerException

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
sys.path.insert(0, HERE)
from stubs import load_stubs  # noqa: E402
from test_tritonclient_grpc import assert_same_fields  # noqa: E402


@pytest.fixture(scope="module")
def protos(tmp_path_factory):
    """model_config_pb2 and grpc_service_pb2, generated from proto/ by grpc_tools."""
    model_config_pb2, pb2, _ = load_stubs(os.path.join(HERE, "..", "..", "proto"),
                                          str(tmp_path_factory.mktemp("stubs")))
    return model_config_pb2, pb2


def test_datatypes_as_tritonclient_maps_them():
    """np_to_triton_dtype and triton_to_np_dtype give what tritonclient's give."""
    pairs = [(bool, "BOOL"), (np.int8, "INT8"), (np.int16, "INT16"), (np.int32, "INT32"),
             (np.int64, "INT64"), (np.uint8, "UINT8"), (np.uint16, "UINT16"),
             (np.uint32, "UINT32"), (np.uint64, "UINT64"), (np.float16, "FP16"),
             (np.float32, "FP32"), (np.float64, "FP64"), (np.object_, "BYTES")]
    for numpy_type, datatype in pairs:
        assert utils.np_to_triton_dtype(numpy_type) == datatype
        assert utils.np_to_triton_dtype(np.dtype(numpy_type)) == datatype
        assert utils.triton_to_np_dtype(datatype) is numpy_type
    assert utils.np_to_triton_dtype(np.dtype("S4")) == "BYTES"
    assert utils.np_to_triton_dtype(np.dtype("U4")) is None
    assert utils.np_to_triton_dtype(np.complex64) is None
    assert utils.triton_to_np_dtype("BF16") is np.float32
    assert utils.triton_to_np_dtype("NOT_A_TYPE") is None


def test_bytes_tensors_serialised_as_tritonclient_does():
    """serialize_byte_tensor: a 0-d object array holding the wire bytes (4-byte little-endian
    length, then the bytes, row-major); str elements as UTF-8, other objects as str()."""
    tensor = np.array([[b"ab", "\u00e9"], [b"", 12]], dtype=np.object_)
    serialized = utils.serialize_byte_tensor(tensor)
    assert serialized.dtype == np.object_ and serialized.shape == ()
    wire = b"".join(struct.pack("<I", len(item)) + item
                    for item in (b"ab", "\u00e9".encode("utf-8"), b"", b"12"))
    assert serialized.item() == wire
    assert utils.serialized_byte_size(serialized) == len(wire)
    assert utils.serialized_byte_size(tensor[:, :1]) == 2  # the elements' own bytes
    assert utils.deserialize_bytes_tensor(wire).tolist() == [b"ab", "\u00e9".encode(), b"",
                                                             b"12"]
    assert utils.serialize_byte_tensor(np.array([b"x\x00"], dtype=np.bytes_)).item() == \
        struct.pack("<I", 1) + b"x"  # numpy's bytes_ drops trailing NULs, as tritonclient warns
    empty = utils.serialize_byte_tensor(np.array([], dtype=np.object_))
    assert empty.shape == (0,) and empty.dtype == np.object_
    with pytest.raises(InferenceServerException) as invalid:
        utils.serialize_byte_tensor(np.ones(2, np.int32))
    assert invalid.value.message() == "cannot serialize bytes tensor: invalid datatype"
    with pytest.raises(InferenceServerException):
        utils.serialized_byte_size(np.ones(2, np.int32))


def test_bf16_tensors_truncated_as_tritonclient_does():
    """serialize_bf16_tensor keeps the upper 16 bits of each float32 (no rounding)."""
    values = np.array([1.005859375, -2.5, np.inf], dtype=np.float32)
    serialized = utils.serialize_bf16_tensor(values)
    expected = b"".join(struct.pack("<f", value)[2:4] for value in values)
    assert serialized.shape == () and serialized.item() == expected
    assert utils.deserialize_bf16_tensor(expected).tolist() == [1.0, -2.5, np.inf]
    with pytest.raises(InferenceServerException):
        utils.serialize_bf16_tensor(np.ones(2, np.float64))


def test_inference_server_exception():
    """message(), status(), debug_details() and str() as tritonclient's."""
    plain = InferenceServerException("went wrong")
    assert (plain.message(), plain.status(), plain.debug_details()) == ("went wrong", None,
                                                                        None)
    assert str(plain) == "went wrong"
    full = InferenceServerException(msg="no model", status="StatusCode.NOT_FOUND",
                                    debug_details="details")
    assert str(full) == "[StatusCode.NOT_FOUND] no model"
    assert full.debug_details() == "details"
    with pytest.raises(InferenceServerException) as raised:
        utils.raise_error("refused")
    assert raised.value.message() == "refused" and raised.value.status() is None


def test_module_names_are_tritonclients():
    """The names tritonclient.grpc and tritonclient.grpc.aio export are there."""
    for module in (grpcclient, aioclient):
        for name in ("InferenceServerClient", "InferInput", "InferRequestedOutput",
                     "InferResult", "KeepAliveOptions", "InferenceServerException",
                     "np_to_triton_dtype", "triton_to_np_dtype", "serialize_byte_tensor",
                     "deserialize_bytes_tensor", "raise_error", "InferenceServerClientPlugin"):
            assert hasattr(module, name), (module.__name__, name)
    assert aioclient.InferenceServerClient is not grpcclient.InferenceServerClient
    assert aioclient.InferInput is grpcclient.InferInput
    assert grpcclient.MAX_GRPC_MESSAGE_SIZE == 2 ** 31 - 1


def sample_config(model_config_pb2):
    """A ModelConfig with every kind of field: enums, int64s, repeated messages, a map, a
    oneof, nested messages, floats and bytes."""
    config = model_config_pb2.ModelConfig(name="demo \"model\"\n", platform="onnxruntime_onnx",
                                          max_batch_size=8)
    tensor = config.input.add(name="INPUT0", data_type=model_config_pb2.TYPE_FP32,
                              dims=[-1, 16, 3])
    tensor.reshape.shape.extend([48])
    config.output.add(name="OUTPUT0", data_type=model_config_pb2.TYPE_STRING, dims=[1],
                      label_filename="labels.txt")
    config.instance_group.add(count=2, kind=model_config_pb2.ModelInstanceGroup.KIND_CPU)
    config.dynamic_batching.preferred_batch_size.extend([4, 8])
    config.dynamic_batching.max_queue_delay_microseconds = 2 ** 40
    config.parameters["threads"].string_value = "4"
    config.version_policy.specific.versions.extend([1, 3])
    config.model_warmup.add(name="warm", batch_size=1).inputs["INPUT0"].random_data = True
    return config


def test_messages_read_as_protobufs_do(protos):
    """A message decoded by sonic.tritonclient has protobuf's fields, values, defaults, JSON,
    text format and wire bytes."""
    model_config_pb2, _ = protos
    config = sample_config(model_config_pb2)
    ours = _messages.from_wire("inference.ModelConfig", config.SerializeToString())
    assert_same_fields(ours, config, "config")
    assert ours.input[0].dims == [-1, 16, 3]
    assert ours.input[0].data_type == model_config_pb2.TYPE_FP32
    assert ours.dynamic_batching.max_queue_delay_microseconds == 2 ** 40
    assert ours.backend == "" and ours.sequence_batching.max_sequence_idle_microseconds == 0
    assert ours.version_policy.WhichOneof("policy_choice") == "specific"
    assert ours.HasField("dynamic_batching") and not ours.HasField("sequence_batching")
    assert ours.model_warmup[0].inputs["INPUT0"].WhichOneof("input_data_type") == "random_data"
    assert ours.parameters["threads"].string_value == "4"
    assert str(ours) == text_format.MessageToString(config)
    assert _messages.to_json(ours) == json.loads(
        MessageToJson(config, preserving_proto_field_name=True))
    assert model_config_pb2.ModelConfig.FromString(ours.SerializeToString()) == config
    # A map's missing key reads as an empty value, and is then there, as in protobuf.
    assert ours.parameters["missing"].string_value == config.parameters["missing"].string_value
    assert str(ours) == text_format.MessageToString(config)
    with pytest.raises(AttributeError):
        ours.no_such_field


def test_messages_built_from_python_values(protos):
    """What InferResult.get_response() builds serializes as the same protobuf message."""
    _, pb2 = protos
    response = _messages.Message("inference.ModelInferResponse", model_name="m", id="7")
    response.parameters["flag"] = _messages.Message("inference.InferParameter", bool_param=True)
    response.parameters["big"] = _messages.Message("inference.InferParameter",
                                                   uint64_param=2 ** 64 - 1)
    response.outputs.append(_messages.Message(
        "inference.ModelInferResponse.InferOutputTensor", name="OUT", datatype="FP32",
        shape=[2]))
    response.raw_output_contents.append(np.array([1.5, 2], np.float32).tobytes())
    expected = pb2.ModelInferResponse(model_name="m", id="7")
    expected.parameters["flag"].bool_param = True
    expected.parameters["big"].uint64_param = 2 ** 64 - 1
    expected.outputs.add(name="OUT", datatype="FP32", shape=[2])
    expected.raw_output_contents.append(np.array([1.5, 2], np.float32).tobytes())
    assert pb2.ModelInferResponse.FromString(response.SerializeToString()) == expected
    assert_same_fields(response, expected)
    assert response.parameters["flag"].WhichOneof("parameter_choice") == "bool_param"
    response.parameters["flag"].int64_param = 3  # setting a oneof member clears the others
    assert response.parameters["flag"].WhichOneof("parameter_choice") == "int64_param"
    assert _messages.to_json(response)["raw_output_contents"] == \
        json.loads(MessageToJson(expected))["rawOutputContents"]


# The signatures of tritonclient.grpc.InferenceServerClient's methods, as its grpc/_client.py
# declares them (client_timeout defaults to sys.maxsize in control calls; the aio client's to
# None), and those of its InferInput, InferRequestedOutput and KeepAliveOptions.
MAXSIZE = str(sys.maxsize)
CLIENT_SIGNATURES = {
    "__init__": "url, verbose=False, ssl=False, root_certificates=None, private_key=None, "
                "certificate_chain=None, creds=None, keepalive_options=None, channel_args=None",
    "is_server_live": "headers=None, client_timeout=T",
    "is_server_ready": "headers=None, client_timeout=T",
    "is_model_ready": "model_name, model_version='', headers=None, client_timeout=T",
    "get_server_metadata": "headers=None, as_json=False, client_timeout=T",
    "get_model_metadata": "model_name, model_version='', headers=None, as_json=False, "
                          "client_timeout=T",
    "get_model_config": "model_name, model_version='', headers=None, as_json=False, "
                        "client_timeout=T",
    "get_model_repository_index": "headers=None, as_json=False, client_timeout=T",
    "load_model": "model_name, headers=None, config=None, files=None, client_timeout=T",
    "unload_model": "model_name, headers=None, unload_dependents=False, client_timeout=T",
    "get_inference_statistics": "model_name='', model_version='', headers=None, as_json=False, "
                                "client_timeout=T",
    "update_trace_settings": "model_name=None, settings={}, headers=None, as_json=False, "
                             "client_timeout=T",
    "get_trace_settings": "model_name=None, headers=None, as_json=False, client_timeout=T",
    "update_log_settings": "settings, headers=None, as_json=False, client_timeout=T",
    "get_log_settings": "headers=None, as_json=False, client_timeout=T",
    "get_system_shared_memory_status": "region_name='', headers=None, as_json=False, "
                                       "client_timeout=T",
    "register_system_shared_memory": "name, key, byte_size, offset=0, headers=None, "
                                     "client_timeout=T",
    "unregister_system_shared_memory": "name='', headers=None, client_timeout=T",
    "get_cuda_shared_memory_status": "region_name='', headers=None, as_json=False, "
                                     "client_timeout=T",
    "register_cuda_shared_memory": "name, raw_handle, device_id, byte_size, headers=None, "
                                   "client_timeout=T",
    "unregister_cuda_shared_memory": "name='', headers=None, client_timeout=T",
    "infer": "model_name, inputs, model_version='', outputs=None, request_id='', sequence_id=0, "
             "sequence_start=False, sequence_end=False, priority=0, timeout=None, "
             "client_timeout=None, headers=None, compression_algorithm=None, parameters=None",
}
SYNC_ONLY = {
    "async_infer": "model_name, inputs, callback, model_version='', outputs=None, "
                   "request_id='', sequence_id=0, sequence_start=False, sequence_end=False, "
                   "priority=0, timeout=None, client_timeout=None, headers=None, "
                   "compression_algorithm=None, parameters=None",
    "start_stream": "callback, stream_timeout=None, headers=None, compression_algorithm=None",
    "stop_stream": "cancel_requests=False",
    "async_stream_infer": "model_name, inputs, model_version='', outputs=None, request_id='', "
                          "sequence_id=0, sequence_start=False, sequence_end=False, "
                          "enable_empty_final_response=False, priority=0, timeout=None, "
                          "parameters=None",
    "close": "",
}
AIO_ONLY = {
    "stream_infer": "inputs_iterator, stream_timeout=None, headers=None, "
                    "compression_algorithm=None",
    "close": "",
}


def parameters_of(function):
    """A function's parameters as written, without self and sonic's extra keywords."""
    text = str(inspect.signature(function))[1:-1]
    names = [part for part in text.split(", ") if part not in ("self", "**sonic_options")]
    return ", ".join(names)


def test_signatures_are_tritonclients():
    """Every method takes tritonclient's arguments, in its order, with its defaults."""
    for client, timeout, extra in ((grpcclient.InferenceServerClient, MAXSIZE, SYNC_ONLY),
                                   (aioclient.InferenceServerClient, "None", AIO_ONLY)):
        for name, expected in list(CLIENT_SIGNATURES.items()) + list(extra.items()):
            assert parameters_of(getattr(client, name)) == \
                expected.replace("client_timeout=T", "client_timeout=" + timeout), name
    assert parameters_of(grpcclient.InferInput.__init__) == "name, shape, datatype"
    assert parameters_of(grpcclient.InferInput.set_shared_memory) == \
        "region_name, byte_size, offset=0"
    assert parameters_of(grpcclient.InferRequestedOutput.__init__) == "name, class_count=0"
    assert parameters_of(grpcclient.InferRequestedOutput.set_shared_memory) == \
        "region_name, byte_size, offset=0"
    assert parameters_of(grpcclient.InferResult.get_response) == "as_json=False"
    assert parameters_of(grpcclient.InferResult.get_output) == "name, as_json=False"
    assert parameters_of(grpcclient.KeepAliveOptions.__init__) == \
        "keepalive_time_ms=2147483647, keepalive_timeout_ms=20000, " \
        "keepalive_permit_without_calls=False, http2_max_pings_without_data=2"
