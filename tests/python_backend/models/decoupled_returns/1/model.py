"""Sends one response, then returns a list from execute() as a model that is not decoupled
would, which a decoupled model may not."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            response = pb_utils.InferenceResponse(
                [pb_utils.get_input_tensor_by_name(request, "IN")])
            request.get_response_sender().send(response)
            responses.append(response)
        return responses
