"""READY = 1 when the server's model named by NAME (a BYTES element) is ready, else 0."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            name = pb_utils.get_input_tensor_by_name(request, "NAME").as_numpy()[0]
            ready = pb_utils.is_model_ready(model_name=name)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("READY", np.array([int(ready)], np.int32))]))
        return responses
