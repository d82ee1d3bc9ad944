"""tritonclient.http's InferInput, InferRequestedOutput and InferResult over sonic's requests
and results, and the request and response bodies of KServe's REST protocol with the binary
tensor data extension (generate_request_body(), parse_response_body()).

sonic's http:// transport sends every input as binary data and asks for every output as binary
data, whatever binary_data says: the server computes the same either way. binary_data still
shapes what tritonclient.http shows of it: the bodies generate_request_body() makes, and the
JSON of get_response() and get_output(), where an output asked for with binary_data=False
carries its elements as "data" (and as_numpy() gives them as tritonclient.http converts JSON
data: BYTES as str).
"""

import gzip
import json
import zlib

import numpy as np

from ..grpc import _infer as _grpc
from ..utils import (_float32_of_bf16, deserialize_bf16_tensor, deserialize_bytes_tensor,
                     np_to_triton_dtype, raise_error, serialize_byte_tensor, triton_to_np_dtype)


class InferInput(_grpc.InferInput):
    """An input of a request: InferInput(name, shape, datatype), then set_data_from_numpy()
    or set_shared_memory()."""

    def __init__(self, name, shape, datatype):
        super().__init__(name, shape, datatype)
        self._binary = True
        self._json_data = None  # the elements as JSON, for binary_data=False

    def set_data_from_numpy(self, input_tensor, binary_data=True, *, copy=True):
        """Sets the input's data from a numpy array of its datatype and shape. binary_data=False
        puts the elements in the request's JSON, as tritonclient.http does (never for BF16;
        BYTES elements must then be UTF-8). Returns the input. Raises InferenceServerException
        with tritonclient's words. copy=False (sonic's) sends the array itself: keep it
        unchanged until the request is done."""
        super().set_data_from_numpy(input_tensor, copy=copy)
        self._binary = binary_data
        self._json_data = None
        if not binary_data:
            # tritonclient.http's checks and words (http/_infer_input.py).
            if self._datatype == "BF16":
                raise_error("BF16 inputs must be sent as binary data over HTTP. Please set "
                            "binary_data=True")
            if self._datatype == "BYTES":
                self._json_data = [_utf8(item) for item in input_tensor.reshape(-1)]
            else:
                self._json_data = [item.item() for item in input_tensor.reshape(-1)]
        return self

    def set_shared_memory(self, region_name, byte_size, offset=0):
        """Takes the input's data from a registered shared memory region: `byte_size` bytes at
        `offset`. Returns the input."""
        self._json_data = None
        return super().set_shared_memory(region_name, byte_size, offset)

    def _get_binary_data(self):
        """The input's bytes as the request body carries them after its JSON, or None (JSON
        data, shared memory)."""
        if self._data is None or not self._binary:
            return None
        if self._datatype == "BYTES":
            serialized = serialize_byte_tensor(np.asarray(self._data, dtype=np.object_))
            return serialized.item() if serialized.size > 0 else b""
        return np.ascontiguousarray(self._data).tobytes()  # BF16 data is already its bits

    def _get_tensor(self):
        """The input as the request's JSON describes it."""
        tensor = {"name": self._name, "shape": self._shape, "datatype": self._datatype}
        parameters = dict(self._parameters)
        binary = self._get_binary_data()
        if binary is not None:
            parameters["binary_data_size"] = len(binary)
        if parameters:
            tensor["parameters"] = parameters
        if self._json_data is not None:
            tensor["data"] = self._json_data
        return tensor


def _utf8(item):
    """A BYTES element as JSON text: bytes must be UTF-8 (tritonclient.http's words)."""
    if type(item) is not bytes:
        return str(item)
    try:
        return str(item, encoding="utf-8")
    except UnicodeDecodeError:
        pass
    raise_error('Failed to encode "{}" using UTF-8. Please use binary_data=True, if you want '
                "to pass a byte array.".format(item))


class InferRequestedOutput(_grpc.InferRequestedOutput):
    """An output a request asks for: binary_data (True) how tritonclient.http would have it sent
    (see the module's help), class_count > 0 the top classes instead (KServe's classification
    extension); set_shared_memory() has the server write it into a registered region."""

    def __init__(self, name, binary_data=True, class_count=0):
        super().__init__(name, class_count)
        self._binary = binary_data

    def _get_tensor(self):
        """The output as the request's JSON asks for it."""
        parameters = dict(self._parameters)
        # tritonclient.http asks for an output in shared memory without binary data.
        parameters["binary_data"] = self._binary and "shared_memory_region" not in parameters
        return {"name": self._name, "parameters": parameters}


