"""Triton's example models for python_server.py: simple_string, simple_identity,
simple_sequence and repeat_int32, as Triton's example clients expect them, and BYTES tensors
in Triton's serialisation (each element a 4-byte little-endian length, then its bytes).

repeat_int32 is decoupled, as Triton's repeat backend: for INT32 IN and UINT32 DELAY of the
same shape [n] and UINT32 WAIT [1], n responses, the i'th after DELAY[i] ms, with OUT = [IN[i]]
and IDX = [i]; WAIT is when Triton releases the request, and does not change the responses.

simple_sequence follows Triton's sequence batcher: a request needs a non-zero or non-empty
`sequence_id`; the first of a sequence says `sequence_start` (its answer is its input plus
one), the last `sequence_end`; a request of a sequence that has not started is
INVALID_ARGUMENT with Triton's words.
"""

import struct
import threading
import time

import grpc
import numpy as np

from status_error import StatusError


def decode_bytes(data, count):
    """`count` serialised BYTES elements -> list of bytes; None when malformed."""
    items, at = [], 0
    for _ in range(count):
        if len(data) - at < 4:
            return None
        (n,) = struct.unpack_from("<I", data, at)
        at += 4
        if len(data) - at < n:
            return None
        items.append(bytes(data[at:at + n]))
        at += n
    return items if at == len(data) else None


def encode_bytes(items):
    return b"".join(struct.pack("<I", len(x)) + x for x in items)


def simple_string(tensors, params):
    def ints(name):
        try:
            return [int(x.decode("ascii")) for x in tensors[name].ravel()]
        except (UnicodeDecodeError, ValueError):
            raise StatusError(grpc.StatusCode.INVALID_ARGUMENT,
                             "%s holds a string that is not a decimal integer" % name)

    a, b = ints("INPUT0"), ints("INPUT1")

    def wrap(v):
        return (v + 2**31) % 2**32 - 2**31  # int32 arithmetic, as simple's

    out = {}
    for name, values in (("OUTPUT0", [wrap(x + y) for x, y in zip(a, b)]),
                         ("OUTPUT1", [wrap(x - y) for x, y in zip(a, b)])):
        arr = np.empty(len(values), dtype=object)
        arr[:] = [str(v).encode("ascii") for v in values]
        out[name] = arr.reshape(tensors["INPUT0"].shape)
    return out


def simple_identity(tensors, params):
    return {"OUTPUT0": tensors["INPUT0"]}


class SequenceModel:
    """simple_sequence as Triton publishes it: OUTPUT = (INPUT + START) * READY (server
    qa/common/gen_qa_sequence_models.py, the ONNX sequence model), the sequence batcher giving
    START = 1 on a sequence's first request and READY = 1 on each."""

    def __init__(self):
        self.lock = threading.Lock()
        self.started = set()

    def __call__(self, tensors, params):
        def flag(name):
            p = params.get(name)
            return (p is not None and p.WhichOneof("parameter_choice") == "bool_param"
                    and p.bool_param)

        p = params.get("sequence_id")
        key = None
        if p is not None and p.WhichOneof("parameter_choice") == "int64_param" \
                and p.int64_param != 0:
            key = ("i", p.int64_param)
        elif p is not None and p.WhichOneof("parameter_choice") == "string_param" \
                and p.string_param:
            key = ("s", p.string_param)
        if key is None:
            raise StatusError(grpc.StatusCode.INVALID_ARGUMENT,
                             "inference request to model 'simple_sequence' must specify "
                             "a non-zero or non-empty correlation ID")
        value = int(tensors["INPUT"].ravel()[0])
        start = flag("sequence_start")
        with self.lock:
            if start:
                self.started.add(key)
            elif key not in self.started:
                raise StatusError(grpc.StatusCode.INVALID_ARGUMENT,
                                 "inference request for sequence %s to model "
                                 "'simple_sequence' must specify the START flag on the "
                                 "first request of the sequence" % (key[1],))
            if flag("sequence_end"):
                self.started.discard(key)
        total = (value + int(start) + 2**31) % 2**32 - 2**31  # READY is 1
        return {"OUTPUT": np.array([[total]], dtype="<i4")}


def repeat_int32(tensors, params):
    """A generator of responses (dicts of outputs), as the repeat backend sends them."""
    values, delays = tensors["IN"].ravel(), tensors["DELAY"].ravel()
    if tensors["IN"].shape != tensors["DELAY"].shape:
        raise StatusError(grpc.StatusCode.INVALID_ARGUMENT,
                          "expected IN and DELAY shape to match")

    def responses():
        for i, (value, delay) in enumerate(zip(values, delays)):
            time.sleep(int(delay) / 1000.0)
            yield {"OUT": np.array([value], dtype="<i4"),
                   "IDX": np.array([i], dtype="<u4")}
    return responses()
