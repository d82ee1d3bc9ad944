"""tritonclient.grpc.InferenceServerClient over sonic.Client.

Over 500 lines: every method of the class, in one class as tritonclient has it.

The client's arguments map onto sonic's options: url "host:port" (tritonclient's, without a
scheme) becomes grpc://host:port, or grpcs:// with ssl=True (root_certificates, private_key and
certificate_chain are tls_ca_file, tls_key_file and tls_cert_file); KeepAliveOptions and the
keepalive channel arguments become keepalive_interval and keepalive_timeout (other channel
arguments tune gRPC's C core, which sonic does not use: they are ignored). Any other keyword
argument is one of sonic.Client's options (sonic.client_option_names()), such as max_attempts,
timeout or fallback_repository: sonic's retries, endpoint ejection and CPU fallback work
underneath every call. Unlike sonic.Client, inputs are not checked against the model's
metadata before they are sent (validate_inputs=False): the server checks them, and its words
come back, as with tritonclient.

Control calls (health, metadata, configuration, statistics, repository, shared memory, trace
and log settings) send the protobuf requests tritonclient sends, through sonic.Client.call(),
and answer with plain objects that have the response message's attributes, or with
as_json=True the dicts tritonclient gives (json of MessageToJson with
preserving_proto_field_name=True).
"""

import base64
import struct
import sys

from ... import _errors
from .. import _messages
from .._connection import Connection, InferenceServerClientBase, control_limit
from .._requests import infer_arguments, load_request
from ..utils import raise_error
from ._infer import InferResult
from ._stream import InferStream
from ._utils import (check_version, get_cancelled_error, get_error_grpc, metadata_headers,
                     raise_error_grpc)

# tritonclient's limit of a gRPC message (grpc/_client.py): INT32_MAX.
INT32_MAX = 2 ** (struct.Struct("i").size * 8 - 1) - 1
MAX_GRPC_MESSAGE_SIZE = INT32_MAX


class KeepAliveOptions:
    """gRPC keepalive settings, as tritonclient takes them: keepalive_time_ms (INT32_MAX: no
    pings) and keepalive_timeout_ms map onto sonic's keepalive_interval and keepalive_timeout;
    keepalive_permit_without_calls and http2_max_pings_without_data have no counterpart (sonic
    pings only while calls wait for answers)."""

    def __init__(self, keepalive_time_ms=INT32_MAX, keepalive_timeout_ms=20000,
                 keepalive_permit_without_calls=False, http2_max_pings_without_data=2):
        self.keepalive_time_ms = keepalive_time_ms
        self.keepalive_timeout_ms = keepalive_timeout_ms
        self.keepalive_permit_without_calls = keepalive_permit_without_calls
        self.http2_max_pings_without_data = http2_max_pings_without_data


class CallContext:
    """What async_infer() returns: cancel() cancels the request, on the wire too; its callback
    then gets a CANCELLED error."""

    def __init__(self, future):
        self._future = future

    def cancel(self):
        """Cancels the request if it has not completed."""
        return self._future.cancel()


def _compression(algorithm):
    """sonic's compression for tritonclient's compression_algorithm (grpc/_utils.py): None,
    "deflate" or "gzip" in any case; anything else is reported and ignored, as there."""
    if algorithm is None:
        return None
    if algorithm.lower() in ("deflate", "gzip"):
        return algorithm.lower()
    print("The provided client-side compression algorithm is not supported... "
          "using no compression")
    return None


