"""Answers each request of an execute on its own: OUT = IN twice (BYTES), and COUNT the number
of requests the execute was given."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            twice = np.array([[s + s for s in row] for row in x], dtype=np.object_)
            count = np.full(x.shape, len(requests), np.int32)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUT", twice), pb_utils.Tensor("COUNT", count)]))
        return responses
