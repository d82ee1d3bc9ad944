"""Triton's decoupled repeat example, shortened: one response per element of IN, each holding
that element, then the final flag with no response."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            for value in pb_utils.get_input_tensor_by_name(request, "IN").as_numpy():
                sender.send(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", np.array([value], dtype=np.int32))]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
