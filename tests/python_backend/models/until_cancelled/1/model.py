"""A long computation that honours Triton's request cancellation: it works in small steps until
request.is_cancelled() says its caller went away (a cancelled call, a closed connection, a
passed deadline), then stops with CANCELLED; at most 20 s. Its parameter "steps", when given,
ends it after that many steps instead, with IN as OUT."""

import json
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            steps = json.loads(request.parameters()).get("steps", 4000)
            for _ in range(steps):
                if request.is_cancelled():
                    responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                        "stopped: its caller went away", pb_utils.TritonError.CANCELLED)))
                    break
                time.sleep(0.005)
            else:
                value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
                responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", value)]))
        return responses
