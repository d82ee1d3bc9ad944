"""tritonclient.http.aio for sonic: InferenceServerClient with coroutines, and everything of
sonic.tritonclient.http (InferInput, InferRequestedOutput, InferResult, ...).

infer() awaits sonic.Client.ainfer() (no thread per request); control calls run on the event
loop's default executor, sonic releasing the GIL while it waits.
"""

from .... import _errors
from ...utils import raise_error
from .. import *  # noqa: F401,F403 (tritonclient.http.aio exports tritonclient.http's names)
from .. import __all__ as _http_names
from ..._connection import AioClient
from .._calls import ClientCalls, http_connection
from .._client import InferenceServerClient as _BlockingClient
from .._client import client_settings
from .._infer import InferResult
from .._utils import raise_error_http


class InferenceServerClient(AioClient, ClientCalls):
    """tritonclient.http.aio.InferenceServerClient: InferenceServerClient(url, verbose=False,
    conn_limit=100, conn_timeout=60.0, ssl=False, ssl_context=None, **sonic_options), every
    call a coroutine. conn_limit is the number of connections (sonic's http_connections),
    conn_timeout the time limit of each call; an ssl_context is not supported (give sonic's
    tls_ca_file, tls_cert_file and tls_key_file). For one event loop's thread."""

    def __init__(self, url, verbose=False, conn_limit=100, conn_timeout=60.0, ssl=False,
                 ssl_context=None, **sonic_options):
        self._connection = None
        if ssl and ssl_context is not None:
            raise_error("ssl_context: sonic does not take an SSLContext; pass sonic's "
                        "tls_ca_file, tls_cert_file and tls_key_file (or tls_..._pem)")
        settings = client_settings(ssl, None, conn_limit, None, conn_timeout)
        super().__init__(verbose, http_connection(url, ssl, settings, sonic_options))

    async def is_server_live(self, headers=None, query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.is_server_live."""
        return await self._off_loop(self._is_server_live, headers)

    async def is_server_ready(self, headers=None, query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.is_server_ready."""
        return await self._off_loop(self._is_server_ready, headers)

    async def is_model_ready(self, model_name, model_version="", headers=None,
                             query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.is_model_ready."""
        return await self._off_loop(self._is_model_ready, model_name, model_version, headers)

    async def get_server_metadata(self, headers=None, query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.get_server_metadata."""
        return await self._off_loop(self._get_server_metadata, headers)

    async def get_model_metadata(self, model_name, model_version="", headers=None,
                                 query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.get_model_metadata."""
        return await self._off_loop(self._get_model_metadata, model_name, model_version,
                                    headers)

    async def get_model_config(self, model_name, model_version="", headers=None,
                               query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.get_model_config."""
        return await self._off_loop(self._get_model_config, model_name, model_version, headers)

    async def get_model_repository_index(self, headers=None, query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.get_model_repository_index."""
        return await self._off_loop(self._get_model_repository_index, headers)

    async def load_model(self, model_name, headers=None, query_params=None, config=None,
                         files=None):
        """See sonic.tritonclient.http.InferenceServerClient.load_model."""
        await self._off_loop(self._load_model, model_name, headers, config, files)

    async def unload_model(self, model_name, headers=None, query_params=None,
                           unload_dependents=False):
        """See sonic.tritonclient.http.InferenceServerClient.unload_model."""
        await self._off_loop(self._unload_model, model_name, headers, unload_dependents)

    async def get_inference_statistics(self, model_name="", model_version="", headers=None,
                                       query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.get_inference_statistics."""
        return await self._off_loop(self._get_inference_statistics, model_name, model_version,
                                    headers)

    async def update_trace_settings(self, model_name=None, settings={}, headers=None,
                                    query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.update_trace_settings."""
        return await self._off_loop(self._update_trace_settings, model_name, settings, headers)

    async def get_trace_settings(self, model_name=None, headers=None, query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.get_trace_settings."""
        return await self._off_loop(self._get_trace_settings, model_name, headers)

    async def update_log_settings(self, settings, headers=None, query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.update_log_settings."""
        return await self._off_loop(self._update_log_settings, settings, headers)

    async def get_log_settings(self, headers=None, query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.get_log_settings."""
        return await self._off_loop(self._get_log_settings, headers)

    async def get_system_shared_memory_status(self, region_name="", headers=None,
                                              query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.get_system_shared_memory_status."""
        return await self._off_loop(self._get_system_shared_memory_status, region_name,
                                    headers)

    async def register_system_shared_memory(self, name, key, byte_size, offset=0,
                                            headers=None, query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.register_system_shared_memory."""
        await self._off_loop(self._register_system_shared_memory, name, key, byte_size, offset,
                             headers)

    async def unregister_system_shared_memory(self, name="", headers=None, query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.unregister_system_shared_memory."""
        await self._off_loop(self._unregister_system_shared_memory, name, headers)

    async def get_cuda_shared_memory_status(self, region_name="", headers=None,
                                            query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.get_cuda_shared_memory_status."""
        return await self._off_loop(self._get_cuda_shared_memory_status, region_name, headers)

    async def register_cuda_shared_memory(self, name, raw_handle, device_id, byte_size,
                                          headers=None, query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.register_cuda_shared_memory."""
        await self._off_loop(self._register_cuda_shared_memory, name, raw_handle, device_id,
                             byte_size, headers)

    async def unregister_cuda_shared_memory(self, name="", headers=None, query_params=None):
        """See sonic.tritonclient.http.InferenceServerClient.unregister_cuda_shared_memory."""
        await self._off_loop(self._unregister_cuda_shared_memory, name, headers)

    generate_request_body = staticmethod(_BlockingClient.generate_request_body)
    parse_response_body = staticmethod(_BlockingClient.parse_response_body)

    async def infer(self, model_name, inputs, model_version="", outputs=None, request_id="",
                    sequence_id=0, sequence_start=False, sequence_end=False, priority=0,
                    timeout=None, headers=None, query_params=None,
                    request_compression_algorithm=None, response_compression_algorithm=None,
                    parameters=None):
        """See sonic.tritonclient.http.InferenceServerClient.infer. Cancelling the awaiting
        task cancels the request."""
        client, headers, arguments = self._prepare_infer(
            "infer", headers, request_compression_algorithm, model_name, inputs, model_version,
            outputs, request_id, sequence_id, sequence_start, sequence_end, priority, timeout,
            parameters)
        try:
            result = await client.ainfer(headers=headers, **arguments)
        except _errors.Error as failure:
            raise_error_http(failure)
        return InferResult.from_sonic(result, outputs)


__all__ = ["InferenceServerClient"] + [name for name in _http_names
                                       if name != "InferenceServerClient"]
