"""Every datatype through sonic-server's identities, and the zero-copy promises."""

import numpy as np
import pytest

import sonic

NUMPY_TYPES = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32,
    "UINT64": np.uint64, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32,
    "INT64": np.int64, "FP16": np.float16, "FP32": np.float32, "FP64": np.float64,
}


@pytest.fixture(scope="module", params=["grpc", "tcp", "shm"])
def client(request, server):
    with sonic.Client(getattr(server, request.param)) as c:
        yield c


def values_of(numpy_type, shape):
    count = int(np.prod(shape))
    if numpy_type is np.bool_:
        return (np.arange(count) % 3 == 0).reshape(shape)
    if not np.issubdtype(numpy_type, np.integer):
        return (np.arange(count) / 4 - count // 2).astype(numpy_type).reshape(shape)
    values = ((np.arange(count, dtype=np.int64) - count // 2) * 37).astype(numpy_type)
    info = np.iinfo(numpy_type)
    values[0], values[-1] = info.min, info.max  # the extremes survive the trip
    return values.reshape(shape)


@pytest.mark.parametrize("datatype", sorted(NUMPY_TYPES))
def test_every_numeric_datatype_round_trips(client, datatype):
    sent = values_of(NUMPY_TYPES[datatype], (3, 5))
    result = client.infer("identity_" + datatype.lower(), {"INPUT0": sent})
    received = result["OUTPUT0"]
    assert received.dtype == sent.dtype
    assert received.shape == sent.shape
    np.testing.assert_array_equal(received, sent)


def test_bytes_from_bytes_and_str_come_back_as_bytes(client):
    sent = np.array([[b"", b"a\x00b", "caf\u00e9"], [b"x" * 1000, "z", b"\xff"]], dtype=object)
    received = client.infer("identity_bytes", {"INPUT0": sent})["OUTPUT0"]
    assert received.dtype == object and received.shape == (2, 3)
    expected = [[b"", b"a\x00b", "caf\u00e9".encode()], [b"x" * 1000, b"z", b"\xff"]]
    assert received.tolist() == expected


def test_fixed_width_string_arrays_are_bytes_tensors(client):
    received = client.infer("identity_bytes", {"INPUT0": np.array([["ab", "c"]])})["OUTPUT0"]
    assert received.tolist() == [[b"ab", b"c"]]
    received = client.infer("identity_bytes", {"INPUT0": np.array([[b"ab", b"c"]])})["OUTPUT0"]
    assert received.tolist() == [[b"ab", b"c"]]


def test_bf16_from_bit_patterns_and_from_float32(client):
    bits = np.array([[0x3f80, 0xc000, 0x7f80]], dtype=np.uint16)  # 1.0, -2.0, +inf
    as_bits = sonic.InferInput("INPUT0", [1, 3], "BF16").set_data_from_numpy(bits)
    received = client.infer("identity_bf16", [as_bits])["OUTPUT0"]
    assert received.dtype == np.uint16
    np.testing.assert_array_equal(received, bits)
    # float32 rounds to the nearest bfloat16 (a step of 2**-7 above 1), ties to even:
    # 1 + 2**-8 and 1 + 3 * 2**-8 are ties, 1 + 3 * 2**-9 is nearer the step above.
    floats = np.array([[1.0, -2.0, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 3 * 2.0 ** -9]],
                      dtype=np.float32)
    as_floats = sonic.InferInput("INPUT0", [1, 5], "BF16").set_data_from_numpy(floats)
    received = client.infer("identity_bf16", [as_floats])["OUTPUT0"]
    np.testing.assert_array_equal(
        received, np.array([[0x3f80, 0xc000, 0x3f80, 0x3f82, 0x3f81]], dtype=np.uint16))


def test_non_contiguous_and_big_endian_inputs_are_converted(client):
    matrix = np.arange(40, dtype=np.float32).reshape(5, 8)
    column_slice = matrix[:, ::2]
    assert not column_slice.flags.c_contiguous
    received = client.infer("identity_fp32", {"INPUT0": column_slice})["OUTPUT0"]
    np.testing.assert_array_equal(received, column_slice)
    big_endian = np.arange(6, dtype=">i4").reshape(2, 3)
    received = client.infer("identity_int32", {"INPUT0": big_endian})["OUTPUT0"]
    np.testing.assert_array_equal(received, big_endian)


def test_lists_are_arrays_too(client):
    received = client.infer("identity_int64", {"INPUT0": [[1, 2, 3]]})["OUTPUT0"]
    np.testing.assert_array_equal(received, [[1, 2, 3]])


def test_a_contiguous_input_is_sent_from_its_own_buffer():
    array = np.ones((4, 16), dtype=np.float32)
    addresses = sonic._sonic._input_addresses({"INPUT0": array})
    assert addresses["INPUT0"] == array.ctypes.data
    strided = np.ones((4, 32), dtype=np.float32)[:, ::2]
    addresses = sonic._sonic._input_addresses({"INPUT0": strided})
    assert addresses["INPUT0"] != strided.ctypes.data  # converted once, into a copy


def test_an_output_is_a_read_only_view_of_the_received_message(client):
    sent = np.arange(4096, dtype=np.float32).reshape(64, 64)
    result = client.infer("identity_fp32", {"INPUT0": sent})
    received = result["OUTPUT0"]
    assert not received.flags.owndata
    assert not received.flags.writeable
    assert type(received.base).__name__ == "PyCapsule"  # holds the message, not a copy
    with pytest.raises(ValueError):
        received[0, 0] = 1
    del result  # the array alone keeps the message alive
    np.testing.assert_array_equal(received, sent)


def test_outputs_and_attributes_of_a_result(server):
    with sonic.Client(server.grpc) as client:
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        b = np.ones((1, 16), dtype=np.int32)
        result = client.infer("simple", {"INPUT0": a, "INPUT1": b}, outputs=["OUTPUT1"],
                              request_id="event-17")
        assert list(result) == ["OUTPUT1"]
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
        assert result.as_numpy("OUTPUT0") is None
        assert result.request_id == "event-17"
        assert result.model_name == "simple"
        assert result.executed_on == "remote"
        assert result.timing["total"] > 0


def test_tritonclient_style_objects(server):
    with sonic.Client(server.grpc) as client:
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        inputs = [sonic.InferInput("INPUT0", [1, 16], "INT32").set_data_from_numpy(a),
                  sonic.InferInput("INPUT1", [1, 16], "INT32").set_data_from_numpy(a)]
        result = client.infer("simple", inputs, outputs=[sonic.InferRequestedOutput("OUTPUT0")])
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), 2 * a)
