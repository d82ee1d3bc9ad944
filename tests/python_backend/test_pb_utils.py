"""triton_python_backend_utils on its own (no server): the arguments its classes take, as
Triton's pybind11 definitions (python_backend src/pb_stub.cc) take them, and what they give
back."""

import json
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "backends", "python", "python"))
import triton_python_backend_utils as pb_utils  # noqa: E402


def tensor():
    return pb_utils.Tensor("X", np.arange(4, dtype=np.float32))


def test_string_arguments_take_str_or_bytes_as_pybind11_does():
    # A std::string argument takes bytes as well (examples/bls/sync_model.py passes a BYTES
    # element as model_name).
    request = pb_utils.InferenceRequest(model_name=b"add_sub", inputs=[tensor()],
                                        requested_output_names=[b"OUTPUT0", "OUTPUT1"],
                                        request_id=b"7")
    assert request.model_name() == "add_sub"
    assert request.requested_output_names() == ["OUTPUT0", "OUTPUT1"]
    assert request.request_id() == "7"
    # A tuple is a sequence, as pybind11's list caster takes it.
    assert pb_utils.InferenceRequest(model_name="m", inputs=(tensor(),),
                                     requested_output_names=("Y",)).inputs()[0].name() == "X"


@pytest.mark.parametrize("arguments", [
    {"model_name": None}, {"model_name": 3}, {"request_id": None},
    {"inputs": None}, {"inputs": [np.zeros(2)]}, {"requested_output_names": None},
    {"requested_output_names": "OUT"}, {"model_version": "1"}, {"model_version": 1.0},
    {"flags": -1}, {"flags": 2**32}, {"timeout": -5},
], ids=lambda a: "%s=%r" % next(iter(a.items())))
def test_arguments_pybind11_refuses_are_refused(arguments):
    given = dict(model_name="m", inputs=[tensor()], requested_output_names=["Y"])
    given.update(arguments)
    with pytest.raises(TypeError):
        pb_utils.InferenceRequest(**given)


def test_correlation_ids_and_parameters():
    request = pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[],
                                        correlation_id="session-1", model_version=np.int64(2),
                                        flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
                                        timeout=1000, parameters={"k": 1, "b": True, "s": "x"})
    assert request.correlation_id() == "session-1" and request.model_version() == 2
    assert request.flags() == 1 and request.timeout() == 1000
    assert json.loads(request.parameters()) == {"k": 1, "b": True, "s": "x"}
    request.set_flags(pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END)
    assert request.flags() == 2
    assert pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[],
                                     correlation_id=42).correlation_id() == 42
    with pytest.raises(pb_utils.TritonModelException, match="Correlation ID"):
        pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[],
                                  correlation_id=1.5)
    with pytest.raises(pb_utils.TritonModelException, match="bool/int/str"):
        pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[],
                                  parameters={"f": 1.5})
    # Triton's optional arguments of a BLS request.
    pb_utils.InferenceRequest(
        model_name="m", inputs=[], requested_output_names=[],
        preferred_memory=pb_utils.PreferredMemory(pb_utils.TRITONSERVER_MEMORY_CPU, 0),
        trace=pb_utils.InferenceTrace())


def test_responses_carry_parameters_and_errors():
    response = pb_utils.InferenceResponse(output_tensors=[tensor()], parameters={"n": 2})
    assert json.loads(response.parameters()) == {"n": 2}
    assert json.loads(pb_utils.InferenceResponse().parameters()) == {}
    with pytest.raises(pb_utils.TritonModelException, match="keys to have type str"):
        pb_utils.InferenceResponse(parameters={1: "x"})
    # Triton's PyParametersToJSON takes bool, int and str values only, and a dict only (a JSON
    # string too is refused: PyDefaultArgumentToMutableType<py::dict>).
    for value in (1.5, None, [1], {"a": 1}, b"x"):
        with pytest.raises(pb_utils.TritonModelException, match="bool/int/str"):
            pb_utils.InferenceResponse(parameters={"v": value})
    with pytest.raises(pb_utils.TritonModelException, match="Expect dict"):
        pb_utils.InferenceResponse(parameters='{"n": 2}')
    with pytest.raises(TypeError):
        pb_utils.InferenceResponse(output_tensors=[np.zeros(2)])
    with pytest.raises(TypeError):
        pb_utils.InferenceResponse(error="not a TritonError")
    failed = pb_utils.InferenceResponse(
        error=pb_utils.TritonError("gone", pb_utils.TritonError.UNAVAILABLE))
    assert failed.has_error() and failed.error().code() == pb_utils.TritonError.UNAVAILABLE
    assert failed.error().message() == "gone"
    assert pb_utils.TritonError("x").code() == pb_utils.TritonError.INTERNAL
    with pytest.raises(TypeError):
        pb_utils.TritonError(None)
    with pytest.raises(TypeError):
        pb_utils.TritonError("x", 99)


