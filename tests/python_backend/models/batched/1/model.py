"""Answers each request of an execute on its own: OUT = 2 * IN, and COUNT the number of requests
the execute was given (Triton hands a batch's requests to one execute as a list)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            count = np.full(x.shape, len(requests), np.int32)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUT", 2 * x), pb_utils.Tensor("COUNT", count)]))
        return responses
