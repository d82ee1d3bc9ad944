"""A generator that streams until its caller goes away: a response every 10 ms, counting up,
until its response sender says the request was cancelled (the client reset its stream), then
the final flag; at most 2000 responses."""

import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            for count in range(2000):
                if sender.is_cancelled():
                    break
                sender.send(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", np.array([count], dtype=np.int32))]))
                time.sleep(0.01)
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
