"""What the blocking and the asyncio tritonclient.http clients share: their connection (sonic
clients of http:// or https:// URLs), the control calls, and each request as sonic takes it.

Control calls send the protobuf request of the gRPC method that matches tritonclient.http's
REST call through sonic.Client.call(); sonic's http:// transport sends it to that call's REST
route and reads the answer back into the protobuf response, which is answered here as the JSON
Triton's HTTP frontend sends (http/_utils.rest_json()). Health calls answer True or False as
tritonclient.http does (a 200 or not).
"""

import base64

from ... import _errors
from .. import _messages
from .._connection import Connection, InferenceServerClientBase, control_limit
from .._requests import check_version, infer_arguments, load_request, metadata_headers
from ..utils import raise_error
from ._utils import (get_error_http, log_settings_json, raise_error_http, rest_json,
                     trace_settings_json)


def http_connection(url, ssl, settings, options):
    """The Connection of a tritonclient.http client of `url` ("host:port", as tritonclient's,
    or a list of them: sonic balances over them): `settings` are sonic's options made from the
    client's own arguments, `options` the caller's sonic options, which win."""
    urls = [url] if isinstance(url, str) else list(url)
    for each in urls:
        if each.startswith("http://") or each.startswith("https://"):
            raise_error("url should not include the scheme")
    scheme = "https://" if ssl else "http://"
    urls = [scheme + each.rstrip("/") for each in urls]
    settings = {"validate_inputs": False, **settings}  # the server checks requests, as Triton's
    settings.update(options)
    return Connection(urls[0] if len(urls) == 1 else urls, settings, get_error_http)


def compression(algorithm):
    """sonic's compression for tritonclient.http's request_compression_algorithm: "gzip" or
    "deflate"; anything else sends the body as it is, as tritonclient.http does."""
    return algorithm if algorithm in ("gzip", "deflate") else None


