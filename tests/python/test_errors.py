"""Failures arrive as sonic.Error subclasses carrying the status code and the server's words."""

import numpy as np
import pytest

import sonic


def test_every_code_has_its_class():
    for code in sonic.StatusCode:
        if code == sonic.StatusCode.OK:
            continue
        error = sonic._errors.error_for_code(int(code), "why", "REASON")
        assert isinstance(error, sonic.Error)
        assert error.code == code
        assert type(error).__name__.upper() == code.name.replace("_", "")
        assert str(error) == code.name + ": why" and error.reason == "REASON"


def test_a_server_refusal_is_its_code(server):
    with sonic.Client(server.grpc, validate_inputs=False) as client:
        with pytest.raises(sonic.InvalidArgument) as refused:
            client.infer("identity_fp32", {"INPUT0": np.ones((1, 4), np.int32)})
        assert refused.value.code == sonic.StatusCode.INVALID_ARGUMENT
        assert "INPUT0" in refused.value.message
        with pytest.raises(sonic.NotFound):
            client.infer("no_such_model", {"INPUT0": np.ones((1, 4), np.float32)})


def test_a_client_side_check_fails_before_sending(server):
    with sonic.Client(server.grpc) as client:
        with pytest.raises(sonic.InvalidArgument, match="FP32"):
            client.infer("identity_fp32", {"INPUT0": np.ones((1, 4), np.float64)})


def test_an_absent_server_is_unavailable(dead_url):
    with sonic.Client(dead_url, max_attempts=1, connect_timeout=1) as client:
        with pytest.raises(sonic.Unavailable) as failure:
            client.infer("identity_fp32", {"INPUT0": np.ones((1, 4), np.float32)})
        assert isinstance(failure.value, ConnectionError)


def test_a_deadline_is_deadline_exceeded(silent_url):
    with sonic.Client(silent_url, validate_inputs=False) as client:
        with pytest.raises(sonic.DeadlineExceeded) as late:
            client.infer("identity_fp32", {"INPUT0": np.ones((1, 4), np.float32)}, timeout=0.05)
        assert isinstance(late.value, TimeoutError)


def test_bad_arguments_are_python_errors(server):
    with pytest.raises(TypeError, match="no_such_option"):
        sonic.Client(server.grpc, no_such_option=1)
    with pytest.raises(sonic.InvalidArgument):
        sonic.Client("ftp://127.0.0.1:1")
    with pytest.raises(sonic.InvalidArgument):
        sonic.Client(server.grpc, compression="lz4")
    with sonic.Client(server.grpc) as client:
        with pytest.raises(sonic.InvalidArgument, match="no KServe datatype"):
            client.infer("identity_fp32", {"INPUT0": np.ones(2, np.complex64)})
        with pytest.raises(TypeError):
            client.infer("identity_fp32", "INPUT0")
        with pytest.raises(sonic.InvalidArgument, match="declared FP32"):
            client.infer("identity_fp32",
                         [sonic.InferInput("INPUT0", [2], "FP32").set_data_from_numpy(
                             np.ones(2, np.int8))])
    client.close()
    with pytest.raises(sonic.FailedPrecondition, match="closed"):
        client.infer("identity_fp32", {"INPUT0": np.ones((1, 2), np.float32)})
