"""OUT = IN + 1, answered as the request's id says: "list" in execute()'s list, "thread" through
the response sender from a thread of its own after execute() returned None for it, "twice"
through the sender, whose second response is refused (the model answers with the refusal)."""

import threading

import triton_python_backend_utils as pb_utils


def answer(request):
    x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
    return pb_utils.InferenceResponse([pb_utils.Tensor("OUT", x + 1)])


class TritonPythonModel:
    def execute(self, requests):
        listed = []
        for request in requests:
            how = request.request_id()
            if how == "list":
                listed.append(answer(request))
                continue
            sender = request.get_response_sender()
            listed.append(None)
            if how == "thread":
                threading.Thread(target=sender.send, args=(answer(request),),
                                 kwargs={"flags": pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL},
                                 daemon=True).start()
                continue
            sender.send(answer(request))
            try:
                sender.send(answer(request))
                refusal = "a second response was taken"
            except pb_utils.TritonModelException as error:
                refusal = str(error)
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            raise pb_utils.TritonModelException(refusal)
        return None if all(r is None for r in listed) else listed
