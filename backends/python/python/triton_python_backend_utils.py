"""triton_python_backend_utils as sonic's Python backend provides it: the names a Triton
model.py imports (`import triton_python_backend_utils as pb_utils`), with the behaviour Triton's
python_backend documents (its README.md, src/resources/triton_python_backend_utils.py and
src/pb_stub.cc). sonic's stub process (sonic_python_stub.py) imports it and connects it to the
server through set_channel(); a model never calls that.

What this module leaves out: GPU tensors (everything is on the CPU, as under
model_instance_kind "CPU"), async_exec, request cancellation (is_cancelled() is False), BLS
tracing, and is_model_ready()."""

import json
import struct
import sys

import numpy as np

# Flags of a decoupled response and of a request, with Triton's values (tritonserver.h).
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2

# Config type names, numeric data type codes (inference.DataType) and the wire's names, in one
# table: (TYPE_ name, code, KServe name, numpy type).
_TYPES = [
    ("TYPE_BOOL", 1, "BOOL", np.bool_),
    ("TYPE_UINT8", 2, "UINT8", np.uint8),
    ("TYPE_UINT16", 3, "UINT16", np.uint16),
    ("TYPE_UINT32", 4, "UINT32", np.uint32),
    ("TYPE_UINT64", 5, "UINT64", np.uint64),
    ("TYPE_INT8", 6, "INT8", np.int8),
    ("TYPE_INT16", 7, "INT16", np.int16),
    ("TYPE_INT32", 8, "INT32", np.int32),
    ("TYPE_INT64", 9, "INT64", np.int64),
    ("TYPE_FP16", 10, "FP16", np.float16),
    ("TYPE_FP32", 11, "FP32", np.float32),
    ("TYPE_FP64", 12, "FP64", np.float64),
    ("TYPE_STRING", 13, "BYTES", np.object_),
]
TRITON_STRING_TO_NUMPY = {name: numpy_type for name, _, _, numpy_type in _TYPES}
_CODE_TO_NUMPY = {code: numpy_type for _, code, _, numpy_type in _TYPES}
_WIRE_TO_NUMPY = {wire: numpy_type for _, _, wire, numpy_type in _TYPES}
_CODE_TO_WIRE = {code: wire for _, code, wire, _ in _TYPES}
_WIRE_TO_CODE = {wire: code for _, code, wire, _ in _TYPES}


def triton_string_to_numpy(triton_type_string):
    """The numpy type of a config's data_type ("TYPE_FP32" -> numpy.float32)."""
    return TRITON_STRING_TO_NUMPY[triton_type_string]


def triton_to_numpy_type(data_type):
    """The numpy type of a numeric data type code (11 -> numpy.float32), or None."""
    return _CODE_TO_NUMPY.get(data_type)


def numpy_to_triton_type(data_type):
    """The numeric data type code of a numpy type (numpy.float32 -> 11), or None."""
    data_type = np.dtype(data_type) if not isinstance(data_type, np.dtype) else data_type
    if data_type.type is np.bytes_ or data_type == np.object_:
        return 13
    for _, code, _, numpy_type in _TYPES:
        if data_type == np.dtype(numpy_type):
            return code
    return None


def serialize_byte_tensor(input_tensor):
    """A BYTES tensor as Triton's flat encoding: each element a 4-byte little-endian length and
    its bytes, in C order, as a uint8 array (None for an empty tensor). Elements that are not
    bytes are written as their str() in UTF-8, as Triton does."""
    if input_tensor.size == 0:
        return None
    parts = []
    for item in input_tensor.reshape(-1, order="C"):
        if not isinstance(item, bytes):
            item = str(item).encode("utf-8")
        parts.append(struct.pack("<I", len(item)))
        parts.append(item)
    return np.frombuffer(b"".join(parts), dtype=np.uint8)


def deserialize_bytes_tensor(encoded_tensor):
    """Triton's flat BYTES encoding as a 1-D numpy object array of bytes."""
    view = memoryview(encoded_tensor).cast("B")
    items = []
    offset = 0
    while offset < len(view):
        if offset + 4 > len(view):
            raise TritonModelException("a BYTES tensor ends within an element's length")
        (length,) = struct.unpack_from("<I", view, offset)
        offset += 4
        if offset + length > len(view):
            raise TritonModelException("a BYTES element runs past the tensor's end")
        items.append(bytes(view[offset:offset + length]))
        offset += length
    array = np.empty(len(items), dtype=np.object_)
    array[:] = items
    return array


