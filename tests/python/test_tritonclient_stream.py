"""sonic.tritonclient.grpc's streams in the shapes of Triton's stream examples
(simple_grpc_sequence_stream_infer_client.py, simple_grpc_custom_repeat.py), and what a stream
reports when a request on it fails, when it fails itself and when it is cancelled, as
tritonclient reports it (its grpc/_infer_stream.py): a failed request as
InferenceServerException(msg=error_message) without status, the stream's own failure as the
gRPC error (status "StatusCode.X") handed to the callback, after which requests are refused.
"""

import json
import queue
import uuid
from functools import partial

import grpc
import numpy as np
import pytest
from google.protobuf.json_format import MessageToJson

import sonic.tritonclient.grpc as grpcclient
from sonic.tritonclient.utils import InferenceServerException


def host_port(url):
    return url.split("://", 1)[1]


@pytest.fixture
def client(server):
    with grpcclient.InferenceServerClient(url=host_port(server.grpc)) as made:
        yield made


class UserData:
    def __init__(self):
        self._completed_requests = queue.Queue()


def callback(user_data, result, error):
    user_data._completed_requests.put(error if error else result)


def next_item(user_data):
    return user_data._completed_requests.get(timeout=10)


def reference_stream(server, stubs, requests, timeout=None):
    """The ModelStreamInferResponses grpcio reads for `requests` (a list of functions of pb2
    that make ModelInferRequests), or the grpc.RpcError that ended the stream."""
    pb2, pb2_grpc = stubs
    with grpc.insecure_channel(host_port(server.grpc)) as channel:
        stub = pb2_grpc.GRPCInferenceServiceStub(channel)
        responses = []
        try:
            for response in stub.ModelStreamInfer(iter([make(pb2) for make in requests]),
                                                  timeout=timeout):
                responses.append(response)
        except grpc.RpcError as failure:
            return responses, failure
        return responses, None


def repeat_inputs(values, delays_ms, wait_ms=0):
    inputs = [grpcclient.InferInput("IN", [len(values)], "INT32"),
              grpcclient.InferInput("DELAY", [len(values)], "UINT32"),
              grpcclient.InferInput("WAIT", [1], "UINT32")]
    inputs[0].set_data_from_numpy(np.array(values, dtype=np.int32))
    inputs[1].set_data_from_numpy(np.array(delays_ms, dtype=np.uint32))
    inputs[2].set_data_from_numpy(np.array([wait_ms], dtype=np.uint32))
    return inputs


def test_sequence_stream_infer_client(client):
    """simple_grpc_sequence_stream_infer_client.py: three sequences on one stream, two with
    numeric ids and one with a string id, told apart by their request ids."""
    values = [11, 7, 5, 3, 2, 0, 1]
    int_sequence_id0, int_sequence_id1 = 1000, 1001
    string_sequence_id0 = str(uuid.uuid4())

    def async_stream_send(values, sequence_id):
        for count, value in enumerate(values, start=1):
            value_data = np.full(shape=[1, 1], fill_value=value, dtype=np.int32)
            inputs = [grpcclient.InferInput("INPUT", value_data.shape, "INT32")]
            inputs[0].set_data_from_numpy(value_data)
            client.async_stream_infer(
                model_name="simple_sequence", inputs=inputs,
                outputs=[grpcclient.InferRequestedOutput("OUTPUT")],
                request_id="{}_{}".format(sequence_id, count), sequence_id=sequence_id,
                sequence_start=(count == 1), sequence_end=(count == len(values)))

    user_data = UserData()
    client.start_stream(callback=partial(callback, user_data), stream_timeout=30)
    async_stream_send([0] + values, int_sequence_id0)
    async_stream_send([100] + [-1 * val for val in values], int_sequence_id1)
    async_stream_send([20] + [-1 * val for val in values], string_sequence_id0)

    results = {int_sequence_id0: [], int_sequence_id1: [], string_sequence_id0: []}
    for _ in range(3 * (len(values) + 1)):
        data_item = next_item(user_data)
        assert type(data_item) != InferenceServerException, data_item
        this_id = data_item.get_response().id.split("_")[0]
        key = int(this_id) if this_id.isdigit() else this_id
        results[key].append(int(data_item.as_numpy("OUTPUT")[0][0]))
    client.stop_stream()
    assert results[int_sequence_id0] == [1] + values
    assert results[int_sequence_id1] == [101] + [-1 * val for val in values]
    assert results[string_sequence_id0] == [21] + [-1 * val for val in values]


def test_decoupled_repeat_client(client, server, stubs):
    """simple_grpc_custom_repeat.py: a decoupled model's many responses to one request; with
    enable_empty_final_response, an empty last one whose triton_final_response is true, read
    as tritonclient reads it."""
    repeat_count, data_offset = 10, 100
    values = list(range(data_offset, data_offset + repeat_count))
    user_data = UserData()
    client.start_stream(callback=partial(callback, user_data))
    client.async_stream_infer(model_name="repeat_int32",
                              inputs=repeat_inputs(values, [1] * repeat_count),
                              outputs=[grpcclient.InferRequestedOutput("OUT")])
    received = [next_item(user_data) for _ in range(repeat_count)]
    assert [int(item.as_numpy("OUT")[0]) for item in received] == values
    assert all(len(item.as_numpy("OUT")) == 1 for item in received)

    client.async_stream_infer(model_name="repeat_int32", inputs=repeat_inputs([7], [0]),
                              request_id="with-final", enable_empty_final_response=True)
    last = [next_item(user_data), next_item(user_data)]
    client.stop_stream()
    assert int(last[0].as_numpy("OUT")[0]) == 7
    final = last[1].get_response()
    assert final.id == "with-final" and len(final.outputs) == 0
    assert final.parameters["triton_final_response"].bool_param is True
    assert final.parameters["triton_final_response"].WhichOneof("parameter_choice") == \
        "bool_param"

    def request(pb2):
        message = pb2.ModelInferRequest(model_name="repeat_int32", id="with-final")
        for name, datatype, data in (("IN", "INT32", np.array([7], np.int32)),
                                     ("DELAY", "UINT32", np.array([0], np.uint32)),
                                     ("WAIT", "UINT32", np.array([0], np.uint32))):
            message.inputs.add(name=name, datatype=datatype, shape=[1])
            message.raw_input_contents.append(data.tobytes())
        message.parameters["triton_enable_empty_final_response"].bool_param = True
        return message

    responses, failure = reference_stream(server, stubs, [request])
    assert failure is None and len(responses) == 2
    expected = json.loads(MessageToJson(responses[1].infer_response,
                                        preserving_proto_field_name=True))
    assert last[1].get_response(as_json=True) == expected


