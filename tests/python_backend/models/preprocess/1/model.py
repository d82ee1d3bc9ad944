"""A detector's preprocessing, in the shape such models take: raw hit energies scaled by a
calibration read from the model's parameters at initialize, and a second feature from them."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.scale = np.float32(config["parameters"]["calibration"]["string_value"])

    def execute(self, requests):
        responses = []
        for request in requests:
            hits = pb_utils.get_input_tensor_by_name(request, "HITS").as_numpy()
            scaled = np.log1p(np.maximum(hits, 0)) * self.scale
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("SCALED", scaled.astype(np.float32)),
                pb_utils.Tensor("SQUARED", (scaled * scaled).astype(np.float32))]))
        return responses
