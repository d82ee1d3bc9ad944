"""Triton's own Python-backend examples (python_backend/examples: add_sub, bls sync and async,
bls_decoupled sync and async, decoupled repeat and square, custom_metrics), each as a model in
models/ written in the example's shape, making the same pb_utils calls, and checked as the
example's client.py checks it."""

import json
import os
import re
import subprocess
import textwrap
import urllib.request

import grpc
import numpy as np
import pytest

from conftest import Server, tensor
from test_python_backend import TIMEOUT, infer, outputs, stub


def stream(server, pb, model, inputs):
    """The responses of one ModelStreamInfer request to a decoupled model, as {name: array}."""
    request = pb[1].ModelInferRequest(model_name=model)
    for name, array in inputs.items():
        tensor(pb, request, name, array)
    got = []
    for answer in stub(server, pb).ModelStreamInfer(iter([request]), timeout=TIMEOUT):
        assert not answer.error_message, answer.error_message
        if answer.infer_response.outputs:
            got.append(stream_outputs(pb, answer.infer_response))
    return got


def stream_outputs(pb, response):
    types = {"INT32": np.int32, "UINT32": np.uint32}
    return {o.name: np.frombuffer(raw, types[o.datatype]).reshape(list(o.shape))
            for o, raw in zip(response.outputs, response.raw_output_contents)}


def a_and_b():
    rng = np.random.default_rng(3)
    return rng.random(4, dtype=np.float32), rng.random(4, dtype=np.float32)


def test_add_sub(server, pb):
    a, b = a_and_b()
    got = infer(server, pb, "add_sub", {"INPUT0": a, "INPUT1": b})
    assert np.allclose(got["OUTPUT0"], a + b) and np.allclose(got["OUTPUT1"], a - b)


def test_bls_sync_takes_the_model_name_as_bytes(server, pb):
    # examples/bls/sync_model.py hands InferenceRequest the BYTES element as it is (bytes).
    a, b = a_and_b()
    got = infer(server, pb, "bls_sync",
                {"MODEL_NAME": np.array([b"add_sub"], dtype=np.object_), "INPUT0": a, "INPUT1": b})
    assert np.allclose(got["OUTPUT0"], a + b) and np.allclose(got["OUTPUT1"], a - b)


def test_bls_async_runs_an_async_execute(server, pb):
    a, b = a_and_b()
    got = infer(server, pb, "bls_async", {"INPUT0": a, "INPUT1": b})
    assert np.allclose(got["OUTPUT0"], a + b) and np.allclose(got["OUTPUT1"], a - b)


def test_decoupled_square(server, pb):
    # examples/decoupled/square_client.py: IN = n gives n responses of OUT = n.
    for n in (0, 1, 4):
        got = stream(server, pb, "square_int32", {"IN": np.array([n], np.int32)})
        assert [r["OUT"].tolist() for r in got] == [[n]] * n


def test_decoupled_repeat(server, pb):
    values = np.array([4, 2, 0, 1], np.int32)
    got = stream(server, pb, "repeat_int32", {"IN": values,
                                              "DELAY": np.array([1, 2, 3, 4], np.uint32),
                                              "WAIT": np.array([5], np.uint32)})
    assert [r["OUT"].tolist() for r in got] == [[v] for v in values]
    assert [r["IDX"].tolist() for r in got] == [[i] for i in range(4)]


@pytest.mark.parametrize("model", ["bls_decoupled_sync", "bls_decoupled_async"])
def test_bls_decoupled(server, pb, model):
    # square_int32 answers n with n responses of n: the sync example sums one stream (n * n),
    # the async one two (2 * n * n).
    calls = 2 if model.endswith("async") else 1
    for n in (0, 3):
        got = infer(server, pb, model, {"IN": np.array([n], np.int32)})
        assert got["SUM"].tolist() == [calls * n * n]


def metrics_page(server):
    found = re.search(r"^sonic-server metrics listening on (.*:\d+)$", server.output(), re.M)
    assert found, server.output()
    with urllib.request.urlopen("http://%s/metrics" % found.group(1), timeout=TIMEOUT) as page:
        return page.read().decode()