def request_body(inputs, outputs, request_id, parameters):
    """tritonclient.http's request body: (body, json_size), json_size None when the JSON is the
    whole body. `parameters` are the request's, made by sonic.tritonclient._requests."""
    request = {}
    if request_id != "":
        request["id"] = request_id
    parameters = dict(parameters or {})
    request["inputs"] = [tensor._get_tensor() for tensor in inputs]
    if outputs:
        request["outputs"] = [output._get_tensor() for output in outputs]
    else:
        parameters["binary_data_output"] = True  # every output, in binary
    if parameters:
        request["parameters"] = parameters
    header = json.dumps(request).encode()
    parts = [part for part in (tensor._get_binary_data() for tensor in inputs)
             if part is not None]
    if not parts:
        return header, None
    return b"".join([header] + parts), len(header)


class InferResult:
    """The result of a request: as_numpy(name) for an output's array, get_output(name) and
    get_response() for the answer's JSON, as tritonclient.http gives them."""

    def __init__(self, response, buffers):
        self._result = response  # the answer's JSON
        self._buffers = buffers  # {output name: numpy array, or bytes of a body}

    @classmethod
    def from_sonic(cls, result, outputs):
        """The result of sonic's `result` (a sonic.InferResult) of a request that asked for
        `outputs` (tritonclient.http InferRequestedOutputs, or None for all, in binary)."""
        binary = {output.name(): output._binary for output in outputs or ()}
        response = {"model_name": result.model_name, "model_version": result.model_version}
        if result.request_id:
            response["id"] = result.request_id
        if result.parameters:
            response["parameters"] = dict(result.parameters)
        buffers = {}
        described = result._meta[6]
        if described is None:
            described = [(name, np_to_triton_dtype(array.dtype), list(array.shape), {})
                         for name, array in result.items()]
        response["outputs"] = []
        for name, datatype, shape, parameters in described:
            array = result.get(name)
            output = {"name": name, "datatype": datatype, "shape": list(shape)}
            if array is None:
                pass  # in shared memory: Triton describes it without data or parameters
            elif binary.get(name, True):
                output["parameters"] = {"binary_data_size": _byte_size(array, datatype)}
                buffers[name] = array
            else:
                output["data"] = _json_elements(array, datatype)
            response["outputs"].append(output)
        return cls(response, buffers)

    @classmethod
    def from_response_body(cls, response_body, verbose=False, header_length=None,
                           content_encoding=None):
        """The result an inference answer's body holds (tritonclient.http's
        InferResult.from_response_body): its JSON, then each binary output's bytes."""
        if content_encoding == "gzip":
            response_body = gzip.decompress(response_body)
        elif content_encoding == "deflate":
            response_body = zlib.decompress(response_body)
        if header_length is None:
            response = json.loads(response_body)
            rest = b""
        else:
            header_length = int(header_length)
            response = json.loads(response_body[:header_length])
            rest = memoryview(response_body)[header_length:]
        if verbose:
            print(response)
        buffers = {}
        at = 0
        for output in response.get("outputs", ()):
            size = (output.get("parameters") or {}).get("binary_data_size")
            if size is not None:
                buffers[output["name"]] = bytes(rest[at:at + size])
                at += size
        return cls(response, buffers)

    def as_numpy(self, name):
        """The output `name` as a numpy array, or None when the answer has no such output or the
        server wrote it into shared memory. BYTES outputs in binary are object arrays of bytes,
        BF16 outputs float32 arrays, as tritonclient.http gives them."""
        output = self.get_output(name)
        if output is None:
            return None
        datatype = output["datatype"]
        size = (output.get("parameters") or {}).get("binary_data_size")
        if size is not None:
            data = self._buffers.get(name)
            if isinstance(data, np.ndarray):
                array = _float32_of_bf16(data) if datatype == "BF16" else data
            elif size == 0:
                array = np.empty(0)
            elif datatype == "BYTES":
                array = deserialize_bytes_tensor(data)
            elif datatype == "BF16":
                array = deserialize_bf16_tensor(data)
            else:
                array = np.frombuffer(data, dtype=triton_to_np_dtype(datatype))
        elif "data" in output:
            array = np.array(output["data"], dtype=triton_to_np_dtype(datatype))
        else:
            return None  # in shared memory
        return array.reshape(output["shape"])

    def get_output(self, name):
        """The answer's JSON of the output `name` (name, datatype, shape, parameters or data),
        or None."""
        for output in self._result.get("outputs", ()):
            if output["name"] == name:
                return output
        return None

    def get_response(self):
        """The answer's JSON: model_name, model_version, id, parameters and outputs."""
        return self._result


def _byte_size(array, datatype):
    if datatype == "BYTES":
        return len(serialize_byte_tensor(array).item()) if array.size else 0
    return array.nbytes


def _json_elements(array, datatype):
    """An output's elements as Triton's JSON "data" holds them (flattened; BYTES as text)."""
    if datatype == "BYTES":
        return [bytes(item).decode("utf-8", "replace") if not isinstance(item, str) else item
                for item in array.reshape(-1)]
    if datatype == "BF16":
        return [float(item) for item in _float32_of_bf16(array).reshape(-1)]
    return array.reshape(-1).tolist()


__all__ = ["InferInput", "InferRequestedOutput", "InferResult"]
