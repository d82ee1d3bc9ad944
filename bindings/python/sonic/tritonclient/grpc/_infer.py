"""tritonclient.grpc's InferInput, InferRequestedOutput and InferResult over sonic's requests
and results.

set_data_from_numpy() copies the array, as tritonclient does (code that refills one buffer for
the next request while the last is in flight relies on it); sonic then sends that copy without
copying it again. With set_data_from_numpy(array, copy=False), sonic's own option, the array
itself is sent: keep it unchanged until the call that sends it returned (for async_infer, until
its callback ran).
"""

import numpy as np

from .. import _messages
from ..utils import (_bf16_bits, _bytes_elements, _float32_of_bf16, np_to_triton_dtype,
                     raise_error, serialize_byte_tensor, triton_to_np_dtype)

_PLACEMENT = ("shared_memory_region", "shared_memory_byte_size", "shared_memory_offset")


class InferInput:
    """An input of a request: InferInput(name, shape, datatype), then set_data_from_numpy()
    or set_shared_memory()."""

    def __init__(self, name, shape, datatype):
        self._name = name
        self._shape = [int(dim) for dim in shape]
        self._datatype = datatype
        # What sonic's extension reads: the array to send, the tensor's parameters.
        self._data = None
        self._parameters = {}

    def name(self):
        """The input's name."""
        return self._name

    def datatype(self):
        """The input's datatype ("INT32")."""
        return self._datatype

    def shape(self):
        """The input's shape (a list of ints)."""
        return self._shape

    def set_shape(self, shape):
        """Sets the input's shape; returns the input."""
        self._shape = [int(dim) for dim in shape]
        return self

    def set_data_from_numpy(self, input_tensor, *, copy=True):
        """Sets the input's data from a numpy array of its datatype and shape (float32 for
        BF16, which is sent truncated to its upper 16 bits as tritonclient sends it; an object
        or bytes array for BYTES). Returns the input. Raises InferenceServerException, with
        tritonclient's words, for an array of another datatype or shape. copy=False (sonic's)
        sends the array itself, without a copy: keep it unchanged until the request is done."""
        # The checks, and their words, are tritonclient's (grpc/_infer_input.py).
        if not isinstance(input_tensor, np.ndarray):
            raise_error("input_tensor must be a numpy array")
        if self._datatype == "BF16":
            expected = triton_to_np_dtype("BF16")
            if input_tensor.dtype != expected:
                raise_error("got unexpected datatype {} from numpy array, expected {} for BF16 "
                            "type".format(input_tensor.dtype, expected))
        else:
            given = np_to_triton_dtype(input_tensor.dtype)
            if given != self._datatype:
                raise_error("got unexpected datatype {} from numpy array, expected {}".format(
                    given, self._datatype))
        if list(input_tensor.shape) != self._shape:
            raise_error("got unexpected numpy array shape [{}], expected [{}]".format(
                ", ".join(str(dim) for dim in input_tensor.shape),
                ", ".join(str(dim) for dim in self._shape)))
        for key in _PLACEMENT:
            self._parameters.pop(key, None)
        if self._datatype == "BF16":
            self._data = _bf16_bits(input_tensor)  # a new array
        elif self._datatype == "BYTES" and input_tensor.dtype == np.object_:
            self._data = _bytes_array(input_tensor, copy)
        else:
            self._data = np.array(input_tensor, order="C") if copy else input_tensor
        return self

    def set_shared_memory(self, region_name, byte_size, offset=0):
        """Takes the input's data from a registered shared memory region: `byte_size` bytes at
        `offset`. Returns the input."""
        self._data = None
        self._parameters["shared_memory_region"] = region_name
        self._parameters["shared_memory_byte_size"] = int(byte_size)
        if offset != 0:
            self._parameters["shared_memory_offset"] = int(offset)
        else:
            self._parameters.pop("shared_memory_offset", None)
        return self


def _bytes_array(array, copy):
    # sonic's extension sends bytes and str elements; tritonclient sends any other object of an
    # object array as the UTF-8 of str(object): such arrays are converted here, once. (A copy
    # of an object array holds the same, immutable, elements.)
    if all(type(item) is bytes or type(item) is str for item in array.flat):
        return array.copy() if copy else array
    elements = np.empty(array.size, dtype=np.object_)
    elements[:] = _bytes_elements(array)
    return elements.reshape(array.shape)