def custom_metrics(server, pb, request_id):
    a, b = a_and_b()
    request = pb[1].ModelInferRequest(model_name="custom_metrics", id=request_id)
    tensor(pb, request, "INPUT0", a)
    tensor(pb, request, "INPUT1", b)
    got = outputs(pb, stub(server, pb).ModelInfer(request, timeout=TIMEOUT))
    assert np.allclose(got["OUTPUT0"], a + b) and np.allclose(got["OUTPUT1"], a - b)


def test_custom_metrics_as_the_examples_client_reads_them(server, pb):
    for request_id in ("", "checks"):  # "checks": the model checks the values it reads back
        custom_metrics(server, pb, request_id)
    page = metrics_page(server)
    # examples/custom_metrics/client.py's patterns.
    for pattern in ["# HELP requests_process_latency_ns Cumulative time spent processing requests",
                    "# TYPE requests_process_latency_ns counter",
                    'requests_process_latency_ns{model="custom_metrics",version="1"}']:
        assert pattern in page
    latency = re.search(r'^requests_process_latency_ns\{model="custom_metrics",version="1"\} '
                        r'(\S+)$', page, re.M)
    assert float(latency.group(1)) > 0
    # What the checks left, as Triton (prometheus-cpp) writes it: labels in name order, escaped.
    assert 'requests_process_latency_ns{model="custom_metrics",version="2"} 5\n' in page
    assert "# TYPE custom_gauge gauge\n" in page
    assert 'custom_gauge{instance="checks",quote="say \\"hi\\"\\n"} 7.5\n' in page
    assert "# TYPE custom_histogram histogram\n" in page
    for line in ['custom_histogram_count{instance="checks"} 4',
                 'custom_histogram_sum{instance="checks"} 105.5',
                 'custom_histogram_bucket{instance="checks",le="1"} 1',
                 'custom_histogram_bucket{instance="checks",le="2.5"} 2',
                 'custom_histogram_bucket{instance="checks",le="10"} 3',
                 'custom_histogram_bucket{instance="checks",le="+Inf"} 4']:
        assert line + "\n" in page


def test_custom_metrics_end_with_their_objects_and_are_bounded(server, pb):
    custom_metrics(server, pb, "keep")
    assert 'custom_gauge{instance="temporary"} 3\n' in metrics_page(server)
    custom_metrics(server, pb, "drop")
    assert 'instance="temporary"' not in metrics_page(server)
    # The model holds metrics until the server refuses one (it checks the refusal), lets them
    # go, and makes another.
    custom_metrics(server, pb, "flood")
    page = metrics_page(server)
    assert 'custom_gauge{flood="after"} 1\n' in page and 'flood="0"' not in page


def test_a_batch_reaches_execute_as_its_requests(server, pb):
    # dynamic_batching holds up to 4 requests for one execute: each is a request of its own in
    # the list execute() gets, with a response of its own, as Triton's Python backend runs them.
    calls = []
    for value in range(4):
        request = pb[1].ModelInferRequest(model_name="batched", id=str(value))
        tensor(pb, request, "IN", np.array([[value]], np.int32))
        calls.append(stub(server, pb).ModelInfer.future(request, timeout=TIMEOUT))
    for value, call in enumerate(calls):
        response = call.result()
        assert response.id == str(value)
        got = outputs(pb, response)
        assert got["OUT"].tolist() == [[2 * value]]
        assert got["COUNT"].tolist() == [[4]]


def test_a_model_that_is_not_decoupled_may_answer_through_its_senders(server, pb):
    x = np.array([41], np.int32)
    for how in ("list", "thread"):
        assert infer(server, pb, "sender_answers", {"IN": x}, request_id=how)["OUT"].tolist() == [42]
    with pytest.raises(grpc.RpcError) as refused:
        infer(server, pb, "sender_answers", {"IN": x}, request_id="twice")
    assert "Non-decoupled model cannot send more than one response" in refused.value.details()


