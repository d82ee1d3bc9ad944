"""Triton's python_backend examples/decoupled/square_model.py, in its shape: a decoupled model
that answers IN = n with n responses OUT = n, each sent from a thread of its own after execute()
returned, then the final flag alone."""

import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = model_config = json.loads(args["model_config"])
        using_decoupled = pb_utils.using_decoupled_model_transaction_policy(model_config)
        if not using_decoupled:
            raise pb_utils.TritonModelException(
                "the model `{}` can support only decoupled transaction policy".format(
                    args["model_name"]))
        in_config = pb_utils.get_input_config_by_name(model_config, "IN")
        if in_config["dims"] != [1] or in_config["data_type"] != "TYPE_INT32":
            raise pb_utils.TritonModelException("IN must be TYPE_INT32 [1]")
        out_config = pb_utils.get_output_config_by_name(model_config, "OUT")
        if out_config["dims"] != [1] or out_config["data_type"] != "TYPE_INT32":
            raise pb_utils.TritonModelException("OUT must be TYPE_INT32 [1]")
        self.inflight_thread_count = 0
        self.inflight_thread_count_lck = threading.Lock()

    def execute(self, requests):
        for request in requests:
            self.process_request(request)
        return None

    def process_request(self, request):
        thread = threading.Thread(
            target=self.response_thread,
            args=(request.get_response_sender(),
                  pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()))
        thread.daemon = True
        with self.inflight_thread_count_lck:
            self.inflight_thread_count += 1
        thread.start()

    def response_thread(self, response_sender, in_input):
        for _ in range(in_input[0]):
            out_output = pb_utils.Tensor("OUT", np.array([in_input[0]], np.int32))
            response_sender.send(pb_utils.InferenceResponse(output_tensors=[out_output]))
        response_sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        with self.inflight_thread_count_lck:
            self.inflight_thread_count -= 1

    def finalize(self):
        while True:
            with self.inflight_thread_count_lck:
                if self.inflight_thread_count == 0:
                    return
            time.sleep(0.1)
