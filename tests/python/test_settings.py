"""Triton's logging and trace extensions (LogSettings, TraceSetting) on sonic-server's gRPC and
HTTP ports, through sonic.tritonclient.grpc and .http, and through grpcio's stub, as Triton's
own QA drives them (qa/L0_logging, qa/L0_trace): the defaults tritonserver starts with, changes
that stick, a model's trace settings over the global ones, and Triton's words for what it
refuses (src/grpc/grpc_server.cc, the logging and trace handlers)."""

import grpc
import pytest

import sonic.tritonclient.grpc as grpcclient
import sonic.tritonclient.http as httpclient
from sonic.tritonclient.utils import InferenceServerException

from conftest import Server
from test_http import http_port, request

# What tritonserver answers before any change.
LOG_DEFAULTS = {"log_file": "", "log_info": True, "log_warning": True, "log_error": True,
                "log_verbose_level": 0, "log_format": "default"}
TRACE_DEFAULTS = {"trace_level": ["OFF"], "trace_rate": "1000", "trace_count": "-1",
                  "log_frequency": "0", "trace_file": "", "trace_mode": "triton"}


@pytest.fixture
def fresh():
    """A server of its own: settings changed by one test do not leak into another."""
    started = Server()
    yield started
    started.stop()


def grpc_log(settings):
    """A LogSettingsResponse as tritonclient's as_json=True gives it, as plain values."""
    return {k: next(iter(v.values())) for k, v in settings["settings"].items()}


def grpc_trace(settings):
    """A TraceSettingResponse as as_json=True gives it, in the REST answer's shape."""
    plain = {k: v.get("value", []) for k, v in settings["settings"].items()}
    return {k: v if k == "trace_level" else (v[0] if v else "") for k, v in plain.items()}


def test_log_settings_over_grpc(fresh, stubs):
    with grpcclient.InferenceServerClient(fresh.grpc[len("grpc://"):]) as client:
        assert grpc_log(client.get_log_settings(as_json=True)) == LOG_DEFAULTS
        changed = client.update_log_settings({"log_info": False, "log_verbose_level": 2,
                                              "log_format": "ISO8601"}, as_json=True)
        assert grpc_log(changed) == {**LOG_DEFAULTS, "log_info": False,
                                     "log_verbose_level": 2, "log_format": "ISO8601"}
        assert grpc_log(client.get_log_settings(as_json=True)) == grpc_log(changed)
        with pytest.raises(InferenceServerException) as refused:
            client.update_log_settings({"log_format": "json"})
        assert refused.value.status() == "StatusCode.INVALID_ARGUMENT"
        assert refused.value.message() == "invalid argument for log_format, got: json"
        with pytest.raises(InferenceServerException) as refused:
            client.update_log_settings({"log_file": "/tmp/x"})
        assert refused.value.status() == "StatusCode.UNIMPLEMENTED"
        assert refused.value.message() == (
            "log file location can not be updated through network protocol")
        # A refused change changes nothing, not even the valid settings beside it.
        with pytest.raises(InferenceServerException):
            client.update_log_settings({"log_error": False, "log_format": "json"})
        assert grpc_log(client.get_log_settings(as_json=True)) == grpc_log(changed)
    # A setting of the wrong type, which tritonclient never sends (it picks the type by name).
    pb2, pb2_grpc = stubs
    with grpc.insecure_channel(fresh.grpc[len("grpc://"):]) as channel:
        stub = pb2_grpc.GRPCInferenceServiceStub(channel)
        for name, kind, value, words in [
                ("log_info", "uint32_param", 1, "expect boolean for 'log_info'"),
                ("log_verbose_level", "string_param", "2", "expect int32 for 'log_verbose_level'"),
                ("log_format", "bool_param", True, "expect string for 'log_format'")]:
            request = pb2.LogSettingsRequest()
            setattr(request.settings[name], kind, value)
            with pytest.raises(grpc.RpcError) as refused:
                stub.LogSettings(request)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert refused.value.details() == words


def test_trace_settings_over_grpc(fresh, stubs):
    with grpcclient.InferenceServerClient(fresh.grpc[len("grpc://"):]) as client:
        assert grpc_trace(client.get_trace_settings(as_json=True)) == TRACE_DEFAULTS
        changed = client.update_trace_settings(
            settings={"trace_rate": "5", "trace_level": ["TIMESTAMPS", "TENSORS"]}, as_json=True)
        assert grpc_trace(changed)["trace_rate"] == "5"
        assert grpc_trace(changed)["trace_level"] == ["TIMESTAMPS", "TENSORS"]
        # A model's settings: the global ones, overridden by its own; cleared, the global again.
        model = client.update_trace_settings("simple", settings={"trace_count": "10"},
                                             as_json=True)
        assert grpc_trace(model)["trace_count"] == "10"
        assert grpc_trace(model)["trace_rate"] == "5"
        assert grpc_trace(client.get_trace_settings(as_json=True))["trace_count"] == "-1"
        cleared = client.update_trace_settings("simple", settings={"trace_count": None},
                                               as_json=True)
        assert grpc_trace(cleared)["trace_count"] == "-1"
        with pytest.raises(InferenceServerException) as unknown:
            client.get_trace_settings("no_such_model")
        assert unknown.value.status() == "StatusCode.INVALID_ARGUMENT"
        assert unknown.value.message() == "Request for unknown model : no_such_model"
    # The same through grpcio's own stub: the messages are Triton's.
    pb2, pb2_grpc = stubs
    with grpc.insecure_channel(fresh.grpc[len("grpc://"):]) as channel:
        stub = pb2_grpc.GRPCInferenceServiceStub(channel)
        request = pb2.TraceSettingRequest()
        request.settings["trace_level"].value.extend(["OFF", "TIMESTAMPS"])
        with pytest.raises(grpc.RpcError) as refused:
            stub.TraceSetting(request)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert refused.value.details() == "Expect only one trace level 'OFF' is specified"
        request = pb2.TraceSettingRequest()
        request.settings["trace_count"].value.append("-2")
        with pytest.raises(grpc.RpcError) as refused:
            stub.TraceSetting(request)
        assert "Unable to parse 'trace_count'" in refused.value.details()
        response = stub.LogSettings(pb2.LogSettingsRequest())
        assert response.settings["log_verbose_level"].uint32_param == 0


def test_settings_over_http(fresh):
    port = http_port(fresh)
    with httpclient.InferenceServerClient("127.0.0.1:%d" % port) as client:
        assert client.get_log_settings() == LOG_DEFAULTS
        assert client.update_log_settings({"log_warning": False})["log_warning"] is False
        assert client.get_trace_settings() == TRACE_DEFAULTS
        assert client.update_trace_settings("simple", {"trace_rate": "7"})["trace_rate"] == "7"
        assert client.get_trace_settings()["trace_rate"] == "1000"
    # Both ports keep the same settings.
    with grpcclient.InferenceServerClient(fresh.grpc[len("grpc://"):]) as client:
        assert grpc_log(client.get_log_settings(as_json=True))["log_warning"] is False
    status, _, body = request(port, "PUT", "/v2/logging")
    assert status == 405
    status, _, body = request(port, "POST", "/v2/logging", '{"log_info": [1]}')
    assert status == 400
