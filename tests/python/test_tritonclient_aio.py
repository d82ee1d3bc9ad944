"""sonic.tritonclient.grpc.aio in the shapes of Triton's asyncio examples
(simple_grpc_aio_infer_client.py, simple_grpc_aio_sequence_stream_infer_client.py,
simple_grpc_aio_health_metadata.py), against sonic-server, with sonic.tritonclient imports
only; the answers are those of the blocking client, which test_tritonclient_grpc checks against
tritonclient's."""

import asyncio
import uuid

import numpy as np
import pytest

import sonic.tritonclient.grpc as grpcclient_sync
import sonic.tritonclient.grpc.aio as grpcclient
from sonic.tritonclient.utils import InferenceServerException


def host_port(url):
    return url.split("://", 1)[1]


def simple_inputs():
    input0 = np.expand_dims(np.arange(start=0, stop=16, dtype=np.int32), axis=0)
    input1 = np.ones(shape=(1, 16), dtype=np.int32)
    inputs = [grpcclient.InferInput("INPUT0", [1, 16], "INT32"),
              grpcclient.InferInput("INPUT1", [1, 16], "INT32")]
    inputs[0].set_data_from_numpy(input0)
    inputs[1].set_data_from_numpy(input1)
    return inputs, input0, input1


def test_aio_infer_client(server):
    """simple_grpc_aio_infer_client.py: infer with outputs and headers, statistics, two
    requests in parallel with asyncio.gather."""
    async def main():
        triton_client = grpcclient.InferenceServerClient(url=host_port(server.grpc))
        inputs, input0, input1 = simple_inputs()
        outputs = [grpcclient.InferRequestedOutput("OUTPUT0"),
                   grpcclient.InferRequestedOutput("OUTPUT1")]
        results = await triton_client.infer(model_name="simple", inputs=inputs, outputs=outputs,
                                            client_timeout=10.0, headers={"test": "1"},
                                            compression_algorithm="gzip")
        statistics = await triton_client.get_inference_statistics(model_name="simple")
        assert len(statistics.model_stats) == 1
        np.testing.assert_array_equal(results.as_numpy("OUTPUT0"), input0 + input1)
        result_1, result_2 = await asyncio.gather(
            triton_client.infer(model_name="simple", inputs=inputs, outputs=None),
            triton_client.infer(model_name="simple", inputs=inputs, outputs=None))
        for result in (result_1, result_2):
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), input0 + input1)
            np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), input0 - input1)
        await triton_client.close()

    asyncio.run(main())


def test_aio_health_metadata(server):
    """simple_grpc_aio_health_metadata.py: every answer as the blocking client's."""
    async def main():
        async with grpcclient.InferenceServerClient(url=host_port(server.grpc)) as client:
            assert await client.is_server_live(headers={"test": "1", "dummy": "2"})
            assert await client.is_server_ready()
            assert await client.is_model_ready("simple")
            metadata = await client.get_model_metadata("simple", headers={"test": "1"})
            assert metadata.name == "simple"
            try:
                await client.get_model_metadata("wrong_model_name")
            except InferenceServerException as ex:
                assert "Request for unknown model" in ex.message()
                assert ex.status() == "StatusCode.NOT_FOUND"
            else:
                pytest.fail("no exception for an unknown model")
            return [await client.get_server_metadata(as_json=True),
                    await client.get_model_metadata("simple", as_json=True),
                    await client.get_model_config("simple", as_json=True),
                    await client.get_model_repository_index(as_json=True)]

    answers = asyncio.run(main())
    with grpcclient_sync.InferenceServerClient(host_port(server.grpc)) as client:
        assert answers == [client.get_server_metadata(as_json=True),
                           client.get_model_metadata("simple", as_json=True),
                           client.get_model_config("simple", as_json=True),
                           client.get_model_repository_index(as_json=True)]


