"""sonic.tritonclient.http.aio in the shape of Triton's simple_http_aio_infer_client.py, and
system shared memory through sonic.tritonclient.http in the shape of simple_http_shm_client.py,
against sonic-server's HTTP port and triton_http_server.py."""

import asyncio
import json
import uuid

import numpy as np
import pytest

import sonic.tritonclient.http as httpclient
import sonic.tritonclient.http.aio as aioclient
import sonic.tritonclient.utils.shared_memory as shm
from sonic.tritonclient import utils
from sonic.tritonclient.utils import InferenceServerException

from test_http import http_port, request
from triton_http_server import TritonHttpServer


@pytest.fixture(scope="module")
def triton():
    with TritonHttpServer(slow_seconds=0.5) as started:
        yield started


@pytest.fixture(params=["sonic-server", "triton"])
def url(request, server, triton):
    if request.param == "sonic-server":
        return "127.0.0.1:%d" % http_port(server)
    return "127.0.0.1:%d" % triton.server_address[1]


def test_aio_infer_client(url):
    """simple_http_aio_infer_client.py: requests awaited together; control calls as
    coroutines answering what the blocking client answers."""
    input0 = np.arange(16, dtype=np.int32).reshape(1, 16)
    input1 = np.ones((1, 16), dtype=np.int32)

    async def main():
        async with aioclient.InferenceServerClient(url=url) as client:
            inputs = [aioclient.InferInput("INPUT0", [1, 16], "INT32"),
                      aioclient.InferInput("INPUT1", [1, 16], "INT32")]
            inputs[0].set_data_from_numpy(input0)
            inputs[1].set_data_from_numpy(input1, binary_data=False)
            outputs = [aioclient.InferRequestedOutput("OUTPUT0"),
                       aioclient.InferRequestedOutput("OUTPUT1", binary_data=False)]
            results = await asyncio.gather(*[
                client.infer("simple", inputs, outputs=outputs, request_id=str(i))
                for i in range(4)])
            control = (await client.is_server_live(), await client.is_model_ready("simple"),
                       await client.get_model_metadata("simple"),
                       await client.get_model_config("simple"))
            with pytest.raises(InferenceServerException) as missing:
                await client.get_model_metadata("wrong_model_name")
            return results, control, missing.value

    results, (live, ready, metadata, config), missing = asyncio.run(main())
    for i, result in enumerate(results):
        assert isinstance(result, httpclient.InferResult)
        assert result.get_response()["id"] == str(i)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), input0 + input1)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), input0 - input1)
    assert live and ready
    with httpclient.InferenceServerClient(url) as blocking:
        assert metadata == blocking.get_model_metadata("simple")
        assert config == blocking.get_model_config("simple")
    assert missing.status() == "404"


def test_aio_cancel(triton):
    """Cancelling the task that awaits infer() ends the request."""
    values = np.zeros((1, 4), np.float32)

    async def main():
        async with aioclient.InferenceServerClient(
                "127.0.0.1:%d" % triton.server_address[1]) as client:
            inputs = [aioclient.InferInput("INPUT0", [1, 4], "FP32").set_data_from_numpy(values)]
            task = asyncio.ensure_future(client.infer("slow", inputs))
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return (await client.infer("identity_fp32", inputs)).as_numpy("OUTPUT0")

    np.testing.assert_array_equal(asyncio.run(main()), values)


def key(name):
    """A shared memory key of this test run alone."""
    return "/sonic_tritonclient_http_%s_%s" % (name, uuid.uuid4().hex[:12])


@pytest.fixture(params=["sonic-server", "triton"])
def shm_port(request, server, triton):
    return http_port(server) if request.param == "sonic-server" else triton.server_address[1]


