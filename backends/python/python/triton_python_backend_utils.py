"""triton_python_backend_utils as sonic's Python backend provides it: the names a Triton
model.py imports (`import triton_python_backend_utils as pb_utils`), with the behaviour Triton's
python_backend documents (its README.md, src/resources/triton_python_backend_utils.py and
src/pb_stub.cc). sonic's stub process (sonic_python_stub.py) imports it and connects it to the
server through set_channel(); a model never calls that. Its parts: sonic_pb_requests.py
(InferenceRequest, InferenceResponse, the response sender), sonic_pb_config.py (ModelConfig and
the config helpers), sonic_pb_metrics.py (MetricFamily, Metric), all imported here.

What this module leaves out: GPU tensors (everything is on the CPU, as under
model_instance_kind "CPU"), BLS tracing, load_model and unload_model."""

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
        # Triton's: py::arg("message").none(false), py::arg("code").none(false).
        if isinstance(message, bytes):
            message = message.decode("utf-8", errors="replace")
        if not isinstance(message, str):
            raise TypeError("TritonError: message must be a str, not %s"
                            % type(message).__name__)
        if code not in (TritonError.UNKNOWN, TritonError.INTERNAL, TritonError.NOT_FOUND,
                        TritonError.INVALID_ARG, TritonError.UNAVAILABLE,
                        TritonError.UNSUPPORTED, TritonError.ALREADY_EXISTS,
                        TritonError.CANCELLED) or isinstance(code, bool):
            raise TypeError("TritonError: code must be one of TritonError's codes, not %r"
                            % (code,))
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
        if isinstance(name, bytes):  # a std::string in Triton's: str or bytes
            name = name.decode("utf-8", errors="replace")
        if not isinstance(name, str):
            raise TypeError("Tensor: name must be a str, not %s" % type(name).__name__)
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

    def __dlpack__(self, stream=None):
        """DLPack's protocol (Triton's Tensor has it), so that torch.from_dlpack(tensor) and
        np.from_dlpack(tensor) take a Tensor itself."""
        return self.to_dlpack()

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0

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


class Logger:
    """Log lines in the server's output (the stub's stderr is the server's), prefixed with the
    level and the model instance."""

    class LogLevel:
        """Triton's levels (pb_stub.cc: py::enum_ LogLevel, exported onto Logger)."""

        INFO = 0
        WARNING = 1
        ERROR = 2
        VERBOSE = 3

    INFO = LogLevel.INFO
    WARNING = LogLevel.WARNING
    ERROR = LogLevel.ERROR
    VERBOSE = LogLevel.VERBOSE
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


def is_model_ready(model_name, model_version=""):
    """Whether the server's model `model_name` (at `model_version`, "" for its default
    version) is loaded and ready, as Triton's pb_utils.is_model_ready asks its server; answered
    while a request is under way."""
    if isinstance(model_name, bytes):
        model_name = model_name.decode("utf-8", errors="replace")
    if not isinstance(model_name, str) or not isinstance(model_version, str):
        raise TypeError("is_model_ready: model_name and model_version must be str")
    if _channel is None:
        raise TritonModelException("is_model_ready() needs the stub's connection to the server")
    return _channel.model_ready(model_name, model_version)


# The stub's connection to the server (sonic_stub_channel.Channel), for exec() and send().
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


# The rest of the module, in files of their own (each refers back to this one by name).
from sonic_pb_config import (ModelConfig, get_input_config_by_name,  # noqa: E402,F401
                             get_input_tensor_by_name, get_output_config_by_name,
                             get_output_tensor_by_name, using_decoupled_model_transaction_policy)
from sonic_pb_metrics import Metric, MetricFamily  # noqa: E402,F401
from sonic_pb_requests import (TRITONSERVER_MEMORY_CPU,  # noqa: E402,F401
                               TRITONSERVER_MEMORY_GPU, InferenceRequest, InferenceResponse,
                               InferenceResponseSender, InferenceTrace, PreferredMemory,
                               ResponseIterator)