def grpc_connection(url, ssl, root_certificates, private_key, certificate_chain, creds,
                    keepalive_options, channel_args, options):
    """The Connection of a gRPC InferenceServerClient: tritonclient's arguments as sonic's."""
    if creds is not None:
        raise_error("creds: sonic does not take grpc.ChannelCredentials; pass ssl=True with "
                    "root_certificates, private_key and certificate_chain (files), or "
                    "sonic's tls_ca_pem, tls_cert_pem and tls_key_pem")
    if "://" not in url:
        url = ("grpcs://" if ssl else "grpc://") + url
    settings = {"validate_inputs": False}  # the server checks requests, as with Triton
    if ssl:
        for name, path in (("tls_ca_file", root_certificates), ("tls_key_file", private_key),
                           ("tls_cert_file", certificate_chain)):
            if path is not None:
                settings[name] = path
    settings.update(_keepalive_settings(keepalive_options, channel_args))
    settings.update(options)
    return Connection(url, settings, get_error_grpc)


def _keepalive_settings(keepalive_options, channel_args):
    """sonic's keepalive options for tritonclient's KeepAliveOptions, or for the keepalive
    channel arguments when channel_args is given (tritonclient then ignores
    keepalive_options). tritonclient's default, a ping every INT32_MAX ms, leaves sonic's."""
    if channel_args is not None:
        given = dict(channel_args)
        time_ms = given.get("grpc.keepalive_time_ms", INT32_MAX)
        timeout_ms = given.get("grpc.keepalive_timeout_ms")
        settings = {}
        if "grpc.ssl_target_name_override" in given:
            settings["tls_server_name"] = given["grpc.ssl_target_name_override"]
    else:
        options = keepalive_options or KeepAliveOptions()
        time_ms, timeout_ms = options.keepalive_time_ms, options.keepalive_timeout_ms
        settings = {}
    if time_ms < INT32_MAX:
        settings["keepalive_interval"] = time_ms / 1000.0
        if timeout_ms is not None:
            settings["keepalive_timeout"] = timeout_ms / 1000.0
    return settings