def test_aio_sequence_stream_infer_client(server):
    """simple_grpc_aio_sequence_stream_infer_client.py: requests from an async iterator of
    dicts, (result, error) pairs back."""
    values = [11, 7, 5, 3, 2, 0, 1]
    string_sequence_id0 = str(uuid.uuid4())

    async def async_stream_yield(values, sequence_id):
        for count, value in enumerate(values, start=1):
            value_data = np.full(shape=[1, 1], fill_value=value, dtype=np.int32)
            inputs = [grpcclient.InferInput("INPUT", value_data.shape, "INT32")]
            inputs[0].set_data_from_numpy(value_data)
            yield {"model_name": "simple_sequence", "inputs": inputs,
                   "outputs": [grpcclient.InferRequestedOutput("OUTPUT")],
                   "request_id": "{}_{}".format(sequence_id, count), "sequence_id": sequence_id,
                   "sequence_start": count == 1, "sequence_end": count == len(values)}

    async def main():
        async with grpcclient.InferenceServerClient(url=host_port(server.grpc)) as client:
            async def async_request_iterator():
                async for request in async_stream_yield([0] + values, 1000):
                    yield request
                async for request in async_stream_yield([100] + [-v for v in values], 1001):
                    yield request
                async for request in async_stream_yield([20] + [-v for v in values],
                                                        string_sequence_id0):
                    yield request

            results = {"1000": [], "1001": [], string_sequence_id0: []}
            response_iterator = client.stream_infer(inputs_iterator=async_request_iterator(),
                                                    stream_timeout=30)
            async for response in response_iterator:
                result, error = response
                assert error is None, error
                this_id = result.get_response().id.split("_")[0]
                results[this_id].append(int(result.as_numpy("OUTPUT")[0][0]))
            return results

    results = asyncio.run(main())
    assert results["1000"] == [1] + values
    assert results["1001"] == [101] + [-v for v in values]
    assert results[string_sequence_id0] == [21] + [-v for v in values]


def test_aio_stream_errors(server):
    """A request the server refuses comes as (None, error without status); the iterator's own
    mistakes (not a dict, no model_name) end the stream with tritonclient's words; a stream that
    fails raises its status."""
    async def refused_then_answered():
        inputs = [grpcclient.InferInput("INPUT", [1, 1], "INT32")]
        inputs[0].set_data_from_numpy(np.full((1, 1), 3, np.int32))
        yield {"model_name": "simple_sequence", "inputs": inputs, "sequence_id": 777}
        yield {"model_name": "simple_sequence", "inputs": inputs, "sequence_id": 778,
               "sequence_start": True, "sequence_end": True}

    async def not_a_dict():
        yield ["simple"]

    async def no_inputs():
        yield {"model_name": "simple"}

    async def slow_repeat():
        inputs = [grpcclient.InferInput("IN", [2], "INT32"),
                  grpcclient.InferInput("DELAY", [2], "UINT32"),
                  grpcclient.InferInput("WAIT", [1], "UINT32")]
        inputs[0].set_data_from_numpy(np.array([1, 2], np.int32))
        inputs[1].set_data_from_numpy(np.array([0, 3000], np.uint32))
        inputs[2].set_data_from_numpy(np.array([0], np.uint32))
        yield {"model_name": "repeat_int32", "inputs": inputs}

    async def collect(client, requests, timeout=None):
        pairs = []
        try:
            async for pair in client.stream_infer(requests, stream_timeout=timeout):
                pairs.append(pair)
        except InferenceServerException as error:
            return pairs, error
        return pairs, None

    async def main():
        async with grpcclient.InferenceServerClient(url=host_port(server.grpc)) as client:
            return [await collect(client, refused_then_answered()),
                    await collect(client, not_a_dict()),
                    await collect(client, no_inputs()),
                    await collect(client, slow_repeat(), timeout=0.5)]

    (pairs, ended), (_, not_dict), (_, missing), (slow, deadline) = asyncio.run(main())
    assert ended is None and len(pairs) == 2
    (refused_result, refused), (answered, no_error) = pairs
    assert refused_result is None and refused.status() is None and refused.message()
    assert no_error is None and int(answered.as_numpy("OUTPUT")[0][0]) == 4
    assert not_dict.message() == "inputs_iterator is not yielding a dict"
    assert missing.message() == \
        "model_name and/or inputs is missing from inputs_iterator's yielded dict"
    assert int(slow[0][0].as_numpy("OUT")[0]) == 1
    assert deadline.status() == "StatusCode.DEADLINE_EXCEEDED"


def test_aio_cancel_and_timeout(silent_url):
    """Cancelling the task of infer() cancels the request; client_timeout raises
    "Deadline Exceeded" as tritonclient does."""
    async def main():
        async with grpcclient.InferenceServerClient(url=host_port(silent_url)) as client:
            inputs, _, _ = simple_inputs()
            task = asyncio.ensure_future(client.infer("simple", inputs))
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            with pytest.raises(InferenceServerException) as late:
                await client.infer("simple", inputs, client_timeout=0.2)
            return late.value

    late = asyncio.run(main())
    assert (late.message(), late.status()) == ("Deadline Exceeded",
                                               "StatusCode.DEADLINE_EXCEEDED")
