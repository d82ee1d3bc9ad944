"""tritonclient.http.InferenceServerClient over sonic.Client and its http:// transport.

The client's arguments map onto sonic's options: url "host:port" (tritonclient's, without a
scheme) becomes http://host:port, or https:// with ssl=True; ssl_options' ca_certs, certfile
and keyfile become tls_ca_file, tls_cert_file and tls_key_file; concurrency is the number of
connections (http_connections), connection_timeout sonic's connect_timeout and network_timeout
the time limit of each call (timeout and control_timeout). Any other keyword argument is one of
sonic.Client's options (sonic.client_option_names()), such as max_attempts, timeout or
fallback_repository: sonic's retries, endpoint ejection and CPU fallback work underneath every
call. Inputs are not checked against the model's metadata before they are sent: the server
checks them, and its words come back, as with tritonclient.

query_params are accepted and not sent: sonic's transport makes each call's target itself.
"""

import concurrent.futures

from ... import _errors
from ..utils import raise_error
from ._calls import ClientCalls, http_connection
from ._infer import InferResult, request_body
from ._utils import get_error_http, raise_error_http

# ssl_options keys (ssl.wrap_socket's arguments) that sonic takes, and its option for each.
_SSL_OPTIONS = {"ca_certs": "tls_ca_file", "certfile": "tls_cert_file", "keyfile": "tls_key_file"}


def client_settings(ssl, ssl_options, concurrency, connection_timeout, network_timeout):
    """sonic's options for tritonclient.http's arguments of the same meaning."""
    settings = {"http_connections": max(1, int(concurrency))}
    if connection_timeout is not None:
        settings["connect_timeout"] = float(connection_timeout)
    if network_timeout is not None:
        settings["timeout"] = settings["control_timeout"] = float(network_timeout)
    if ssl:
        for key, value in (ssl_options or {}).items():
            if key in _SSL_OPTIONS and value is not None:
                settings[_SSL_OPTIONS[key]] = value
    return settings


class InferAsyncRequest:
    """What async_infer() returns: get_result() waits for the request's InferResult."""

    def __init__(self, future, outputs, verbose=False):
        self._future = future
        self._outputs = outputs
        self._verbose = verbose

    def get_result(self, block=True, timeout=None):
        """The request's InferResult: waits for it (at most `timeout` seconds, if given) unless
        block is False. Raises InferenceServerException for a failed request, and "failed to
        obtain inference response" (tritonclient's words) when it is not done in time."""
        try:
            result = self._future.result(timeout=timeout if block else 0)
        except concurrent.futures.TimeoutError:
            raise_error("failed to obtain inference response")
        except concurrent.futures.CancelledError:
            raise_error("failed to obtain inference response")
        except _errors.Error as failure:
            raise_error_http(failure)
        if self._verbose:
            print(result)
        return InferResult.from_sonic(result, self._outputs)