def test_a_failed_request_does_not_end_the_stream(client, server, stubs):
    """A request the server refuses comes to the callback as InferenceServerException with the
    server's error_message and no status; the stream goes on."""
    user_data = UserData()
    client.start_stream(callback=partial(callback, user_data))
    inputs = [grpcclient.InferInput("INPUT", [1, 1], "INT32")]
    inputs[0].set_data_from_numpy(np.full((1, 1), 3, np.int32))
    client.async_stream_infer("simple_sequence", inputs, sequence_id=5555)  # never started
    client.async_stream_infer("simple_sequence", inputs, sequence_id=5556,
                              sequence_start=True, sequence_end=True)
    refused, answered = next_item(user_data), next_item(user_data)
    client.stop_stream()

    def request(pb2):
        message = pb2.ModelInferRequest(model_name="simple_sequence")
        message.inputs.add(name="INPUT", datatype="INT32", shape=[1, 1])
        message.raw_input_contents.append(np.full((1, 1), 3, np.int32).tobytes())
        message.parameters["sequence_id"].int64_param = 5555
        message.parameters["sequence_start"].bool_param = False
        message.parameters["sequence_end"].bool_param = False
        return message

    responses, failure = reference_stream(server, stubs, [request])
    assert failure is None and responses[0].error_message
    assert type(refused) == InferenceServerException
    assert refused.message() == responses[0].error_message
    assert refused.status() is None and str(refused) == responses[0].error_message
    assert int(answered.as_numpy("OUTPUT")[0][0]) == 4


def test_a_failed_stream_is_reported_to_the_callback(client, server, stubs):
    """A stream that fails (here its stream_timeout passes) hands the gRPC error to the
    callback, as tritonclient does for the same stream; later requests are refused."""
    user_data = UserData()
    client.start_stream(callback=partial(callback, user_data), stream_timeout=0.5)
    client.async_stream_infer("repeat_int32", repeat_inputs([1, 2], [0, 3000]))
    first, failure = next_item(user_data), next_item(user_data)

    def request(pb2):
        message = pb2.ModelInferRequest(model_name="repeat_int32")
        for name, datatype, data in (("IN", "INT32", np.array([1, 2], np.int32)),
                                     ("DELAY", "UINT32", np.array([0, 3000], np.uint32)),
                                     ("WAIT", "UINT32", np.array([0], np.uint32))):
            message.inputs.add(name=name, datatype=datatype, shape=[len(data)])
            message.raw_input_contents.append(data.tobytes())
        return message

    _, expected = reference_stream(server, stubs, [request], timeout=0.5)
    assert int(first.as_numpy("OUT")[0]) == 1
    assert type(failure) == InferenceServerException
    assert (failure.message(), failure.status()) == (expected.details(), str(expected.code()))
    inputs = repeat_inputs([3], [0])
    with pytest.raises(InferenceServerException) as refused:
        client.async_stream_infer("repeat_int32", inputs)
    assert refused.value.message().startswith("The stream is no longer in valid state")
    client.stop_stream()
    client.start_stream(callback=partial(callback, user_data))  # a new one works
    client.async_stream_infer("repeat_int32", inputs)
    assert int(next_item(user_data).as_numpy("OUT")[0]) == 3
    client.stop_stream()


def test_stop_stream_cancel_requests(client):
    """stop_stream(cancel_requests=True) drops what is not answered yet; the callback learns
    it as tritonclient's cancelled call ("Locally cancelled by application!")."""
    user_data = UserData()
    client.start_stream(callback=partial(callback, user_data))
    client.async_stream_infer("repeat_int32", repeat_inputs([1, 2], [0, 5000]))
    assert int(next_item(user_data).as_numpy("OUT")[0]) == 1
    client.stop_stream(cancel_requests=True)
    cancelled = next_item(user_data)
    assert type(cancelled) == InferenceServerException
    assert cancelled.status() == "StatusCode.CANCELLED"
    assert cancelled.message() == "Locally cancelled by application!"
    assert user_data._completed_requests.empty()


def test_one_stream_at_a_time(client):
    """tritonclient's rules: one stream per client, requests only on a started stream."""
    inputs = repeat_inputs([1], [0])
    with pytest.raises(InferenceServerException) as no_stream:
        client.async_stream_infer("repeat_int32", inputs)
    assert no_stream.value.message() == \
        "stream not available, use start_stream() to make one available."
    client.start_stream(callback=lambda result, error: None)
    with pytest.raises(InferenceServerException) as second:
        client.start_stream(callback=lambda result, error: None)
    assert second.value.message().startswith("cannot start another stream with one already "
                                             "running.")
    client.stop_stream()
    client.stop_stream()  # no stream: nothing to do
