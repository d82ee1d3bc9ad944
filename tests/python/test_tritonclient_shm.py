"""System shared memory through sonic.tritonclient, in the shapes of Triton's
simple_grpc_shm_client.py and simple_grpc_shm_string_client.py: regions made with
sonic.tritonclient.utils.shared_memory, registered with sonic-server, inputs read from them and
outputs written into them; the status answers as tritonclient's for the same server."""

import json
import os
import sys
import uuid

import grpc
import numpy as np
import pytest
from google.protobuf.json_format import MessageToJson

import sonic.tritonclient.grpc as grpcclient
import sonic.tritonclient.utils.shared_memory as shm
from sonic.tritonclient import utils

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
from stubs import load_stubs  # noqa: E402


def host_port(url):
    return url.split("://", 1)[1]


def key(name):
    """A shared memory key of this test run alone."""
    return "/sonic_tritonclient_%s_%s" % (name, uuid.uuid4().hex[:12])


@pytest.fixture
def client(server):
    with grpcclient.InferenceServerClient(url=host_port(server.grpc)) as made:
        made.unregister_system_shared_memory()
        made.unregister_cuda_shared_memory()
        yield made
        made.unregister_system_shared_memory()


def test_shm_client(client, server, tmp_path_factory):
    """simple_grpc_shm_client.py: simple's inputs in one region, its outputs in another; the
    outputs' datatype and shape from get_output() read them back."""
    input0_data = np.arange(start=0, stop=16, dtype=np.int32)
    input1_data = np.ones(shape=16, dtype=np.int32)
    input_byte_size = input0_data.size * input0_data.itemsize
    output_byte_size = input_byte_size
    output_key, input_key = key("output"), key("input")

    shm_op_handle = shm.create_shared_memory_region("output_data", output_key,
                                                    output_byte_size * 2)
    client.register_system_shared_memory("output_data", output_key, output_byte_size * 2)
    shm_ip_handle = shm.create_shared_memory_region("input_data", input_key, input_byte_size * 2)
    shm.set_shared_memory_region(shm_ip_handle, [input0_data])
    shm.set_shared_memory_region(shm_ip_handle, [input1_data], offset=input_byte_size)
    client.register_system_shared_memory("input_data", input_key, input_byte_size * 2)

    inputs = [grpcclient.InferInput("INPUT0", [1, 16], "INT32"),
              grpcclient.InferInput("INPUT1", [1, 16], "INT32")]
    inputs[0].set_shared_memory("input_data", input_byte_size)
    inputs[1].set_shared_memory("input_data", input_byte_size, offset=input_byte_size)
    outputs = [grpcclient.InferRequestedOutput("OUTPUT0"),
               grpcclient.InferRequestedOutput("OUTPUT1")]
    outputs[0].set_shared_memory("output_data", output_byte_size)
    outputs[1].set_shared_memory("output_data", output_byte_size, offset=output_byte_size)
    results = client.infer(model_name="simple", inputs=inputs, outputs=outputs)

    output0 = results.get_output("OUTPUT0")
    assert output0 is not None
    output0_data = shm.get_contents_as_numpy(
        shm_op_handle, utils.triton_to_np_dtype(output0.datatype), output0.shape)
    output1 = results.get_output("OUTPUT1")
    assert output1 is not None
    output1_data = shm.get_contents_as_numpy(
        shm_op_handle, utils.triton_to_np_dtype(output1.datatype), output1.shape,
        offset=output_byte_size)
    np.testing.assert_array_equal(output0_data[0], input0_data + input1_data)
    np.testing.assert_array_equal(output1_data[0], input0_data - input1_data)
    # Triton answers an output in shared memory with an empty raw entry and no parameters.
    assert results.as_numpy("OUTPUT0") is None
    response = results.get_response(as_json=True)
    assert response["raw_output_contents"] == ["", ""]
    assert [o.get("parameters") for o in response["outputs"]] == [None, None]

    # The status as tritonclient reads it, over a connection of its own (regions are the
    # user's while the connection that registered them lasts).
    _, pb2, pb2_grpc = load_stubs(os.path.join(HERE, "..", "..", "proto"),
                                  str(tmp_path_factory.mktemp("stubs")))
    with grpc.insecure_channel(host_port(server.grpc)) as channel:
        expected = pb2_grpc.GRPCInferenceServiceStub(channel).SystemSharedMemoryStatus(
            pb2.SystemSharedMemoryStatusRequest())
    status = client.get_system_shared_memory_status()
    assert set(status.regions) == {"input_data", "output_data"}
    assert status.regions["input_data"].key == input_key
    assert status.regions["output_data"].byte_size == output_byte_size * 2
    assert client.get_system_shared_memory_status(as_json=True) == json.loads(
        MessageToJson(expected, preserving_proto_field_name=True))
    one = client.get_system_shared_memory_status("input_data", as_json=True)
    assert list(one["regions"]) == ["input_data"]

    client.unregister_system_shared_memory()
    assert client.get_system_shared_memory_status(as_json=True) == {}
    assert sorted(shm.mapped_shared_memory_regions()) == sorted([output_key, input_key])
    shm.destroy_shared_memory_region(shm_ip_handle)
    shm.destroy_shared_memory_region(shm_op_handle)
    assert shm.mapped_shared_memory_regions() == []
    # The arrays read from the region stay valid after it is destroyed.
    np.testing.assert_array_equal(output0_data[0], input0_data + input1_data)


