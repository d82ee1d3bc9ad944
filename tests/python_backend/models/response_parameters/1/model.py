"""Echoes IN with response parameters, as a Triton model sets them
(pb_utils.InferenceResponse(..., parameters={...})). IN picks them:
0: one of each type Triton carries (bool, int, str), from the request's own parameters too;
1: names sonic's servers set themselves (they must not come through);
2: an int Triton cannot carry (past int64): the response fails, as in Triton;
3: a float: the constructor refuses it, as Triton's does (the model reports what it said);
4: more parameters than a response may carry."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            case = int(value[0])
            out = [pb_utils.Tensor("OUT", value.astype(np.int32))]
            if case == 0:
                asked = json.loads(request.parameters())
                parameters = {"flag": True, "count": -(2**63), "name": "żółw",
                              "echo": asked.get("tag", "")}
            elif case == 1:
                parameters = {"triton_final_response": False, "sonic_server_queue_ns": 1,
                              "kept": 7}
            elif case == 2:
                parameters = {"huge": 2**64}
            elif case == 3:
                try:
                    pb_utils.InferenceResponse(out, parameters={"ratio": 0.5})
                    parameters = {"refused": False}
                except pb_utils.TritonModelException as e:
                    parameters = {"refused": str(e)}
            else:
                parameters = {"p%d" % i: i for i in range(1000)}
            responses.append(pb_utils.InferenceResponse(out, parameters=parameters))
        return responses