class InferenceServerClient(ClientCalls):
    """A client of an inference server over HTTP/REST, as tritonclient.http's:
    InferenceServerClient(url="localhost:8000", verbose=False, concurrency=1,
    connection_timeout=60.0, network_timeout=60.0, max_greenlets=None, ssl=False,
    ssl_options=None, ssl_context_factory=None, insecure=False, **sonic_options).

    Every call raises InferenceServerException on failure; its status() is the HTTP status
    ("400", "404", ...). Thread-safe (tritonclient's is not). max_greenlets has no counterpart
    (sonic's max_in_flight refuses past its limit rather than wait); ssl_context_factory is not
    supported (give the files in ssl_options, or sonic's tls_ca_pem...); insecure=True is not
    either: sonic checks the server's name (tls_server_name sets the name expected).
    sonic_options are sonic.Client's keyword options (max_attempts, fallback_repository, ...).
    """

    def __init__(self, url="localhost:8000", verbose=False, concurrency=1,
                 connection_timeout=60.0, network_timeout=60.0, max_greenlets=None, ssl=False,
                 ssl_options=None, ssl_context_factory=None, insecure=False, **sonic_options):
        self._connection = None
        if ssl and ssl_context_factory is not None:
            raise_error("ssl_context_factory: sonic does not take an SSLContext; pass "
                        "ssl_options={'ca_certs': ..., 'certfile': ..., 'keyfile': ...}, or "
                        "sonic's tls_ca_pem, tls_cert_pem and tls_key_pem")
        if ssl and insecure:
            raise_error("insecure: sonic always checks the server certificate's name; set "
                        "tls_server_name to the name it is for")
        settings = client_settings(ssl, ssl_options, concurrency, connection_timeout,
                                   network_timeout)
        super().__init__(verbose, http_connection(url, ssl, settings, sonic_options))

    def __enter__(self):
        return self

    def __exit__(self, type, value, traceback):
        self.close()

    def __del__(self):
        if getattr(self, "_connection", None) is not None:
            self.close()

    def close(self):
        """Closes the client: later calls fail."""
        if self._connection is not None:
            self._connection.close()

    # ---- Health and metadata ----

    def is_server_live(self, headers=None, query_params=None):
        """Whether the server is live."""
        return self._is_server_live(headers)

    def is_server_ready(self, headers=None, query_params=None):
        """Whether the server is ready."""
        return self._is_server_ready(headers)

    def is_model_ready(self, model_name, model_version="", headers=None, query_params=None):
        """Whether a model (version "": the server's choice) is ready."""
        return self._is_model_ready(model_name, model_version, headers)

    def get_server_metadata(self, headers=None, query_params=None):
        """The server's metadata: {"name", "version", "extensions"}."""
        return self._get_server_metadata(headers)

    def get_model_metadata(self, model_name, model_version="", headers=None, query_params=None):
        """A model's metadata: {"name", "versions", "platform", "inputs", "outputs"}."""
        return self._get_model_metadata(model_name, model_version, headers)

    def get_model_config(self, model_name, model_version="", headers=None, query_params=None):
        """A model's configuration, as Triton's JSON of its ModelConfig."""
        return self._get_model_config(model_name, model_version, headers)

    def get_model_repository_index(self, headers=None, query_params=None):
        """The repository's models: a list of {"name", "version", "state", "reason"}."""
        return self._get_model_repository_index(headers)

    def load_model(self, model_name, headers=None, query_params=None, config=None, files=None):
        """Loads or reloads a model, with a configuration (JSON) and model files
        ({"file:path": bytes}) if given."""
        self._load_model(model_name, headers, config, files)

    def unload_model(self, model_name, headers=None, query_params=None,
                     unload_dependents=False):
        """Unloads a model."""
        self._unload_model(model_name, headers, unload_dependents)

    def get_inference_statistics(self, model_name="", model_version="", headers=None,
                                 query_params=None):
        """{"model_stats": [...]} of a model, or of all models (model_name "")."""
        return self._get_inference_statistics(model_name, model_version, headers)

    def update_trace_settings(self, model_name=None, settings={}, headers=None,
                              query_params=None):
        """Updates trace settings (a value of None clears one); returns them."""
        return self._update_trace_settings(model_name, settings, headers)

    def get_trace_settings(self, model_name=None, headers=None, query_params=None):
        """The trace settings of a model, or the global ones."""
        return self._get_trace_settings(model_name, headers)

    def update_log_settings(self, settings, headers=None, query_params=None):
        """Updates the log settings; returns them."""
        return self._update_log_settings(settings, headers)

    def get_log_settings(self, headers=None, query_params=None):
        """The log settings."""
        return self._get_log_settings(headers)

    # ---- Shared memory ----

    def get_system_shared_memory_status(self, region_name="", headers=None, query_params=None):
        """The status of a region, or of all (""): a list of {"name", "key", "offset",
        "byte_size"}."""
        return self._get_system_shared_memory_status(region_name, headers)

    def register_system_shared_memory(self, name, key, byte_size, offset=0, headers=None,
                                      query_params=None):
        """Registers `byte_size` bytes at `offset` of the shared memory object `key` as the
        region `name`."""
        self._register_system_shared_memory(name, key, byte_size, offset, headers)

    def unregister_system_shared_memory(self, name="", headers=None, query_params=None):
        """Unregisters a region, or all of them ("")."""
        self._unregister_system_shared_memory(name, headers)

    def get_cuda_shared_memory_status(self, region_name="", headers=None, query_params=None):
        """The status of a CUDA region, or of all ("")."""
        return self._get_cuda_shared_memory_status(region_name, headers)

    def register_cuda_shared_memory(self, name, raw_handle, device_id, byte_size, headers=None,
                                    query_params=None):
        """Registers a CUDA IPC handle (raw_handle, in base64) as the region `name`."""
        self._register_cuda_shared_memory(name, raw_handle, device_id, byte_size, headers)

    def unregister_cuda_shared_memory(self, name="", headers=None, query_params=None):
        """Unregisters a CUDA region, or all of them ("")."""
        self._unregister_cuda_shared_memory(name, headers)

    # ---- Inference ----

    @staticmethod
    def generate_request_body(inputs, outputs=None, request_id="", sequence_id=0,
                              sequence_start=False, sequence_end=False, priority=0,
                              timeout=None, parameters=None):
        """The body tritonclient.http sends for such a request, and the length of its JSON
        part (None when the JSON is the whole body): (bytes, int or None)."""
        from .._requests import request_parameters
        return request_body(inputs, outputs, request_id, request_parameters(
            sequence_id, sequence_start, sequence_end, priority, timeout, parameters))

    @staticmethod
    def parse_response_body(response_body, verbose=False, header_length=None,
                            content_encoding=None):
        """The InferResult of an inference answer's body (its JSON's length in header_length
        when binary data follows it; content_encoding "gzip" or "deflate" if compressed)."""
        return InferResult.from_response_body(response_body, verbose, header_length,
                                              content_encoding)

    def infer(self, model_name, inputs, model_version="", outputs=None, request_id="",
              sequence_id=0, sequence_start=False, sequence_end=False, priority=0, timeout=None,
              headers=None, query_params=None, request_compression_algorithm=None,
              response_compression_algorithm=None, parameters=None):
        """Runs a request and returns its InferResult. `timeout` (microseconds) is the
        server's queue limit. The answer comes compressed as the request was
        (response_compression_algorithm has no separate effect)."""
        client, headers, arguments = self._prepare_infer(
            "infer", headers, request_compression_algorithm, model_name, inputs, model_version,
            outputs, request_id, sequence_id, sequence_start, sequence_end, priority, timeout,
            parameters)
        try:
            result = client.infer(headers=headers, **arguments)
        except _errors.Error as failure:
            raise_error_http(failure)
        return InferResult.from_sonic(result, outputs)

    def async_infer(self, model_name, inputs, model_version="", outputs=None, request_id="",
                    sequence_id=0, sequence_start=False, sequence_end=False, priority=0,
                    timeout=None, headers=None, query_params=None,
                    request_compression_algorithm=None, response_compression_algorithm=None,
                    parameters=None):
        """Sends a request; returns an InferAsyncRequest whose get_result() gives its
        InferResult. The inputs' arrays are sent from where they are when copy=False was
        given to set_data_from_numpy(): keep them until get_result() returned."""
        client, headers, arguments = self._prepare_infer(
            "async_infer", headers, request_compression_algorithm, model_name, inputs,
            model_version, outputs, request_id, sequence_id, sequence_start, sequence_end,
            priority, timeout, parameters)
        try:
            future = client.infer_async(headers=headers, **arguments)
        except _errors.Error as failure:
            raise_error_http(failure)
        future.add_done_callback(lambda done, client=client: None)  # holds the client
        if self._verbose:
            print("Sent request" + (" '{}'".format(request_id) if request_id else ""))
        return InferAsyncRequest(future, list(outputs) if outputs else None, self._verbose)


__all__ = ["InferenceServerClient", "InferAsyncRequest", "get_error_http"]