class ClientCalls(InferenceServerClientBase):
    """What the blocking and the asyncio clients share: their connection, and each call's
    request as sonic takes it."""

    def __init__(self, url, verbose, ssl, root_certificates, private_key, certificate_chain,
                 creds, keepalive_options, channel_args, options):
        super().__init__()
        self._verbose = verbose
        self._connection = None
        self._connection = grpc_connection(url, ssl, root_certificates, private_key,
                                           certificate_chain, creds, keepalive_options,
                                           channel_args, options)

    def _control(self, method, request, headers, client_timeout, as_json=False):
        """Sends the control call `method` with `request` (a dict in protobuf's JSON mapping of
        its <method>Request); returns its <method>Response as a Message, or as tritonclient's
        JSON dict with as_json."""
        headers = metadata_headers(headers, self._plugin)
        client = self._connection.client(headers=headers,
                                         control_timeout=control_limit(client_timeout))
        request_type = "inference.%sRequest" % method
        response_type = "inference.%sResponse" % method
        if self._verbose:
            print("%s, metadata %s\n%s" % (method, headers or (),
                                           _messages.from_json(request_type, request)))
        try:
            answer = client.call(method, _messages.to_wire(request_type, request))
        except _errors.Error as failure:
            raise_error_grpc(failure)
        document = _messages.wire_to_json(response_type, answer)
        if as_json and not self._verbose:
            return document
        response = _messages.from_json(response_type, document)
        if self._verbose:
            print(response)
        return document if as_json else response

    _infer_arguments = staticmethod(infer_arguments)

    def _prepare_infer(self, call, headers, compression_algorithm, *request):
        """What an infer call (named `call` in verbose output) sends: the sonic client for its
        compression, its headers with the plugin's, and sonic's request arguments, made from
        `request` (_infer_arguments' arguments)."""
        arguments = self._infer_arguments(*request)
        headers = metadata_headers(headers, self._plugin)
        client = self._connection.client(compression=_compression(compression_algorithm))
        if self._verbose:
            print("{}, metadata {}\n{}".format(call, headers or (), arguments))
        return client, headers, arguments

    # ---- Control calls, synchronous: the asyncio client runs them on a thread. ----

    def _is_server_live(self, headers, client_timeout):
        return self._control("ServerLive", {}, headers, client_timeout).live

    def _is_server_ready(self, headers, client_timeout):
        return self._control("ServerReady", {}, headers, client_timeout).ready

    def _is_model_ready(self, model_name, model_version, headers, client_timeout):
        check_version(model_version)
        return self._control("ModelReady", {"name": model_name, "version": model_version},
                             headers, client_timeout).ready

    def _get_server_metadata(self, headers, as_json, client_timeout):
        return self._control("ServerMetadata", {}, headers, client_timeout, as_json)

    def _get_model_metadata(self, model_name, model_version, headers, as_json, client_timeout):
        check_version(model_version)
        return self._control("ModelMetadata", {"name": model_name, "version": model_version},
                             headers, client_timeout, as_json)

    def _get_model_config(self, model_name, model_version, headers, as_json, client_timeout):
        check_version(model_version)
        return self._control("ModelConfig", {"name": model_name, "version": model_version},
                             headers, client_timeout, as_json)

    def _get_model_repository_index(self, headers, as_json, client_timeout):
        return self._control("RepositoryIndex", {}, headers, client_timeout, as_json)

    def _load_model(self, model_name, headers, config, files, client_timeout):
        request = load_request(model_name, config, files)
        self._control("RepositoryModelLoad", request, headers, client_timeout)
        if self._verbose:
            print("Loaded model '{}'".format(model_name))

    def _unload_model(self, model_name, headers, unload_dependents, client_timeout):
        # As tritonclient: unload_dependents is sent with every unload, true or false.
        request = {"model_name": model_name,
                   "parameters": {"unload_dependents": {"bool_param": bool(unload_dependents)}}}
        self._control("RepositoryModelUnload", request, headers, client_timeout)
        if self._verbose:
            print("Unloaded model '{}'".format(model_name))

    def _get_inference_statistics(self, model_name, model_version, headers, as_json,
                                  client_timeout):
        check_version(model_version)
        return self._control("ModelStatistics", {"name": model_name, "version": model_version},
                             headers, client_timeout, as_json)

    def _update_trace_settings(self, model_name, settings, headers, as_json, client_timeout):
        request = {"settings": {}}
        if model_name:
            request["model_name"] = model_name
        for key, value in settings.items():
            # None clears a setting: an entry without values.
            values = [] if value is None else (value if isinstance(value, list) else [value])
            request["settings"][key] = {"value": [str(item) for item in values]}
        return self._control("TraceSetting", request, headers, client_timeout, as_json)

    def _get_trace_settings(self, model_name, headers, as_json, client_timeout):
        request = {"model_name": model_name} if model_name else {}
        return self._control("TraceSetting", request, headers, client_timeout, as_json)

    def _update_log_settings(self, settings, headers, as_json, client_timeout):
        request = {"settings": {}}
        for key, value in settings.items():
            if value is None:
                request["settings"][key] = {}
            elif key in ("log_file", "log_format"):
                request["settings"][key] = {"string_param": value}
            elif key == "log_verbose_level":
                request["settings"][key] = {"uint32_param": value}
            else:
                request["settings"][key] = {"bool_param": value}
        return self._control("LogSettings", request, headers, client_timeout, as_json)

    def _get_log_settings(self, headers, as_json, client_timeout):
        return self._control("LogSettings", {}, headers, client_timeout, as_json)

    def _get_system_shared_memory_status(self, region_name, headers, as_json, client_timeout):
        return self._control("SystemSharedMemoryStatus", {"name": region_name}, headers,
                             client_timeout, as_json)

    def _register_system_shared_memory(self, name, key, byte_size, offset, headers,
                                       client_timeout):
        self._control("SystemSharedMemoryRegister", {"name": name, "key": key,
                                                     "offset": offset, "byte_size": byte_size},
                      headers, client_timeout)
        if self._verbose:
            print("Registered system shared memory with name '{}'".format(name))

    def _unregister_system_shared_memory(self, name, headers, client_timeout):
        self._control("SystemSharedMemoryUnregister", {"name": name}, headers, client_timeout)

    def _get_cuda_shared_memory_status(self, region_name, headers, as_json, client_timeout):
        return self._control("CudaSharedMemoryStatus", {"name": region_name}, headers,
                             client_timeout, as_json)

    def _register_cuda_shared_memory(self, name, raw_handle, device_id, byte_size, headers,
                                     client_timeout):
        # raw_handle is the cudaIpcMemHandle_t in base64, as tritonclient takes it.
        handle = base64.b64encode(base64.b64decode(raw_handle)).decode("ascii")
        self._control("CudaSharedMemoryRegister", {"name": name, "raw_handle": handle,
                                                   "device_id": device_id,
                                                   "byte_size": byte_size},
                      headers, client_timeout)

    def _unregister_cuda_shared_memory(self, name, headers, client_timeout):
        self._control("CudaSharedMemoryUnregister", {"name": name}, headers, client_timeout)


