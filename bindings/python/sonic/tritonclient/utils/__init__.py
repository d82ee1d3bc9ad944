"""tritonclient.utils for sonic: the exception every call raises, datatype conversions and the
serialisation of BYTES and BF16 tensors, with tritonclient's names and results."""

import struct

import numpy as np

__all__ = ["InferenceServerException", "raise_error", "serialized_byte_size",
           "np_to_triton_dtype", "triton_to_np_dtype", "serialize_byte_tensor",
           "deserialize_bytes_tensor", "serialize_bf16_tensor", "deserialize_bf16_tensor"]


class InferenceServerException(Exception):
    """A failed call, as tritonclient reports it: message(), status() and debug_details().

    status() is tritonclient's string for a gRPC status, str() of grpc.StatusCode
    ("StatusCode.UNAVAILABLE"), or None for a mistake found before anything was sent; str(e)
    is "[status] message" (tritonclient's utils/__init__.py).
    """

    def __init__(self, msg, status=None, debug_details=None):
        super().__init__(msg)
        self._msg = msg
        self._status = status
        self._debug_details = debug_details

    def __str__(self):
        text = super().__str__() if self._msg is None else self._msg
        return text if self._status is None else "[%s] %s" % (self._status, text)

    def message(self):
        """The error's message, or None."""
        return self._msg

    def status(self):
        """The gRPC status as "StatusCode.NAME", or None."""
        return self._status

    def debug_details(self):
        """More about the error, for debugging: sonic's code, message and reason."""
        return self._debug_details


def raise_error(msg):
    """Raises an InferenceServerException without a status (a mistake of the caller's)."""
    raise InferenceServerException(msg=msg) from None


def serialized_byte_size(tensor_value):
    """The bytes the elements of an object array hold, without their 4-byte lengths."""
    if tensor_value.dtype != np.object_:
        raise_error("The tensor_value dtype must be np.object_")
    return sum(len(item) for item in tensor_value.flat)


_TRITON_OF_NUMPY = {
    np.bool_: "BOOL", np.int8: "INT8", np.int16: "INT16", np.int32: "INT32", np.int64: "INT64",
    np.uint8: "UINT8", np.uint16: "UINT16", np.uint32: "UINT32", np.uint64: "UINT64",
    np.float16: "FP16", np.float32: "FP32", np.float64: "FP64",
}

# BF16 reads as float32 (numpy has no bfloat16) and BOOL as Python's bool, as in tritonclient.
_NUMPY_OF_TRITON = {
    "BOOL": bool, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "FP16": np.float16, "FP32": np.float32, "BF16": np.float32, "FP64": np.float64,
    "BYTES": np.object_,
}


def np_to_triton_dtype(np_dtype):
    """The KServe datatype of a numpy dtype ("FP32"), or None. Object and bytes ('S') arrays
    are BYTES; str ('U') arrays have none, as in tritonclient."""
    try:
        dtype = np.dtype(np_dtype)
    except TypeError:
        return None
    if dtype == np.object_ or dtype.type == np.bytes_:
        return "BYTES"
    return _TRITON_OF_NUMPY.get(dtype.type)


def triton_to_np_dtype(dtype):
    """The numpy type of a KServe datatype (np.float32 for "FP32" and "BF16"), or None."""
    return _NUMPY_OF_TRITON.get(dtype)


def _as_object_scalar(data):
    # tritonclient hands serialised tensors back as a 0-d object array holding one bytes
    # object: callers take .item(), or pass it whole to set_shared_memory_region().
    scalar = np.empty((), dtype=np.object_)
    scalar[()] = data
    return scalar


def serialize_byte_tensor(input_tensor):
    """A BYTES tensor (object or bytes array) as its wire bytes: each element a 4-byte
    little-endian length and its bytes, in row-major order, held by a 0-d object array
    (an empty 1-d one for an empty tensor). str elements are sent as UTF-8, other non-bytes
    objects as the UTF-8 of str(item)."""
    if input_tensor.size == 0:
        return np.empty([0], dtype=np.object_)
    if input_tensor.dtype != np.object_ and input_tensor.dtype.type != np.bytes_:
        raise_error("cannot serialize bytes tensor: invalid datatype")
    parts = []
    for item in _bytes_elements(input_tensor):
        parts.append(struct.pack("<I", len(item)))
        parts.append(item)
    return _as_object_scalar(b"".join(parts))


def _bytes_elements(array):
    """The elements of an object or bytes array as bytes, in row-major order. In an object
    array an element that is not exactly bytes is sent as the UTF-8 of str(element), as
    tritonclient sends it (str elements as their UTF-8, numbers as their decimal text)."""
    if array.dtype != np.object_:
        return [bytes(item) for item in array.flatten(order="C")]
    return [item if type(item) is bytes else str(item).encode("utf-8")
            for item in array.flatten(order="C")]


def deserialize_bytes_tensor(encoded_tensor):
    """Wire bytes of a BYTES tensor as a 1-d object array of bytes."""
    view = memoryview(encoded_tensor).cast("B")
    items = []
    at = 0
    while at < len(view):
        (length,) = struct.unpack_from("<I", view, at)
        at += 4
        items.append(bytes(view[at:at + length]))
        at += length
    return np.array(items, dtype=np.object_)


def serialize_bf16_tensor(input_tensor):
    """A float32 tensor as BF16 wire bytes, each value truncated to its upper 16 bits (as
    tritonclient converts, not rounded), held by a 0-d object array."""
    if input_tensor.size == 0:
        return np.empty([0], dtype=np.object_)
    if input_tensor.dtype != np.float32:
        raise_error("cannot serialize bf16 tensor: invalid datatype")
    return _as_object_scalar(_bf16_bits(input_tensor).tobytes())


def deserialize_bf16_tensor(encoded_tensor):
    """BF16 wire bytes as a 1-d float32 array."""
    bits = np.frombuffer(encoded_tensor, dtype="<u2")
    return _float32_of_bf16(bits)


def _bf16_bits(array):
    """The BF16 bit patterns (uint16) of a float32 array, truncated as tritonclient does."""
    words = np.ascontiguousarray(array, dtype="<f4").reshape(-1).view("<u4")
    return (words >> 16).astype("<u2").reshape(np.shape(array))


def _float32_of_bf16(bits):
    """float32 values of BF16 bit patterns (uint16), exactly."""
    return (np.asarray(bits).astype("<u4") << 16).view("<f4")
