"""Triton's simple_identity example as a Python model: OUTPUT0 is INPUT0, strings included."""

import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        output = pb_utils.get_output_config_by_name(config, "OUTPUT0")
        self.output_dtype = pb_utils.triton_string_to_numpy(output["data_type"])
        self.args = args

    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUTPUT0", data.astype(self.output_dtype))]))
        return responses
