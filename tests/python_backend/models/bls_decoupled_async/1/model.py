"""Triton's python_backend examples/bls_decoupled/async_model.py, in its shape: `async def
execute`, two decoupled calls to square_int32 in flight at once (async_exec(decoupled=True),
asyncio.gather), SUM the sum of both streams' OUT."""

import asyncio
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = json.loads(args["model_config"])

    async def execute(self, requests):
        if len(requests) != 1:
            raise pb_utils.TritonModelException("unsupported batch size " + len(requests))
        response_num = pb_utils.get_input_tensor_by_name(requests[0], "IN")
        inference_response_awaits = []
        for _ in range(2):
            infer_request = pb_utils.InferenceRequest(
                model_name="square_int32", inputs=[response_num], requested_output_names=["OUT"])
            inference_response_awaits.append(infer_request.async_exec(decoupled=True))
        async_responses = await asyncio.gather(*inference_response_awaits)
        response_sum = np.array([0])
        for infer_responses in async_responses:
            for infer_response in infer_responses:
                if infer_response.has_error():
                    raise pb_utils.TritonModelException(infer_response.error().message())
                if len(infer_response.output_tensors()) > 0:
                    response_sum += pb_utils.get_output_tensor_by_name(infer_response,
                                                                       "OUT").as_numpy()
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("SUM", response_sum)])]

    def finalize(self):
        print("Cleaning up...")
