"""Runs response_parameters with its own IN (BLS) and answers with what that answered, its
response parameters included (response.parameters(), JSON text, as Triton's BLS gives them),
each name prefixed with "called_"."""

import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            called = pb_utils.InferenceRequest(
                model_name="response_parameters", requested_output_names=["OUT"],
                inputs=[pb_utils.get_input_tensor_by_name(request, "IN")],
                parameters={"tag": "from bls"}).exec()
            if called.has_error():
                responses.append(pb_utils.InferenceResponse(error=called.error()))
                continue
            parameters = {"called_" + k: v for k, v in json.loads(called.parameters()).items()}
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.get_output_tensor_by_name(called, "OUT")], parameters=parameters))
        return responses
