"""Triton's python_backend examples/bls_decoupled/sync_model.py, in its shape: calls the
decoupled square_int32 (exec(decoupled=True)) and answers SUM, the sum of its responses' OUT."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = json.loads(args["model_config"])

    def execute(self, requests):
        if len(requests) != 1:
            raise pb_utils.TritonModelException("unsupported batch size " + len(requests))
        response_num = pb_utils.get_input_tensor_by_name(requests[0], "IN")
        infer_request = pb_utils.InferenceRequest(
            model_name="square_int32", inputs=[response_num], requested_output_names=["OUT"])
        response_sum = np.array([0])
        for infer_response in infer_request.exec(decoupled=True):
            if infer_response.has_error():
                raise pb_utils.TritonModelException(infer_response.error().message())
            if len(infer_response.output_tensors()) > 0:
                response_sum += pb_utils.get_output_tensor_by_name(infer_response,
                                                                   "OUT").as_numpy()
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("SUM", response_sum)])]

    def finalize(self):
        print("Cleaning up...")
