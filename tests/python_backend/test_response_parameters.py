"""Response parameters of Python models (pb_utils.InferenceResponse(..., parameters={...})) as
Triton's server hands them to clients: ModelInferResponse.parameters on gRPC, the "parameters"
object of an HTTP/REST answer, each ModelStreamInfer response of a decoupled model, and a BLS
caller's response.parameters(), with their types (bool, int64, string). Triton's python_backend sets them with
TRITONBACKEND_ResponseSet{String,Int,Bool}Parameter (src/infer_response.cc); its front ends
write them in src/grpc/infer_handler.h and src/http_server.cc."""

import json
import re
import urllib.request

import grpc
import numpy as np
import pytest

from conftest import tensor
from test_python_backend import TIMEOUT, stub

OWN = {"flag": ("bool_param", True), "count": ("int64_param", -(2**63)),
       "name": ("string_param", "żółw"), "echo": ("string_param", "from the client")}


def model_infer(server, pb, value, model="response_parameters"):
    request = pb[1].ModelInferRequest(model_name=model)
    request.parameters["tag"].string_param = "from the client"
    tensor(pb, request, "IN", np.array([value], np.int32))
    return stub(server, pb).ModelInfer(request, timeout=TIMEOUT)


def typed(parameters):
    """{name: (the field set, its value)} of an InferParameter map."""
    return {name: (p.WhichOneof("parameter_choice"), getattr(p, p.WhichOneof("parameter_choice")))
            for name, p in parameters.items()}


def test_model_infer_carries_them_with_their_types(server, pb):
    got = typed(model_infer(server, pb, 0).parameters)
    for name, expected in OWN.items():
        assert got[name] == expected


def test_a_model_cannot_set_the_servers_own(server, pb):
    got = typed(model_infer(server, pb, 1).parameters)
    assert got["kept"] == ("int64_param", 7)
    assert "triton_final_response" not in got
    assert got.get("sonic_server_queue_ns", ("int64_param", 0))[1] != 1


def test_what_triton_cannot_carry_fails_as_in_triton(server, pb):
    # An int past int64: Triton's python_backend fails the response ("Unsupported value type
    # on parameters"); a float: pb_utils.InferenceResponse refuses it (PyParametersToJSON).
    with pytest.raises(grpc.RpcError) as failed:
        model_infer(server, pb, 2)
    assert failed.value.code() == grpc.StatusCode.INTERNAL
    assert "Unsupported value type on parameters" in failed.value.details()
    refused = typed(model_infer(server, pb, 3).parameters)["refused"][1]
    assert "Expect parameters values to have type bool/int/str" in refused


def test_a_model_cannot_attach_without_bound(server, pb):
    with pytest.raises(grpc.RpcError) as failed:
        model_infer(server, pb, 4)
    assert failed.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "response parameters" in failed.value.details()


def test_http_answers_carry_them_as_json(server):
    found = re.search(r"^sonic-server http listening on (.*:\d+)$", server.output(), re.M)
    assert found, server.output()
    body = json.dumps({"parameters": {"tag": "from the client"},
                       "inputs": [{"name": "IN", "datatype": "INT32", "shape": [1],
                                   "data": [0]}]}).encode()
    request = urllib.request.Request(
        "http://%s/v2/models/response_parameters/infer" % found.group(1), data=body,
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
        got = json.loads(answer.read())
    assert got["parameters"] == {name: value for name, (_, value) in OWN.items()}


def test_each_streamed_response_carries_its_own(server, pb):
    request = pb[1].ModelInferRequest(model_name="decoupled_parameters")
    tensor(pb, request, "IN", np.array([10, 20, 30], np.int32))
    answers = list(stub(server, pb).ModelStreamInfer(iter([request]), timeout=TIMEOUT))
    got = []
    for answer in answers:
        assert not answer.error_message, answer.error_message
        response = answer.infer_response
        if response.outputs:
            got.append(typed(response.parameters))
    assert len(got) == 3
    for i, parameters in enumerate(got):
        assert parameters["index"] == ("int64_param", i)
        assert parameters["last"] == ("bool_param", i == 2)
        assert parameters["name"] == ("string_param", "response %d" % i)
        # The server's own, not the model's True: only its last response is final.
        assert parameters["triton_final_response"] == ("bool_param", False)


def test_a_bls_caller_reads_them(server, pb):
    got = typed(model_infer(server, pb, 0, model="bls_parameters").parameters)
    assert got["called_flag"] == ("bool_param", True)
    assert got["called_count"] == ("int64_param", -(2**63))
    assert got["called_echo"] == ("string_param", "from bls")