class InferRequestedOutput:
    """An output a request asks for: class_count > 0 asks for the top classes instead (KServe's
    classification extension); set_shared_memory() has the server write it into a registered
    region."""

    def __init__(self, name, class_count=0):
        self._name = name
        self._parameters = {}
        if class_count != 0:
            self._parameters["classification"] = int(class_count)

    def name(self):
        """The output's name."""
        return self._name

    def set_shared_memory(self, region_name, byte_size, offset=0):
        """Has the server write the output into a registered shared memory region:
        `byte_size` bytes at `offset`."""
        if "classification" in self._parameters:
            raise_error("shared memory can't be set on classification output")
        self._parameters["shared_memory_region"] = region_name
        self._parameters["shared_memory_byte_size"] = int(byte_size)
        if offset != 0:
            self._parameters["shared_memory_offset"] = int(offset)

    def unset_shared_memory(self):
        """Clears set_shared_memory(): the output comes back in the response again."""
        for key in _PLACEMENT:
            self._parameters.pop(key, None)


def infer_parameter(value):
    """A KServe InferParameter message holding a Python value."""
    if isinstance(value, bool):
        return _messages.Message("inference.InferParameter", bool_param=value)
    if isinstance(value, int):
        if value >= 1 << 63:
            return _messages.Message("inference.InferParameter", uint64_param=value)
        return _messages.Message("inference.InferParameter", int64_param=value)
    if isinstance(value, float):
        return _messages.Message("inference.InferParameter", double_param=value)
    return _messages.Message("inference.InferParameter", string_param=str(value))


class InferResult:
    """The result of a request: as_numpy(name) for an output's array, get_output(name) and
    get_response() for the ModelInferResponse's fields (plain objects with protobuf's
    attribute names, or the JSON dicts tritonclient gives with as_json=True)."""

    def __init__(self, result):
        self._result = result  # a sonic.InferResult
        self._response = None

    def as_numpy(self, name):
        """The output `name` as a numpy array (read-only, viewing the response), or None when
        the response has no such output or the server wrote it into shared memory. BYTES
        outputs are object arrays of bytes; BF16 outputs float32 arrays, as tritonclient gives
        them."""
        array = self._result.get(name)
        if array is None:
            return None
        if self._datatype(name) == "BF16":
            return _float32_of_bf16(array)
        return array

    def get_output(self, name, as_json=False):
        """The response's InferOutputTensor of that name (name, datatype, shape, parameters),
        or None. With as_json, as MessageToJson prints it (tritonclient's docstring promises
        the dict; some of its versions return None there)."""
        for output in self.get_response().outputs:
            if output.name == name:
                return _messages.to_json(output) if as_json else output
        return None

    def get_response(self, as_json=False):
        """The ModelInferResponse: model_name, model_version, id, parameters, outputs and
        raw_output_contents (one entry per output, empty for an output in shared memory)."""
        if self._response is None:
            self._response = self._build_response()
        return _messages.to_json(self._response) if as_json else self._response

    def _descriptions(self):
        """(name, datatype, shape, parameters) of each output, in the response's order."""
        described = self._result._meta[6]
        if described is not None:
            return described
        return tuple((name, np_to_triton_dtype(array.dtype), list(array.shape), {})
                     for name, array in self._result.items())

    def _datatype(self, name):
        described = self._result._meta[6]
        if described is None:
            return None  # BF16 outputs always come with descriptions
        for output in described:
            if output[0] == name:
                return output[1]
        return None

    def _build_response(self):
        result = self._result
        response = _messages.Message(
            "inference.ModelInferResponse", model_name=result.model_name,
            model_version=result.model_version, id=result.request_id)
        for key, value in result.parameters.items():
            response.parameters[key] = infer_parameter(value)
        if result.executed_on == "remote":
            # sonic's client reads sonic-server's report of its queue and compute time out of
            # the response's parameters (into result.timing): they go back where they were.
            timing = result.timing
            for key, part in (("sonic_server_queue_ns", "server_queue"),
                              ("sonic_server_compute_ns", "server_compute")):
                if timing[part] > 0:
                    response.parameters[key] = infer_parameter(int(timing[part]))
        for name, datatype, shape, parameters in self._descriptions():
            array = result.get(name)
            output = _messages.Message("inference.ModelInferResponse.InferOutputTensor",
                                       name=name, datatype=datatype, shape=list(shape))
            for key, value in parameters.items():
                # Triton answers an output it wrote into shared memory without parameters;
                # sonic's client adds the request's placement to tell where its bytes are.
                if array is None and key in _PLACEMENT:
                    continue
                output.parameters[key] = infer_parameter(value)
            response.outputs.append(output)
            response.raw_output_contents.append(_raw_bytes(array, datatype))
        return response


def _raw_bytes(array, datatype):
    if array is None:
        return b""  # in shared memory: Triton sends an empty entry in its place
    if datatype == "BYTES":
        return serialize_byte_tensor(array).item() if array.size else b""
    return np.ascontiguousarray(array).tobytes()
