"""A model that fails as asked: MODE 0 answers the stub's process id, 1 raises, 2 hangs, 3 ends
its process with os._exit(3), 4 kills it with SIGKILL."""

import os
import signal
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            mode = int(pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy()[0])
            if mode == 1:
                raise ValueError("mode 1 raises")
            if mode == 2:
                time.sleep(600)
            if mode == 3:
                os._exit(3)
            if mode == 4:
                os.kill(os.getpid(), signal.SIGKILL)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("PID", np.array([os.getpid()], dtype=np.int64))]))
        return responses