def test_a_response_sender_takes_only_the_final_flag():
    sent = []

    class Channel:
        def send_response(self, execute, index, response, flags):
            sent.append((response, flags))

    sender = pb_utils.InferenceResponseSender(Channel(), 1, 0)
    with pytest.raises(pb_utils.TritonModelException, match="Unsupported flag"):
        sender.send(pb_utils.InferenceResponse(), flags=4)
    with pytest.raises(pb_utils.TritonModelException, match="must be provided"):
        sender.send()
    sender.send(pb_utils.InferenceResponse())
    sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    with pytest.raises(pb_utils.TritonModelException, match="has been closed"):
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    assert [flags for _, flags in sent] == [0, 1]


def test_tensors_share_memory_through_dlpack():
    original = tensor()
    # A Tensor is a DLPack producer itself (__dlpack__), and its capsule makes a Tensor again.
    assert np.from_dlpack(original).tolist() == [0, 1, 2, 3]
    again = pb_utils.Tensor.from_dlpack("Y", original.to_dlpack())
    assert again.name() == "Y" and again.as_numpy().tolist() == [0, 1, 2, 3]
    assert again.triton_dtype() == 11 and again.shape() == [4] and again.is_cpu()
    with pytest.raises(pb_utils.TritonModelException):
        pb_utils.Tensor("S", np.array([b"a"], dtype=np.object_)).to_dlpack()


def test_config_helpers():
    config = {"model_transaction_policy": {"decoupled": True},
              "input": [{"name": "IN", "data_type": "TYPE_INT32", "dims": [1]}]}
    assert pb_utils.using_decoupled_model_transaction_policy(config) is True
    assert pb_utils.using_decoupled_model_transaction_policy({}) is False
    assert pb_utils.get_input_config_by_name(config, "IN")["dims"] == [1]
    assert pb_utils.triton_string_to_numpy("TYPE_UINT32") is np.uint32


def test_metric_families_check_their_arguments_before_asking():
    assert (pb_utils.MetricFamily.COUNTER, pb_utils.MetricFamily.GAUGE,
            pb_utils.MetricFamily.HISTOGRAM) == ("COUNTER", "GAUGE", "HISTOGRAM")
    with pytest.raises(TypeError):
        pb_utils.MetricFamily(name=None, description="", kind=pb_utils.MetricFamily.GAUGE)
    with pytest.raises(pb_utils.TritonModelException, match="Unknown metric kind"):
        pb_utils.MetricFamily(name="x", description="", kind="SUMMARY")
    # Outside a stub no server answers.
    with pytest.raises(pb_utils.TritonModelException):
        pb_utils.MetricFamily(name="x", description="", kind=pb_utils.MetricFamily.GAUGE)


def test_tensor_names_and_log_levels_as_triton_has_them():
    assert pb_utils.Tensor(b"OUT", np.zeros(1, np.int32)).name() == "OUT"
    with pytest.raises(TypeError):
        pb_utils.Tensor(None, np.zeros(1, np.int32))
    assert pb_utils.Logger.LogLevel.WARNING == pb_utils.Logger.WARNING
    pb_utils.Logger.log("from test_pb_utils", pb_utils.Logger.LogLevel.VERBOSE)


def test_a_response_iterator_replays_once_done_and_cancels():
    responses = [pb_utils.InferenceResponse(), pb_utils.InferenceResponse()]
    finished = pb_utils.ResponseIterator(iter(responses))
    assert list(finished) == responses
    assert list(finished) == responses  # again from the first, as Triton's
    closed = []

    def stream():
        try:
            yield responses[0]
            yield responses[1]
        finally:
            closed.append(True)

    cancelled = pb_utils.ResponseIterator(stream())
    assert next(cancelled) is responses[0]
    cancelled.cancel()
    assert closed == [True] and list(cancelled) == [responses[0]]