class TritonError:
    """An error a response carries (InferenceResponse(error=...)): its message and a code, one
    of the class's constants (INTERNAL unless given)."""

    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7

    def __init__(self, message, code=INTERNAL):
        self._message = message
        self._code = code

    def __str__(self):
        return str(self._message)

    def message(self):
        return self._message

    def code(self):
        return self._code


class TritonModelException(Exception):
    """Raised by this module when a model uses it wrongly, and by the models themselves."""

    def message(self):
        return str(self)


class Tensor:
    """A named tensor: an input of a request, an output of a response. BYTES tensors are numpy
    object arrays of bytes, as Triton gives them."""

    def __init__(self, name, numpy_array, triton_dtype=None):
        if not isinstance(numpy_array, np.ndarray):
            numpy_array = np.asarray(numpy_array)
        if numpy_array.dtype.type is np.str_ or numpy_array.dtype.kind == "V":
            # Triton refuses these too: fixed-width unicode and void have no BYTES encoding.
            raise TritonModelException(
                "Tensor dtype used for numpy_array is not supported by the Python backend; "
                "use numpy.object_ (of bytes) instead")
        if triton_dtype is not None:
            wanted = triton_to_numpy_type(triton_dtype)
            if wanted is None:
                raise TritonModelException("unknown triton_dtype %r" % (triton_dtype,))
            if numpy_array.dtype != wanted:
                numpy_array = numpy_array.view(wanted)
        else:
            triton_dtype = numpy_to_triton_type(numpy_array.dtype)
            if triton_dtype is None:
                raise TritonModelException("numpy dtype %s has no Triton data type"
                                           % numpy_array.dtype)
        self._name = name
        self._array = numpy_array
        self._triton_dtype = triton_dtype

    def name(self):
        return self._name

    def triton_dtype(self):
        return self._triton_dtype

    def as_numpy(self):
        return self._array

    def shape(self):
        return list(self._array.shape)

    def is_cpu(self):
        return True

    def to_dlpack(self):
        """A DLPack capsule over the tensor's bytes (numeric tensors only: DLPack has no
        strings)."""
        if self._array.dtype == np.object_:
            raise TritonModelException("a BYTES tensor cannot be shared through DLPack")
        return self._array.__dlpack__()

    @staticmethod
    def from_dlpack(tensor_name, dlpack_tensor):
        """A Tensor over the memory of an object with __dlpack__ (a numpy array, a CPU torch
        tensor) or of a DLPack capsule; numpy takes CPU memory only."""
        if not hasattr(dlpack_tensor, "__dlpack__"):
            dlpack_tensor = _Capsule(dlpack_tensor)
        return Tensor(tensor_name, np.from_dlpack(dlpack_tensor))


class _Capsule:
    """A bare DLPack capsule in the shape np.from_dlpack takes (an object with __dlpack__)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0


class InferenceResponse:
    """One response: its output tensors, or an error."""

    def __init__(self, output_tensors=None, error=None, parameters=None):
        if output_tensors is None:
            output_tensors = []
        if not isinstance(output_tensors, (list, tuple)):
            raise TritonModelException('"output_tensors" must be a list.')
        self._outputs = list(output_tensors)
        self._error = error
        self._parameters = parameters or {}

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        return json.dumps(self._parameters)


class InferenceResponseSender:
    """How a decoupled model answers a request: any number of send(response), then one with
    flags=TRITONSERVER_RESPONSE_COMPLETE_FINAL (its response may be None). Usable from any
    thread, also after execute() returned."""

    def __init__(self, channel, execute, index):
        self._channel = channel
        self._execute = execute
        self._index = index
        self._closed = False

    def send(self, response=None, flags=0):
        if self._closed:
            raise TritonModelException("Unable to send response. Response sender has been closed.")
        if response is None and not flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL:
            raise TritonModelException("only the final send may leave out its response")
        if flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL:
            self._closed = True
        self._channel.send_response(self._execute, self._index, response, flags)

    def is_cancelled(self):
        """Whether the request's caller went away (cancelled its call, closed its connection, or
        passed its deadline): a model may stop sending then, as Triton's may."""
        return self._channel.is_cancelled(self._execute)


