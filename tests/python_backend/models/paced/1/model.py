"""Decoupled, as repeat: one response per element of IN. After the first, it waits (up to 10 s)
for the file the request's "go_file" parameter names: a test makes it once the first response
has reached it, so the rest come only to a caller that got the first while the model ran."""

import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def wait_for(path, seconds):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.005)
    return os.path.exists(path)


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            go_file = json.loads(request.parameters()).get("go_file", "")
            sender = request.get_response_sender()
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            for i, value in enumerate(values):
                if i == 1 and not wait_for(go_file, 10):
                    raise pb_utils.TritonModelException(
                        "the first response had not reached the caller after 10 s")
                sender.send(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", np.array([value], dtype=np.int32))]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