def test_a_model_asks_whether_another_is_ready(server, pb):
    def ready(name):
        return infer(server, pb, "ready_check",
                     {"NAME": np.array([name], dtype=np.object_)})["READY"].tolist()

    assert ready(b"add_sub") == [1]
    assert ready(b"init_fails") == [0]  # its initialize raised: not in service
    assert ready(b"no_such_model") == [0]


def test_a_batch_of_strings_reaches_execute_as_its_requests(server, pb):
    calls = []
    for value in range(4):
        request = pb[1].ModelInferRequest(model_name="batched_strings", id=str(value))
        tensor(pb, request, "IN", np.array([[b"s%d" % value]], np.object_))
        calls.append(stub(server, pb).ModelInfer.future(request, timeout=TIMEOUT))
    for value, call in enumerate(calls):
        got = outputs(pb, call.result())
        assert got["OUT"].tolist() == [[b"s%ds%d" % (value, value)]]
        assert got["COUNT"].tolist() == [[4]]


def test_a_bls_request_carries_its_parameters(server, pb):
    got = infer(server, pb, "bls_options", {"IN": np.array([1], np.int32)})["PARAMS"]
    params = json.loads(got[0])
    assert {k: params[k] for k in ("k", "s", "b")} == {"k": 7, "s": "x", "b": True}


def test_a_decoupled_execute_that_returns_a_list_fails_as_in_triton(server, pb):
    request = pb[1].ModelInferRequest(model_name="decoupled_returns")
    tensor(pb, request, "IN", np.array([5], np.int32))
    answers = list(stub(server, pb).ModelStreamInfer(iter([request]), timeout=TIMEOUT))
    errors = [a.error_message for a in answers if a.error_message]
    assert any("is using the decoupled mode and the execute function must return None" in e
               for e in errors), answers


PYTORCH_MODEL = """
    # Triton's python_backend examples/pytorch/model.py, in its shape: a torch nn.Module on the
    # numpy arrays of the request's inputs.
    import json

    import triton_python_backend_utils as pb_utils
    from torch import nn


    class AddSubNet(nn.Module):
        def forward(self, input0, input1):
            return (input0 + input1), (input0 - input1)


    class TritonPythonModel:
        def initialize(self, args):
            self.model_config = model_config = json.loads(args["model_config"])
            output0_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT0")
            output1_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT1")
            self.output0_dtype = pb_utils.triton_string_to_numpy(output0_config["data_type"])
            self.output1_dtype = pb_utils.triton_string_to_numpy(output1_config["data_type"])
            self.add_sub_model = AddSubNet()

        def execute(self, requests):
            responses = []
            for request in requests:
                in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
                in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")
                out_0, out_1 = self.add_sub_model(in_0.as_numpy(), in_1.as_numpy())
                responses.append(pb_utils.InferenceResponse(output_tensors=[
                    pb_utils.Tensor("OUTPUT0", out_0.astype(self.output0_dtype)),
                    pb_utils.Tensor("OUTPUT1", out_1.astype(self.output1_dtype))]))
            return responses
"""


def test_pytorch(repository, pb, tmp_path):
    # A server of its own, which loads only this model: torch takes seconds to import.
    python = os.environ.get("SONIC_PYTHON", "python3")
    if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0:
        pytest.skip("the stubs' Python has no torch")
    root = tmp_path / "models"
    (root / "pytorch" / "1").mkdir(parents=True)
    with open(os.path.join(repository, "add_sub", "config.pbtxt")) as config:
        (root / "pytorch" / "config.pbtxt").write_text(
            config.read().replace('name: "add_sub"', 'name: "pytorch"'))
    (root / "pytorch" / "1" / "model.py").write_text(textwrap.dedent(PYTORCH_MODEL))
    server = Server("--model-repository", str(root), "--model-control-mode", "explicit",
                    "--load-model", "pytorch")
    try:
        a, b = a_and_b()
        got = infer(server, pb, "pytorch", {"INPUT0": a, "INPUT1": b})
        assert np.allclose(got["OUTPUT0"], a + b) and np.allclose(got["OUTPUT1"], a - b)
    finally:
        server.stop()
