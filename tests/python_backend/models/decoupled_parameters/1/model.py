"""One response per element of IN, each holding that element and parameters of its own: its
position, whether it is the last, a name, and a triton_final_response of its own that the
server's must replace."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            for i, value in enumerate(values):
                sender.send(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", np.array([value], dtype=np.int32))],
                    parameters={"index": i, "last": i == len(values) - 1,
                                "name": "response %d" % i, "triton_final_response": True}))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