def test_shm_string_client(client):
    """simple_grpc_shm_string_client.py: BYTES tensors serialised with serialize_byte_tensor
    into regions sized with serialized_byte_size, read back with get_contents_as_numpy."""
    in0 = np.arange(start=0, stop=16, dtype=np.int32)
    input0_data = np.array([str(x).encode("utf-8") for x in in0.flatten()], dtype=object)
    in1 = np.ones(shape=16, dtype=np.int32)
    input1_data = np.array([str(x).encode("utf-8") for x in in1.flatten()], dtype=object)
    expected_sum = np.array([str(x).encode("utf-8") for x in np.add(in0, in1).flatten()],
                            dtype=object)
    expected_diff = np.array([str(x).encode("utf-8") for x in np.subtract(in0, in1).flatten()],
                             dtype=object)
    input0_data_serialized = utils.serialize_byte_tensor(input0_data)
    input1_data_serialized = utils.serialize_byte_tensor(input1_data)
    input0_byte_size = utils.serialized_byte_size(input0_data_serialized)
    input1_byte_size = utils.serialized_byte_size(input1_data_serialized)
    output0_byte_size = utils.serialized_byte_size(utils.serialize_byte_tensor(expected_sum))
    output1_byte_size = utils.serialized_byte_size(utils.serialize_byte_tensor(expected_diff))

    keys = {name: key(name) for name in ("output0", "output1", "input0", "input1")}
    handles = {}
    for name, size in (("output0", output0_byte_size), ("output1", output1_byte_size),
                       ("input0", input0_byte_size), ("input1", input1_byte_size)):
        handles[name] = shm.create_shared_memory_region(name + "_data", keys[name], size)
    shm.set_shared_memory_region(handles["input0"], [input0_data_serialized])
    shm.set_shared_memory_region(handles["input1"], [input1_data_serialized])
    for name, size in (("output0", output0_byte_size), ("output1", output1_byte_size),
                       ("input0", input0_byte_size), ("input1", input1_byte_size)):
        client.register_system_shared_memory(name + "_data", keys[name], size)

    inputs = [grpcclient.InferInput("INPUT0", [1, 16], "BYTES"),
              grpcclient.InferInput("INPUT1", [1, 16], "BYTES")]
    inputs[0].set_shared_memory("input0_data", input0_byte_size)
    inputs[1].set_shared_memory("input1_data", input1_byte_size)
    outputs = [grpcclient.InferRequestedOutput("OUTPUT0"),
               grpcclient.InferRequestedOutput("OUTPUT1")]
    outputs[0].set_shared_memory("output0_data", output0_byte_size)
    outputs[1].set_shared_memory("output1_data", output1_byte_size)
    results = client.infer(model_name="simple_string", inputs=inputs, outputs=outputs)

    output0 = results.get_output("OUTPUT0")
    assert utils.triton_to_np_dtype(output0.datatype) == np.object_
    output0_data = shm.get_contents_as_numpy(
        handles["output0"], utils.triton_to_np_dtype(output0.datatype), output0.shape)
    output1 = results.get_output("OUTPUT1")
    output1_data = shm.get_contents_as_numpy(
        handles["output1"], utils.triton_to_np_dtype(output1.datatype), output1.shape)
    assert list(output0_data[0]) == list(expected_sum)
    assert list(output1_data[0]) == list(expected_diff)

    client.unregister_system_shared_memory()
    assert len(shm.mapped_shared_memory_regions()) == 4
    for handle in handles.values():
        shm.destroy_shared_memory_region(handle)
    assert len(shm.mapped_shared_memory_regions()) == 0


def test_shared_memory_regions():
    """utils.shared_memory's handles: an existing key is reused unless create_only; the last
    handle of a key this process created unlinks it; set_shared_memory_region() takes lists of
    arrays only."""
    name = key("utils")
    first = shm.create_shared_memory_region("utils", name, 64)
    path = "/dev/shm/" + name.lstrip("/")
    assert os.path.exists(path) and os.stat(path).st_size == 64
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o600)  # what sonic-server requires
    with pytest.raises(shm.SharedMemoryException):
        shm.create_shared_memory_region("utils", name, 64, create_only=True)
    second = shm.create_shared_memory_region("utils", name, 64)
    shm.set_shared_memory_region(first, [np.arange(4, dtype=np.float64)])
    view = shm.get_contents_as_numpy(second, np.float64, [2, 2])
    np.testing.assert_array_equal(view, [[0, 1], [2, 3]])
    shm.set_shared_memory_region(second, [np.full(2, 7, np.int32)], offset=32)
    assert shm.get_contents_as_numpy(first, np.int32, [2], offset=32).tolist() == [7, 7]
    with pytest.raises(shm.SharedMemoryException) as not_a_list:
        shm.set_shared_memory_region(first, np.zeros(2))
    assert str(not_a_list.value) == \
        "input_values must be specified as a list/tuple of numpy arrays"
    with pytest.raises(shm.SharedMemoryException):
        shm.set_shared_memory_region(first, [np.zeros(100)])  # past the region's end
    assert shm.mapped_shared_memory_regions() == [name]
    shm.destroy_shared_memory_region(first)
    assert os.path.exists(path)  # the other handle still uses it
    shm.destroy_shared_memory_region(second)
    assert not os.path.exists(path)
    assert shm.mapped_shared_memory_regions() == []
    np.testing.assert_array_equal(view, [[0, 1], [2, 3]])  # still mapped for the array