def test_shm_registration(shm_port):
    """Regions registered, listed (as the server's JSON) and unregistered through
    sonic.tritonclient.http."""
    client = httpclient.InferenceServerClient("127.0.0.1:%d" % shm_port)
    client.unregister_system_shared_memory()
    region_key = key("status")
    handle = shm.create_shared_memory_region("status_data", region_key, 128)
    try:
        client.register_system_shared_memory("status_data", region_key, 64, offset=64)
        client.register_system_shared_memory("other_data", region_key, 128)
        status = client.get_system_shared_memory_status()
        _, _, answer = request(shm_port, "GET", "/v2/systemsharedmemory/status")
        by_name = sorted(status, key=lambda r: r["name"])
        assert by_name == sorted(json.loads(answer), key=lambda r: r["name"])
        assert by_name == [{"name": "other_data", "key": region_key, "offset": 0,
                            "byte_size": 128},
                           {"name": "status_data", "key": region_key, "offset": 64,
                            "byte_size": 64}]
        assert client.get_system_shared_memory_status("status_data") == by_name[1:]
        with pytest.raises(InferenceServerException) as twice:
            client.register_system_shared_memory("status_data", region_key, 64)
        assert twice.value.status() == "400"
        client.unregister_system_shared_memory("status_data")
        assert [r["name"] for r in client.get_system_shared_memory_status()] == ["other_data"]
    finally:
        client.unregister_system_shared_memory()
        shm.destroy_shared_memory_region(handle)
        client.close()


def test_shm_client(triton):
    """simple_http_shm_client.py: simple's inputs in one region, its outputs in another.
    Against triton_http_server.py: sonic-server's HTTP port does not take tensors in shared
    memory yet (docs/shared-memory-security.md)."""
    client = httpclient.InferenceServerClient("127.0.0.1:%d" % triton.server_address[1])
    client.unregister_system_shared_memory()
    input0_data = np.arange(start=0, stop=16, dtype=np.int32)
    input1_data = np.ones(shape=16, dtype=np.int32)
    byte_size = input0_data.size * input0_data.itemsize
    output_key, input_key = key("output"), key("input")
    shm_op_handle = shm.create_shared_memory_region("output_data", output_key, byte_size * 2)
    client.register_system_shared_memory("output_data", output_key, byte_size * 2)
    shm_ip_handle = shm.create_shared_memory_region("input_data", input_key, byte_size * 2)
    shm.set_shared_memory_region(shm_ip_handle, [input0_data])
    shm.set_shared_memory_region(shm_ip_handle, [input1_data], offset=byte_size)
    client.register_system_shared_memory("input_data", input_key, byte_size * 2)
    try:
        inputs = [httpclient.InferInput("INPUT0", [1, 16], "INT32"),
                  httpclient.InferInput("INPUT1", [1, 16], "INT32")]
        inputs[0].set_shared_memory("input_data", byte_size)
        inputs[1].set_shared_memory("input_data", byte_size, offset=byte_size)
        outputs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True),
                   httpclient.InferRequestedOutput("OUTPUT1", binary_data=True)]
        outputs[0].set_shared_memory("output_data", byte_size)
        outputs[1].set_shared_memory("output_data", byte_size, offset=byte_size)
        results = client.infer("simple", inputs, outputs=outputs)

        output0 = results.get_output("OUTPUT0")
        output0_data = shm.get_contents_as_numpy(
            shm_op_handle, utils.triton_to_np_dtype(output0["datatype"]), output0["shape"])
        output1 = results.get_output("OUTPUT1")
        output1_data = shm.get_contents_as_numpy(
            shm_op_handle, utils.triton_to_np_dtype(output1["datatype"]), output1["shape"],
            offset=byte_size)
        np.testing.assert_array_equal(output0_data[0], input0_data + input1_data)
        np.testing.assert_array_equal(output1_data[0], input0_data - input1_data)
        assert output0 == {"name": "OUTPUT0", "datatype": "INT32", "shape": [1, 16]}
        assert results.as_numpy("OUTPUT0") is None
        # The body tritonclient.http would send places the tensors as this one did.
        body, size = httpclient.InferenceServerClient.generate_request_body(inputs, outputs)
        assert size is None
        sent = json.loads(body)
        assert sent["inputs"][1]["parameters"] == {"shared_memory_region": "input_data",
                                                   "shared_memory_byte_size": byte_size,
                                                   "shared_memory_offset": byte_size}
        assert sent["outputs"][0]["parameters"] == {"shared_memory_region": "output_data",
                                                    "shared_memory_byte_size": byte_size,
                                                    "binary_data": False}
    finally:
        client.unregister_system_shared_memory()
        shm.destroy_shared_memory_region(shm_ip_handle)
        shm.destroy_shared_memory_region(shm_op_handle)
        client.close()