class InferenceRequest:
    """A request: one the model is given in execute(), or one it makes to run another model of
    the server (BLS) with exec()."""

    def __init__(self, model_name="", inputs=None, requested_output_names=None, request_id="",
                 correlation_id=0, model_version=-1, flags=0, timeout=0, parameters=None,
                 **_ignored):
        # Triton's constructor is typed (pybind11): strings where it takes strings.
        for argument, value in (("model_name", model_name), ("request_id", request_id)):
            if not isinstance(value, str):
                raise TypeError("InferenceRequest: %s must be a str, not %s"
                                % (argument, type(value).__name__))
        self._model_name = model_name
        self._inputs = list(inputs or [])
        self._requested_output_names = list(requested_output_names or [])
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._model_version = model_version
        self._flags = flags
        self._timeout = timeout
        self._parameters = parameters if isinstance(parameters, str) else json.dumps(
            parameters or {})
        self._sender = None
        self._execute = None  # set on the requests execute() is given

    def inputs(self):
        return self._inputs

    def request_id(self):
        return self._request_id

    def correlation_id(self):
        return self._correlation_id

    def requested_output_names(self):
        return self._requested_output_names

    def model_name(self):
        return self._model_name

    def model_version(self):
        return self._model_version

    def flags(self):
        return self._flags

    def timeout(self):
        return self._timeout

    def parameters(self):
        """The request's parameters as a JSON object (a string), as Triton gives them."""
        return self._parameters

    def is_cancelled(self):
        """Whether the caller of this request went away: it cancelled its call, closed its
        connection, or its deadline passed (Triton's request cancellation). A model that runs
        long may ask, and stop. Always False for a request the model made itself (BLS)."""
        if _channel is None or self._execute is None:
            return False
        return _channel.is_cancelled(self._execute)

    def get_response_sender(self):
        if self._sender is None:
            raise TritonModelException(
                "get_response_sender() is for decoupled models (model_transaction_policy "
                "{ decoupled: true })")
        return self._sender

    def exec(self, decoupled=False):
        """Runs this request on the server's model `model_name` (BLS) and waits for it: an
        InferenceResponse, or with decoupled=True an iterator that yields each response of a
        decoupled model's stream as it comes. Errors come back in the response (has_error())."""
        if _channel is None:
            raise TritonModelException("exec() needs the stub's connection to the server")
        return _channel.bls(self, decoupled)


