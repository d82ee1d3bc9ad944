"""The values sonic's calls return, and tritonclient-style request objects."""

import concurrent.futures

_TIMING_FIELDS = ("serialize", "queue", "send", "wait", "receive", "deserialize",
                  "server_queue", "server_compute", "total")


class InferResult(dict):
    """The outputs of a request, {name: numpy array}, with the response's attributes.

    Arrays are read-only views of the received message (no copy); each keeps that message
    alive. BYTES outputs are object arrays of bytes; BF16 outputs are uint16 bit patterns.
    """

    __slots__ = ("_meta",)  # (model_name, model_version, request_id, parameters,
    #                         executed_on, timing, descriptions), set once by the extension;
    # descriptions: None when the arrays tell every output's datatype and shape and no output
    # has parameters, else (name, datatype, shape, parameters) of each output in order, those
    # the server wrote into a shared memory region the request named (no array) included.

    @property
    def model_name(self):
        return self._meta[0]

    @property
    def model_version(self):
        return self._meta[1]

    @property
    def request_id(self):
        """The id the server echoed."""
        return self._meta[2]

    @property
    def parameters(self):
        """The response's parameters, {name: bool | int | float | str}."""
        return self._meta[3]

    @property
    def executed_on(self):
        """"remote" (a server), or "local" (the in-process fallback)."""
        return self._meta[4]

    @property
    def timing(self):
        """Where the request's time went, in nanoseconds (0: not measured), as
        sonic::InferTiming: serialize, queue, send, wait, receive, deserialize, server_queue,
        server_compute, total."""
        return dict(zip(_TIMING_FIELDS, self._meta[5]))

    def as_numpy(self, name):
        """The output `name`, or None (as tritonclient's InferResult.as_numpy)."""
        return self.get(name)


class InferFuture(concurrent.futures.Future):
    """The future of Client.infer_async: cancel() also cancels the request on the wire."""

    _handle = None

    def cancel(self):
        if not super().cancel():
            return False
        if self._handle is not None:
            self._handle.cancel()
        return True


class StreamResponse:
    """One response on a stream: `result` (an InferResult) or `error` (a sonic.Error), the
    `request_id` it answers and whether it is the `final` response to that request."""

    __slots__ = ("request_id", "result", "error", "final")

    def __init__(self, request_id, result, error, final):
        self.request_id = request_id
        self.result = result
        self.error = error
        self.final = final

    def __repr__(self):
        what = "error=%r" % (self.error,) if self.error else "outputs=%s" % list(self.result)
        return "StreamResponse(request_id=%r, %s, final=%s)" % (self.request_id, what, self.final)


class InferInput:
    """An input described as tritonclient describes it, so that Triton code ports by changing
    its import: InferInput(name, shape, datatype).set_data_from_numpy(array). Needed for BF16
    (numpy has none: give uint16 bit patterns or float32) and to send a shape other than the
    array's; a dict {name: array} is the shorter spelling otherwise."""

    def __init__(self, name, shape, datatype):
        self._name = name
        self._shape = list(shape)
        self._datatype = datatype
        self._data = None

    def name(self):
        return self._name

    def datatype(self):
        return self._datatype

    def shape(self):
        return self._shape

    def set_shape(self, shape):
        self._shape = list(shape)
        return self

    def set_data_from_numpy(self, input_tensor, binary_data=True):
        """Borrows the array (no copy when C-contiguous): keep it unchanged until the request
        completes. `binary_data` is accepted for tritonclient's sake; sonic always sends raw
        bytes."""
        del binary_data
        self._data = input_tensor
        return self


class InferRequestedOutput:
    """An output asked for by name, as tritonclient asks: class_count > 0 asks the server for
    the top classes (the KServe "classification" parameter)."""

    def __init__(self, name, binary_data=True, class_count=0):
        del binary_data
        self._name = name
        self._parameters = {"classification": class_count} if class_count else None

    def name(self):
        return self._name
