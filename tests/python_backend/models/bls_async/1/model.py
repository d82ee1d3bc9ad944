"""Triton's python_backend examples/bls/async_model.py, in its shape: `async def execute`, two
BLS calls in flight at once (async_exec, asyncio.gather), OUTPUT0 from the first model's answer
and OUTPUT1 from the second's. The example calls "pytorch" and "add_sub"; here "add_sub" stands
for both (the same sum and difference, without torch in the stub)."""

import asyncio
import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = json.loads(args["model_config"])

    async def execute(self, requests):
        responses = []
        for request in requests:
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")
            inference_response_awaits = []
            for model_name in ["add_sub", "add_sub"]:
                infer_request = pb_utils.InferenceRequest(
                    model_name=model_name,
                    requested_output_names=["OUTPUT0", "OUTPUT1"],
                    inputs=[in_0, in_1])
                inference_response_awaits.append(infer_request.async_exec())
            inference_responses = await asyncio.gather(*inference_response_awaits)
            for infer_response in inference_responses:
                if infer_response.has_error():
                    raise pb_utils.TritonModelException(infer_response.error().message())
            output0 = pb_utils.get_output_tensor_by_name(inference_responses[0], "OUTPUT0")
            output1 = pb_utils.get_output_tensor_by_name(inference_responses[1], "OUTPUT1")
            responses.append(pb_utils.InferenceResponse(output_tensors=[output0, output1]))
        return responses

    def finalize(self):
        print("Cleaning up...")
