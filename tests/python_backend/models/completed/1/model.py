"""A config of a name and a backend only: auto_complete_config gives the rest."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        auto_complete_model_config.set_max_batch_size(4)
        auto_complete_model_config.add_input(
            {"name": "X", "data_type": "TYPE_FP32", "dims": [3]})
        auto_complete_model_config.add_output(
            {"name": "DOUBLED", "data_type": "TYPE_FP32", "dims": [3]})
        auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config

    def initialize(self, args):
        # What initialize() is given, to be checked by the test through the output's dtype.
        self.config = json.loads(args["model_config"])
        assert self.config["max_batch_size"] == 4, self.config
        assert args["model_instance_kind"] == "CPU"
        assert args["model_name"] == "completed" and args["model_version"] == "1"

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "DOUBLED", pb_utils.get_input_tensor_by_name(r, "X").as_numpy() * np.float32(2))])
            for r in requests]
