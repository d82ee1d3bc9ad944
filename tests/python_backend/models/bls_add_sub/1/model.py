"""Answers by calling the ONNX model onnx_add_sub (BLS), once per request, and handing on what
it answers; a call that fails fails the request with its error. Requests with a request id of
"decoupled" call it through exec(decoupled=True) instead."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            call = pb_utils.InferenceRequest(
                model_name="onnx_add_sub",
                inputs=[pb_utils.get_input_tensor_by_name(request, "INPUT0"),
                        pb_utils.get_input_tensor_by_name(request, "INPUT1")],
                requested_output_names=["OUTPUT0", "OUTPUT1"])
            if request.request_id() == "decoupled":
                answers = list(call.exec(decoupled=True))
                answer = answers[0]
            else:
                answer = call.exec()
            if answer.has_error():
                responses.append(pb_utils.InferenceResponse(
                    error=pb_utils.TritonError("onnx_add_sub: " + answer.error().message())))
                continue
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT0", pb_utils.get_output_tensor_by_name(
                    answer, "OUTPUT0").as_numpy()),
                pb_utils.Tensor("OUTPUT1", pb_utils.get_output_tensor_by_name(
                    answer, "OUTPUT1").as_numpy())]))
        return responses