class ModelConfig:
    """The configuration auto_complete_config(auto_complete_model_config) completes: the model's
    config as Triton's JSON; the model adds to it."""

    def __init__(self, model_config):
        self._config = json.loads(model_config) if isinstance(model_config, str) else model_config
        self._config.setdefault("input", [])
        self._config.setdefault("output", [])
        self._config.setdefault("max_batch_size", 0)

    def as_dict(self):
        return self._config

    def _name(self):
        return self._config.get("name", "")

    def set_max_batch_size(self, max_batch_size):
        if self._config["max_batch_size"] > max_batch_size:
            raise ValueError(
                "configuration specified max_batch_size %d, but in auto-complete-config function "
                "for model '%s' specified max_batch_size %d"
                % (self._config["max_batch_size"], self._name(), max_batch_size))
        self._config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self):
        for other in ("sequence_batching", "ensemble_scheduling"):
            if other in self._config:
                raise ValueError(
                    "Configuration specified scheduling_choice as '%s', but auto-complete-config "
                    "function for model '%s' tries to set scheduling_choice as "
                    "'dynamic_batching'" % (other, self._name()))
        self._config.setdefault("dynamic_batching", {})

    def _add(self, kind, tensor, allowed):
        for key in tensor:
            if key not in allowed:
                raise ValueError("%s '%s' in auto-complete-config function for model '%s' "
                                 "contains property other than %s"
                                 % (kind, tensor.get("name"), self._name(), ", ".join(allowed)))
        for key in ("name", "data_type", "dims"):
            if key not in tensor:
                raise ValueError("%s '%s' in auto-complete-config function for model '%s' is "
                                 "missing '%s' property." % (kind, tensor.get("name", ""),
                                                             self._name(), key))
        for current in self._config[kind]:
            if current.get("name") != tensor["name"]:
                continue
            given_type = current.get("data_type", "TYPE_INVALID")
            if given_type not in ("", "TYPE_INVALID") and given_type != tensor["data_type"]:
                raise ValueError("unable to load model '%s', configuration expects datatype %s "
                                 "for %s '%s', model provides %s"
                                 % (self._name(), given_type, kind, tensor["name"],
                                    tensor["data_type"]))
            if current.get("dims") and list(current["dims"]) != list(tensor["dims"]):
                raise ValueError("model '%s', tensor '%s': the model expects dims %s but the "
                                 "model configuration specifies dims %s"
                                 % (self._name(), tensor["name"], list(tensor["dims"]),
                                    list(current["dims"])))
            current["data_type"] = tensor["data_type"]
            current["dims"] = list(tensor["dims"])
            if "optional" in tensor:
                current["optional"] = tensor["optional"]
            return
        self._config[kind].append(dict(tensor, dims=list(tensor["dims"])))

    def add_input(self, input):  # noqa: A002 (Triton's parameter name)
        self._add("input", input, ("name", "data_type", "dims", "optional"))

    def add_output(self, output):
        self._add("output", output, ("name", "data_type", "dims"))

    def set_model_transaction_policy(self, transaction_policy_dict):
        for key in transaction_policy_dict:
            if key != "decoupled":
                raise ValueError("model transaction property in auto-complete-config function "
                                 "for model '%s' contains property other than 'decoupled'."
                                 % self._name())
        policy = self._config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            wanted = transaction_policy_dict["decoupled"]
            if "decoupled" in policy and policy["decoupled"] != wanted:
                raise ValueError("trying to change decoupled property in auto-complete-config "
                                 "for model '%s', which is already set to '%s'."
                                 % (self._name(), policy["decoupled"]))
            policy["decoupled"] = wanted


def get_input_tensor_by_name(inference_request, name):
    """The request's input of that name, or None."""
    for tensor in inference_request.inputs():
        if tensor.name() == name:
            return tensor
    return None


def get_output_tensor_by_name(inference_response, name):
    """The response's output of that name, or None."""
    for tensor in inference_response.output_tensors():
        if tensor.name() == name:
            return tensor
    return None


def get_input_config_by_name(model_config, name):
    """The input of that name of a config (a dict, as json.loads(args["model_config"])), or
    None."""
    for tensor in model_config.get("input", []):
        if tensor.get("name") == name:
            return tensor
    return None


def get_output_config_by_name(model_config, name):
    """The output of that name of a config (a dict), or None."""
    for tensor in model_config.get("output", []):
        if tensor.get("name") == name:
            return tensor
    return None


class Logger:
    """Log lines in the server's output (the stub's stderr is the server's), prefixed with the
    level and the model instance."""

    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3
    _NAMES = {INFO: "I", WARNING: "W", ERROR: "E", VERBOSE: "V"}
    prefix = ""

    @staticmethod
    def log(message, level=INFO):
        sys.stderr.write("%s %s%s\n" % (Logger._NAMES.get(level, "I"), Logger.prefix, message))
        sys.stderr.flush()

    @staticmethod
    def log_info(message):
        Logger.log(message, Logger.INFO)

    @staticmethod
    def log_warn(message):
        Logger.log(message, Logger.WARNING)

    @staticmethod
    def log_error(message):
        Logger.log(message, Logger.ERROR)

    @staticmethod
    def log_verbose(message):
        Logger.log(message, Logger.VERBOSE)


# The stub's connection to the server (sonic_python_stub.Channel), for exec() and send().
_channel = None


def set_channel(channel):
    global _channel
    _channel = channel


def wire_to_numpy(wire_type):
    """The numpy type of a KServe data type name ("FP32"), or None (BF16 has none)."""
    return _WIRE_TO_NUMPY.get(wire_type)


def numpy_to_wire(dtype):
    """The KServe data type name of a numpy dtype, or None."""
    code = numpy_to_triton_type(dtype)
    return _CODE_TO_WIRE.get(code)