class InferenceServerClient(ClientCalls):
    """A client of an inference server over gRPC, as tritonclient.grpc's:
    InferenceServerClient(url="localhost:8001", verbose=False, ssl=False,
    root_certificates=None, private_key=None, certificate_chain=None, creds=None,
    keepalive_options=None, channel_args=None, **sonic_options).

    Thread-safe except start_stream(), async_stream_infer() and stop_stream(), as
    tritonclient's. Every call raises InferenceServerException on failure; its status() is
    "StatusCode.<gRPC code>". creds (a grpc.ChannelCredentials) is not supported: give the
    certificate files. sonic_options are sonic.Client's keyword options (max_attempts,
    fallback_repository, timeout, ...).
    """

    def __init__(self, url, verbose=False, ssl=False, root_certificates=None, private_key=None,
                 certificate_chain=None, creds=None, keepalive_options=None, channel_args=None,
                 **sonic_options):
        self._stream = None
        super().__init__(url, verbose, ssl, root_certificates, private_key, certificate_chain,
                         creds, keepalive_options, channel_args, sonic_options)

    def __enter__(self):
        return self

    def __exit__(self, type, value, traceback):
        self.close()

    def __del__(self):
        if getattr(self, "_connection", None) is not None:
            self.close()

    def close(self):
        """Stops the stream, if any, and closes the client: later calls fail."""
        self.stop_stream()
        if self._connection is not None:
            self._connection.close()

    # ---- Health and metadata ----

    def is_server_live(self, headers=None, client_timeout=sys.maxsize):
        """Whether the server is live."""
        return self._is_server_live(headers, client_timeout)

    def is_server_ready(self, headers=None, client_timeout=sys.maxsize):
        """Whether the server is ready."""
        return self._is_server_ready(headers, client_timeout)

    def is_model_ready(self, model_name, model_version="", headers=None,
                       client_timeout=sys.maxsize):
        """Whether a model (version "": the server's choice) is ready."""
        return self._is_model_ready(model_name, model_version, headers, client_timeout)

    def get_server_metadata(self, headers=None, as_json=False, client_timeout=sys.maxsize):
        """The ServerMetadataResponse (name, version, extensions)."""
        return self._get_server_metadata(headers, as_json, client_timeout)

    def get_model_metadata(self, model_name, model_version="", headers=None, as_json=False,
                           client_timeout=sys.maxsize):
        """The ModelMetadataResponse (name, versions, platform, inputs, outputs)."""
        return self._get_model_metadata(model_name, model_version, headers, as_json,
                                        client_timeout)

    def get_model_config(self, model_name, model_version="", headers=None, as_json=False,
                         client_timeout=sys.maxsize):
        """The ModelConfigResponse (its `config` is the model's ModelConfig)."""
        return self._get_model_config(model_name, model_version, headers, as_json,
                                      client_timeout)

    def get_model_repository_index(self, headers=None, as_json=False,
                                   client_timeout=sys.maxsize):
        """The RepositoryIndexResponse (models: name, version, state, reason)."""
        return self._get_model_repository_index(headers, as_json, client_timeout)

    def load_model(self, model_name, headers=None, config=None, files=None,
                   client_timeout=sys.maxsize):
        """Loads or reloads a model, with a configuration (JSON) and model files
        ({"file:path": bytes}) if given."""
        self._load_model(model_name, headers, config, files, client_timeout)

    def unload_model(self, model_name, headers=None, unload_dependents=False,
                     client_timeout=sys.maxsize):
        """Unloads a model."""
        self._unload_model(model_name, headers, unload_dependents, client_timeout)

    def get_inference_statistics(self, model_name="", model_version="", headers=None,
                                 as_json=False, client_timeout=sys.maxsize):
        """The ModelStatisticsResponse of a model, or of all models (model_name "")."""
        return self._get_inference_statistics(model_name, model_version, headers, as_json,
                                              client_timeout)

    def update_trace_settings(self, model_name=None, settings={}, headers=None, as_json=False,
                              client_timeout=sys.maxsize):
        """Updates trace settings (a value of None clears one); returns the
        TraceSettingResponse."""
        return self._update_trace_settings(model_name, settings, headers, as_json,
                                           client_timeout)

    def get_trace_settings(self, model_name=None, headers=None, as_json=False,
                           client_timeout=sys.maxsize):
        """The TraceSettingResponse of a model, or the global one."""
        return self._get_trace_settings(model_name, headers, as_json, client_timeout)

    def update_log_settings(self, settings, headers=None, as_json=False,
                            client_timeout=sys.maxsize):
        """Updates the log settings; returns the LogSettingsResponse."""
        return self._update_log_settings(settings, headers, as_json, client_timeout)

    def get_log_settings(self, headers=None, as_json=False, client_timeout=sys.maxsize):
        """The LogSettingsResponse."""
        return self._get_log_settings(headers, as_json, client_timeout)

    # ---- Shared memory ----

    def get_system_shared_memory_status(self, region_name="", headers=None, as_json=False,
                                        client_timeout=sys.maxsize):
        """The SystemSharedMemoryStatusResponse of a region, or of all ("")."""
        return self._get_system_shared_memory_status(region_name, headers, as_json,
                                                     client_timeout)

    def register_system_shared_memory(self, name, key, byte_size, offset=0, headers=None,
                                      client_timeout=sys.maxsize):
        """Registers `byte_size` bytes at `offset` of the shared memory object `key` as the
        region `name`."""
        self._register_system_shared_memory(name, key, byte_size, offset, headers,
                                            client_timeout)

    def unregister_system_shared_memory(self, name="", headers=None,
                                        client_timeout=sys.maxsize):
        """Unregisters a region, or all of them ("")."""
        self._unregister_system_shared_memory(name, headers, client_timeout)

    def get_cuda_shared_memory_status(self, region_name="", headers=None, as_json=False,
                                      client_timeout=sys.maxsize):
        """The CudaSharedMemoryStatusResponse of a region, or of all ("")."""
        return self._get_cuda_shared_memory_status(region_name, headers, as_json,
                                                   client_timeout)

    def register_cuda_shared_memory(self, name, raw_handle, device_id, byte_size, headers=None,
                                    client_timeout=sys.maxsize):
        """Registers a CUDA IPC handle (raw_handle, in base64) as the region `name`."""
        self._register_cuda_shared_memory(name, raw_handle, device_id, byte_size, headers,
                                          client_timeout)

    def unregister_cuda_shared_memory(self, name="", headers=None, client_timeout=sys.maxsize):
        """Unregisters a CUDA region, or all of them ("")."""
        self._unregister_cuda_shared_memory(name, headers, client_timeout)

    # ---- Inference ----

    def infer(self, model_name, inputs, model_version="", outputs=None, request_id="",
              sequence_id=0, sequence_start=False, sequence_end=False, priority=0, timeout=None,
              client_timeout=None, headers=None, compression_algorithm=None, parameters=None):
        """Runs a request and returns its InferResult. `timeout` (microseconds) is the
        server's queue limit; client_timeout (seconds) bounds the whole call
        (InferenceServerException "Deadline Exceeded" past it)."""
        client, headers, arguments = self._prepare_infer(
            "infer", headers, compression_algorithm, model_name, inputs, model_version, outputs,
            request_id, sequence_id, sequence_start, sequence_end, priority, timeout, parameters)
        try:
            result = client.infer(timeout=client_timeout, headers=headers, **arguments)
        except _errors.Error as failure:
            raise_error_grpc(failure)
        return InferResult(result)

    def async_infer(self, model_name, inputs, callback, model_version="", outputs=None,
                    request_id="", sequence_id=0, sequence_start=False, sequence_end=False,
                    priority=0, timeout=None, client_timeout=None, headers=None,
                    compression_algorithm=None, parameters=None):
        """Sends a request; callback(result=InferResult, error=None) or callback(result=None,
        error=InferenceServerException) runs once when it completes, on sonic's callback
        thread. Returns a CallContext whose cancel() cancels it."""
        client, headers, arguments = self._prepare_infer(
            "async_infer", headers, compression_algorithm, model_name, inputs, model_version, outputs,
            request_id, sequence_id, sequence_start, sequence_end, priority, timeout, parameters)
        try:
            future = client.infer_async(timeout=client_timeout, headers=headers, **arguments)
        except _errors.Error as failure:
            raise_error_grpc(failure)

        def done(completed, client=client):  # holds the client until the request is done
            result = error = None
            if completed.cancelled():
                error = get_cancelled_error()
            elif completed.exception() is not None:
                error = get_error_grpc(completed.exception())
            else:
                result = InferResult(completed.result())
            callback(result=result, error=error)

        future.add_done_callback(done)
        return CallContext(future)

    def start_stream(self, callback, stream_timeout=None, headers=None,
                     compression_algorithm=None):
        """Opens the client's stream (one at a time): the responses to async_stream_infer()
        go to callback(result=..., error=...), and so does how the stream failed, if it
        does. stream_timeout (seconds) bounds the stream's life."""
        if self._stream is not None:
            raise_error("cannot start another stream with one already running. "
                        "'InferenceServerClient' supports only a single active stream at a "
                        "given time.")
        headers = metadata_headers(headers, self._plugin)
        client = self._connection.client(compression=_compression(compression_algorithm),
                                         headers=headers)
        self._stream = InferStream(client, callback, stream_timeout, self._verbose)

    def stop_stream(self, cancel_requests=False):
        """Ends the stream: waits for the answers to the requests sent on it, or with
        cancel_requests drops them and ends it now."""
        if self._stream is not None:
            self._stream.close(cancel_requests)
        self._stream = None

    def async_stream_infer(self, model_name, inputs, model_version="", outputs=None,
                           request_id="", sequence_id=0, sequence_start=False,
                           sequence_end=False, enable_empty_final_response=False, priority=0,
                           timeout=None, parameters=None):
        """Sends a request on the stream of start_stream(); its responses go to the stream's
        callback. The inputs are copied: their arrays are free again when this returns."""
        if self._stream is None:
            raise_error("stream not available, use start_stream() to make one available.")
        arguments = self._infer_arguments(model_name, inputs, model_version, outputs,
                                          request_id, sequence_id, sequence_start, sequence_end,
                                          priority, timeout, parameters,
                                          enable_empty_final_response)
        if self._verbose:
            print("async_stream_infer\n{}".format(arguments))
        self._stream.send(**arguments)
