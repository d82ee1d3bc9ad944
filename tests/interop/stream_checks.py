"""ModelStreamInfer used the way Triton's own clients use it, for python_client.py.

What Triton's server does on a stream (src/grpc/stream_infer_handler.cc), and so what its
clients rely on: every request read from the stream is answered on it with
ModelStreamInferResponses; a model that is not decoupled answers once, in the order of the
requests (EnqueueForResponse), with the parameter triton_final_response true; a decoupled
model answers as its responses come, each with triton_final_response false, and a request
that set triton_enable_empty_final_response gets an empty last response with it true. A
request that fails is answered with error_message and an infer_response carrying its id, and
the stream goes on. When the client ends its side and every request is answered, the stream
ends with status OK. ModelInfer refuses a decoupled model: UNIMPLEMENTED, "ModelInfer RPC
doesn't support models with decoupled transaction policy".
"""

import threading

import grpc
import numpy as np

RPC_TIMEOUT_S = 10.0
FINAL = "triton_final_response"


class StreamChecks:
    def __init__(self, pb2, channel, stub, expect_status):
        self.pb2 = pb2
        self.stub = stub
        self.expect_status = expect_status
        self.call = channel.stream_stream(
            "/inference.GRPCInferenceService/ModelStreamInfer",
            request_serializer=pb2.ModelInferRequest.SerializeToString,
            response_deserializer=pb2.ModelStreamInferResponse.FromString)

    # -- requests --------------------------------------------------------------

    def simple(self, value, rid):
        req = self.pb2.ModelInferRequest(model_name="simple", id=rid)
        a = np.full((1, 16), value, dtype="<i4")
        for name in ("INPUT0", "INPUT1"):
            req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            req.raw_input_contents.append(a.tobytes())
        return req

    def repeat(self, values, rid, empty_final=False, delay_ms=0):
        req = self.pb2.ModelInferRequest(model_name="repeat_int32", id=rid)
        n = len(values)
        for name, dt, arr in (
                ("IN", "INT32", np.array(values, dtype="<i4")),
                ("DELAY", "UINT32", np.full(n, delay_ms, dtype="<u4")),
                ("WAIT", "UINT32", np.zeros(1, dtype="<u4"))):
            req.inputs.add(name=name, datatype=dt, shape=[arr.size])
            req.raw_input_contents.append(arr.tobytes())
        if empty_final:
            req.parameters["triton_enable_empty_final_response"].bool_param = True
        return req

    def exchange(self, requests):
        """Sends `requests` on one stream, ends it, and returns every response;
        the stream must end with OK."""
        responses = list(self.call(iter(requests), timeout=RPC_TIMEOUT_S))
        return responses

    @staticmethod
    def final(resp):
        p = resp.infer_response.parameters.get(FINAL)
        assert p is not None, "response without %s: %s" % (FINAL, resp)
        assert p.WhichOneof("parameter_choice") == "bool_param", p
        return p.bool_param

    @staticmethod
    def output(resp, name, dtype):
        r = resp.infer_response
        for i, o in enumerate(r.outputs):
            if o.name == name:
                return np.frombuffer(r.raw_output_contents[i], dtype=dtype)
        raise AssertionError("no output %s in %s" % (name, [o.name for o in r.outputs]))

    # -- checks ----------------------------------------------------------------

    def many_in_order(self):
        n = 100
        responses = self.exchange(self.simple(i, "r%d" % i) for i in range(n))
        assert len(responses) == n, "%d responses to %d requests" % (len(responses), n)
        for i, resp in enumerate(responses):
            assert resp.error_message == "", resp.error_message
            assert resp.infer_response.id == "r%d" % i, (
                "response %d answers %r: not in the order of the requests" %
                (i, resp.infer_response.id))
            assert self.final(resp), "a model that is not decoupled: final is true"
            total = self.output(resp, "OUTPUT0", "<i4")
            assert (total == 2 * i).all(), "OUTPUT0 of r%d is %s" % (i, total[:2])

    def error_keeps_stream(self):
        bad = self.pb2.ModelInferRequest(model_name="no_such_model", id="bad")
        responses = self.exchange([self.simple(1, "before"), bad, self.simple(2, "after")])
        assert len(responses) == 3, "%d responses to 3 requests" % len(responses)
        assert responses[0].error_message == ""
        assert "no_such_model" in responses[1].error_message, responses[1].error_message
        assert responses[1].infer_response.id == "bad", (
            "the failed request's id: %r" % responses[1].infer_response.id)
        assert responses[2].error_message == "" and \
            responses[2].infer_response.id == "after", "the stream went on"

    def decoupled_responses(self):
        values = [4, -5, 6]
        responses = self.exchange([self.repeat(values, "d1")])
        assert len(responses) == 3, "%d responses for IN of 3" % len(responses)
        for i, resp in enumerate(responses):
            assert resp.error_message == "", resp.error_message
            assert resp.infer_response.id == "d1"
            assert not self.final(resp), "a decoupled model's responses: final is false"
            assert self.output(resp, "OUT", "<i4").tolist() == [values[i]]
            assert self.output(resp, "IDX", "<u4").tolist() == [i]

    def decoupled_empty_final(self):
        """Responses of two decoupled requests on one stream may interleave
        (Triton sends each as its model produces it), so each request's
        responses are checked in their own order."""
        responses = self.exchange([self.repeat([7, 8], "d2", empty_final=True),
                                   self.repeat([], "d3", empty_final=True)])
        by_id = {}
        for resp in responses:
            assert resp.error_message == "", resp.error_message
            by_id.setdefault(resp.infer_response.id, []).append(resp)
        d2, d3 = by_id.get("d2", []), by_id.get("d3", [])
        assert len(d2) == 3, "%d responses to d2, expected 2 + final" % len(d2)
        assert not self.final(d2[0]) and not self.final(d2[1])
        assert self.final(d2[2]), "d2's last response is final"
        assert len(d2[2].infer_response.outputs) == 0, "the final response is empty"
        assert len(d3) == 1 and self.final(d3[0]), (
            "IN of shape [0]: no response but the empty final one")
        assert len(by_id) == 2, "responses to unknown ids: %s" % list(by_id)

    def decoupled_interleaves(self):
        """Two decoupled requests whose responses take time: every response of
        each comes, in each request's own order."""
        responses = self.exchange([self.repeat([1, 2, 3], "a", delay_ms=20),
                                   self.repeat([4, 5, 6], "b", delay_ms=20)])
        by_id = {}
        for resp in responses:
            assert resp.error_message == "", resp.error_message
            by_id.setdefault(resp.infer_response.id, []).append(
                int(self.output(resp, "IDX", "<u4")[0]))
        assert by_id == {"a": [0, 1, 2], "b": [0, 1, 2]}, by_id

    def empty_stream(self):
        responses = self.exchange([])
        assert responses == [], "responses to no request: %s" % responses

    def unary_refuses_decoupled(self):
        e = self.expect_status(
            lambda: self.stub.ModelInfer(self.repeat([1], "u"), timeout=RPC_TIMEOUT_S),
            grpc.StatusCode.UNIMPLEMENTED, "ModelInfer of a decoupled model")
        assert "doesn't support models with decoupled" in e.details(), e.details()

    def answers_while_open(self):
        """Responses come while the client keeps its side open (as Triton's
        clients keep a stream), not when it ends."""
        release = threading.Event()
        got = []

        def requests():
            yield self.simple(3, "open")
            release.wait(RPC_TIMEOUT_S)

        call = self.call(requests(), timeout=RPC_TIMEOUT_S)
        try:
            got.append(next(call))
        finally:
            release.set()
        assert got[0].infer_response.id == "open" and got[0].error_message == ""
        assert list(call) == [], "nothing more once the client ends its side"

    def config_says_decoupled(self):
        cfg = self.stub.ModelConfig(self.pb2.ModelConfigRequest(name="repeat_int32"),
                                    timeout=RPC_TIMEOUT_S).config
        assert cfg.model_transaction_policy.decoupled, "repeat_int32 is decoupled"
        simple = self.stub.ModelConfig(self.pb2.ModelConfigRequest(name="simple"),
                                       timeout=RPC_TIMEOUT_S).config
        assert not simple.model_transaction_policy.decoupled

    def plan(self):
        return ("ModelStreamInfer, as Triton answers it", [
            ("100 requests on one stream: answered in order, final", self.many_in_order),
            ("an error in error_message names its request; the stream goes on",
             self.error_keeps_stream),
            ("repeat_int32: a response per element, final false",
             self.decoupled_responses),
            ("triton_enable_empty_final_response: an empty final response",
             self.decoupled_empty_final),
            ("two decoupled requests: each answered in full, in its order",
             self.decoupled_interleaves),
            ("a stream without requests ends OK", self.empty_stream),
            ("answered while the client's side is open", self.answers_while_open),
            ("ModelInfer of a decoupled model: UNIMPLEMENTED",
             self.unary_refuses_decoupled),
            ("ModelConfig: model_transaction_policy.decoupled",
             self.config_says_decoupled),
        ])
