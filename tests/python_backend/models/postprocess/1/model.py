"""A classifier's postprocessing: a score from the network's outputs, and a decision as text."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            total = pb_utils.get_input_tensor_by_name(request, "SUM").as_numpy()
            spread = pb_utils.get_input_tensor_by_name(request, "DIFFERENCE").as_numpy()
            logit = (total.sum(axis=1, keepdims=True)
                     - 2 * np.abs(spread).sum(axis=1, keepdims=True))
            score = (1 / (1 + np.exp(-logit))).astype(np.float32)
            label = np.array([[b"signal" if s > 0.5 else b"background"] for s in score[:, 0]],
                             dtype=np.object_)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("SCORE", score), pb_utils.Tensor("LABEL", label)]))
        return responses
