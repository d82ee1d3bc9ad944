"""Triton's python_backend examples/decoupled/repeat_model.py, in its shape: a decoupled model
that answers IN = [v0, v1, ...] with one response (OUT = vi, IDX = i) per element, DELAY[i]
milliseconds apart, from a thread of its own, while execute() waits WAIT milliseconds."""

import json
import threading
import time

import numpy
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = model_config = json.loads(args["model_config"])
        using_decoupled = pb_utils.using_decoupled_model_transaction_policy(model_config)
        if not using_decoupled:
            raise pb_utils.TritonModelException(
                "the model `{}` can support only decoupled transaction policy".format(
                    args["model_name"]))
        out_config = pb_utils.get_output_config_by_name(model_config, "OUT")
        idx_config = pb_utils.get_output_config_by_name(model_config, "IDX")
        self.out_dtype = pb_utils.triton_string_to_numpy(out_config["data_type"])
        self.idx_dtype = pb_utils.triton_string_to_numpy(idx_config["data_type"])
        parameters = self.model_config.get("parameters", {})
        self.output_num_elements = int(
            parameters.get("output_num_elements", {}).get("string_value", 1))
        self.inflight_thread_count = 0
        self.inflight_thread_count_lck = threading.Lock()

    def execute(self, requests):
        if len(requests) != 1:
            raise pb_utils.TritonModelException("unsupported batch size " + len(requests))
        in_input = pb_utils.get_input_tensor_by_name(requests[0], "IN").as_numpy()
        delay_input = pb_utils.get_input_tensor_by_name(requests[0], "DELAY").as_numpy()
        if in_input.shape != delay_input.shape:
            raise pb_utils.TritonModelException("expected IN and DELAY shape to match")
        thread = threading.Thread(target=self.response_thread,
                                  args=(requests[0].get_response_sender(), in_input, delay_input))
        thread.daemon = True
        with self.inflight_thread_count_lck:
            self.inflight_thread_count += 1
        thread.start()
        wait_input = pb_utils.get_input_tensor_by_name(requests[0], "WAIT").as_numpy()
        time.sleep(wait_input[0] / 1000)
        return None

    def response_thread(self, response_sender, in_input, delay_input):
        for idx in range(in_input.size):
            time.sleep(delay_input[idx] / 1000)
            idx_output = pb_utils.Tensor("IDX", numpy.array([idx], self.idx_dtype))
            out_output = pb_utils.Tensor(
                "OUT", numpy.full((self.output_num_elements,), in_input[idx], dtype=self.out_dtype))
            response_sender.send(pb_utils.InferenceResponse(output_tensors=[idx_output,
                                                                            out_output]))
        response_sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        with self.inflight_thread_count_lck:
            self.inflight_thread_count -= 1

    def finalize(self):
        while True:
            with self.inflight_thread_count_lck:
                if self.inflight_thread_count == 0:
                    return
            time.sleep(0.1)