class ClientCalls(InferenceServerClientBase):
    """The calls of tritonclient.http's clients, synchronous: the asyncio client runs the
    control calls on a thread. Thread-safe."""

    def __init__(self, verbose, connection):
        super().__init__()
        self._verbose = verbose
        self._connection = connection

    def _control(self, method, request, headers, timeout=None):
        """Sends the control call `method` with `request` (a dict in protobuf's JSON mapping of
        its <method>Request); returns its <method>Response as a Message."""
        headers = metadata_headers(headers, self._plugin)
        client = self._connection.client(headers=headers, control_timeout=control_limit(timeout))
        request_type = "inference.%sRequest" % method
        if self._verbose:
            print("%s, headers %s\n%s" % (method, headers, request))
        try:
            answer = client.call(method, _messages.to_wire(request_type, request))
        except _errors.Error as failure:
            raise_error_http(failure)
        response = _messages.from_wire("inference.%sResponse" % method, answer)
        if self._verbose:
            print(response)
        return response

    _infer_arguments = staticmethod(infer_arguments)

    def _prepare_infer(self, call, headers, request_compression_algorithm, *request):
        """What an infer call (named `call` in verbose output) sends: the sonic client for its
        compression, its headers with the plugin's, and sonic's request arguments."""
        arguments = self._infer_arguments(*request)
        headers = metadata_headers(headers, self._plugin)
        client = self._connection.client(compression=compression(request_compression_algorithm))
        if self._verbose:
            print("{}, headers {}\n{}".format(call, headers, arguments))
        return client, headers, arguments

    # ---- Control calls ----

    def _is_server_live(self, headers):
        return self._control("ServerLive", {}, headers).live

    def _is_server_ready(self, headers):
        return self._control("ServerReady", {}, headers).ready

    def _is_model_ready(self, model_name, model_version, headers):
        check_version(model_version)
        return self._control("ModelReady", {"name": model_name, "version": model_version},
                             headers).ready

    def _get_server_metadata(self, headers):
        return rest_json(self._control("ServerMetadata", {}, headers))

    def _get_model_metadata(self, model_name, model_version, headers):
        check_version(model_version)
        return rest_json(self._control("ModelMetadata",
                                       {"name": model_name, "version": model_version}, headers))

    def _get_model_config(self, model_name, model_version, headers):
        check_version(model_version)
        # Triton's /config answers with the ModelConfig itself, not its gRPC wrapper.
        return rest_json(self._control("ModelConfig",
                                       {"name": model_name, "version": model_version},
                                       headers).config)

    def _get_model_repository_index(self, headers):
        # Triton's /v2/repository/index answers with the list itself.
        index = self._control("RepositoryIndex", {}, headers)
        return [rest_json(model, defaults=False) for model in index.models]

    def _load_model(self, model_name, headers, config, files):
        request = load_request(model_name, config, files)
        self._control("RepositoryModelLoad", request, headers)
        if self._verbose:
            print("Loaded model '{}'".format(model_name))

    def _unload_model(self, model_name, headers, unload_dependents):
        request = {"model_name": model_name}
        # Only true is sent: false is what a server assumes without it (see .grpc's).
        if unload_dependents:
            request["parameters"] = {"unload_dependents": {"bool_param": True}}
        self._control("RepositoryModelUnload", request, headers)
        if self._verbose:
            print("Unloaded model '{}'".format(model_name))

    def _get_inference_statistics(self, model_name, model_version, headers):
        check_version(model_version)
        return rest_json(self._control("ModelStatistics",
                                       {"name": model_name, "version": model_version}, headers))

    def _update_trace_settings(self, model_name, settings, headers):
        request = {"settings": {}}
        if model_name:
            request["model_name"] = model_name
        for key, value in settings.items():
            values = [] if value is None else (value if isinstance(value, list) else [value])
            request["settings"][key] = {"value": [str(item) for item in values]}
        return trace_settings_json(self._control("TraceSetting", request, headers))

    def _get_trace_settings(self, model_name, headers):
        request = {"model_name": model_name} if model_name else {}
        return trace_settings_json(self._control("TraceSetting", request, headers))

    def _update_log_settings(self, settings, headers):
        request = {"settings": {}}
        for key, value in settings.items():
            if value is None:
                request["settings"][key] = {}
            elif isinstance(value, bool):
                request["settings"][key] = {"bool_param": value}
            elif isinstance(value, int):
                request["settings"][key] = {"uint32_param": value}
            else:
                request["settings"][key] = {"string_param": str(value)}
        return log_settings_json(self._control("LogSettings", request, headers))

    def _get_log_settings(self, headers):
        return log_settings_json(self._control("LogSettings", {}, headers))

    def _get_system_shared_memory_status(self, region_name, headers):
        # Triton's /status answers with a list of the regions.
        status = self._control("SystemSharedMemoryStatus", {"name": region_name}, headers)
        return [rest_json(region) for region in status.regions.values()]

    def _register_system_shared_memory(self, name, key, byte_size, offset, headers):
        self._control("SystemSharedMemoryRegister", {"name": name, "key": key,
                                                     "offset": offset, "byte_size": byte_size},
                      headers)
        if self._verbose:
            print("Registered system shared memory with name '{}'".format(name))

    def _unregister_system_shared_memory(self, name, headers):
        self._control("SystemSharedMemoryUnregister", {"name": name}, headers)
        if self._verbose:
            print("Unregistered system shared memory with name '{}'".format(name))

    def _get_cuda_shared_memory_status(self, region_name, headers):
        status = self._control("CudaSharedMemoryStatus", {"name": region_name}, headers)
        return [rest_json(region) for region in status.regions.values()]

    def _register_cuda_shared_memory(self, name, raw_handle, device_id, byte_size, headers):
        # raw_handle is the cudaIpcMemHandle_t in base64, as tritonclient takes it.
        handle = base64.b64encode(base64.b64decode(raw_handle)).decode("ascii")
        self._control("CudaSharedMemoryRegister", {"name": name, "raw_handle": handle,
                                                   "device_id": device_id,
                                                   "byte_size": byte_size}, headers)
        if self._verbose:
            print("Registered cuda shared memory with name '{}'".format(name))

    def _unregister_cuda_shared_memory(self, name, headers):
        self._control("CudaSharedMemoryUnregister", {"name": name}, headers)
        if self._verbose:
            print("Unregistered cuda shared memory with name '{}'".format(name))


__all__ = ["ClientCalls", "http_connection", "compression", "get_error_http"]
