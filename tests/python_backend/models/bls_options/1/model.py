"""A request with id "inner" answers PARAMS, its parameters() (JSON); any other calls this model
with such a request, made with parameters and a timeout, and answers what it answered."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            if request.request_id() == "inner":
                params = np.array([request.parameters().encode()], dtype=np.object_)
                responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("PARAMS", params)]))
                continue
            inner = pb_utils.InferenceRequest(
                model_name="bls_options", request_id="inner",
                inputs=[pb_utils.get_input_tensor_by_name(request, "IN")],
                requested_output_names=["PARAMS"], timeout=10**9,
                parameters={"k": 7, "s": "x", "b": True}).exec()
            if inner.has_error():
                raise pb_utils.TritonModelException(inner.error().message())
            responses.append(pb_utils.InferenceResponse(inner.output_tensors()))
        return responses
