"""tritonclient.grpc.aio for sonic: InferenceServerClient with coroutines, and everything of
sonic.tritonclient.grpc (InferInput, InferRequestedOutput, InferResult, ...).

infer() awaits sonic.Client.ainfer() (no thread per request); control calls run on the event
loop's default executor, sonic releasing the GIL while it waits. stream_infer() reads requests
from an async iterator of dicts and yields (result, error) pairs; a stream that fails ends the
iteration by raising InferenceServerException with the stream's status (tritonclient lets the
gRPC library's AioRpcError through there).
"""

import asyncio
import threading

from .... import _errors
from ...utils import InferenceServerException, raise_error
from .. import *  # noqa: F401,F403 (tritonclient.grpc.aio exports tritonclient.grpc's names)
from .. import __all__ as _grpc_names
from ..._connection import AioClient
from .._client import ClientCalls, KeepAliveOptions, _compression
from .._infer import InferResult
from .._utils import get_error_grpc, metadata_headers, raise_error_grpc


class InferenceServerClient(AioClient, ClientCalls):
    """tritonclient.grpc.InferenceServerClient for asyncio: the same arguments (and sonic's
    options), every call a coroutine but stream_infer(). For one event loop's thread."""

    def __init__(self, url, verbose=False, ssl=False, root_certificates=None, private_key=None,
                 certificate_chain=None, creds=None, keepalive_options=None, channel_args=None,
                 **sonic_options):
        super().__init__(url, verbose, ssl, root_certificates, private_key, certificate_chain,
                         creds, keepalive_options, channel_args, sonic_options)

    async def is_server_live(self, headers=None, client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.is_server_live."""
        return await self._off_loop(self._is_server_live, headers, client_timeout)

    async def is_server_ready(self, headers=None, client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.is_server_ready."""
        return await self._off_loop(self._is_server_ready, headers, client_timeout)

    async def is_model_ready(self, model_name, model_version="", headers=None,
                             client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.is_model_ready."""
        return await self._off_loop(self._is_model_ready, model_name, model_version, headers,
                                    client_timeout)

    async def get_server_metadata(self, headers=None, as_json=False, client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.get_server_metadata."""
        return await self._off_loop(self._get_server_metadata, headers, as_json, client_timeout)

    async def get_model_metadata(self, model_name, model_version="", headers=None,
                                 as_json=False, client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.get_model_metadata."""
        return await self._off_loop(self._get_model_metadata, model_name, model_version,
                                    headers, as_json, client_timeout)

    async def get_model_config(self, model_name, model_version="", headers=None, as_json=False,
                               client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.get_model_config."""
        return await self._off_loop(self._get_model_config, model_name, model_version, headers,
                                    as_json, client_timeout)

    async def get_model_repository_index(self, headers=None, as_json=False,
                                         client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.get_model_repository_index."""
        return await self._off_loop(self._get_model_repository_index, headers, as_json,
                                    client_timeout)

    async def load_model(self, model_name, headers=None, config=None, files=None,
                         client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.load_model."""
        await self._off_loop(self._load_model, model_name, headers, config, files,
                             client_timeout)

    async def unload_model(self, model_name, headers=None, unload_dependents=False,
                           client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.unload_model."""
        await self._off_loop(self._unload_model, model_name, headers, unload_dependents,
                             client_timeout)

    async def get_inference_statistics(self, model_name="", model_version="", headers=None,
                                       as_json=False, client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.get_inference_statistics."""
        return await self._off_loop(self._get_inference_statistics, model_name, model_version,
                                    headers, as_json, client_timeout)

    async def update_trace_settings(self, model_name=None, settings={}, headers=None,
                                    as_json=False, client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.update_trace_settings."""
        return await self._off_loop(self._update_trace_settings, model_name, settings, headers,
                                    as_json, client_timeout)

    async def get_trace_settings(self, model_name=None, headers=None, as_json=False,
                                 client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.get_trace_settings."""
        return await self._off_loop(self._get_trace_settings, model_name, headers, as_json,
                                    client_timeout)

    async def update_log_settings(self, settings, headers=None, as_json=False,
                                  client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.update_log_settings."""
        return await self._off_loop(self._update_log_settings, settings, headers, as_json,
                                    client_timeout)

    async def get_log_settings(self, headers=None, as_json=False, client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.get_log_settings."""
        return await self._off_loop(self._get_log_settings, headers, as_json, client_timeout)

    async def get_system_shared_memory_status(self, region_name="", headers=None,
                                              as_json=False, client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.get_system_shared_memory_status."""
        return await self._off_loop(self._get_system_shared_memory_status, region_name,
                                    headers, as_json, client_timeout)

    async def register_system_shared_memory(self, name, key, byte_size, offset=0,
                                            headers=None, client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.register_system_shared_memory."""
        await self._off_loop(self._register_system_shared_memory, name, key, byte_size, offset,
                             headers, client_timeout)

    async def unregister_system_shared_memory(self, name="", headers=None,
                                              client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.unregister_system_shared_memory."""
        await self._off_loop(self._unregister_system_shared_memory, name, headers,
                             client_timeout)

    async def get_cuda_shared_memory_status(self, region_name="", headers=None, as_json=False,
                                            client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.get_cuda_shared_memory_status."""
        return await self._off_loop(self._get_cuda_shared_memory_status, region_name, headers,
                                    as_json, client_timeout)

    async def register_cuda_shared_memory(self, name, raw_handle, device_id, byte_size,
                                          headers=None, client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.register_cuda_shared_memory."""
        await self._off_loop(self._register_cuda_shared_memory, name, raw_handle, device_id,
                             byte_size, headers, client_timeout)

    async def unregister_cuda_shared_memory(self, name="", headers=None, client_timeout=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.unregister_cuda_shared_memory."""
        await self._off_loop(self._unregister_cuda_shared_memory, name, headers, client_timeout)

    async def infer(self, model_name, inputs, model_version="", outputs=None, request_id="",
                    sequence_id=0, sequence_start=False, sequence_end=False, priority=0,
                    timeout=None, client_timeout=None, headers=None, compression_algorithm=None,
                    parameters=None):
        """See sonic.tritonclient.grpc.InferenceServerClient.infer. Cancelling the awaiting
        task cancels the request on the wire."""
        client, headers, arguments = self._prepare_infer(
            "infer", headers, compression_algorithm, model_name, inputs, model_version, outputs,
            request_id, sequence_id, sequence_start, sequence_end, priority, timeout, parameters)
        try:
            result = await client.ainfer(timeout=client_timeout, headers=headers, **arguments)
        except _errors.Error as failure:
            raise_error_grpc(failure)
        return InferResult(result)

    def stream_infer(self, inputs_iterator, stream_timeout=None, headers=None,
                     compression_algorithm=None):
        """Runs a stream: sends the requests `inputs_iterator` (an async iterator) yields, each
        a dict of async_stream_infer()'s arguments (model_name and inputs at least), and
        returns an async iterator of (InferResult, None) or (None, InferenceServerException)
        per response; its cancel() ends the stream. Call it from a coroutine."""
        headers = metadata_headers(headers, self._plugin)
        client = self._connection.client(compression=_compression(compression_algorithm),
                                         headers=headers)
        return _ResponseIterator(self, client, inputs_iterator, stream_timeout)


_END = object()  # the stream ended well


class _ResponseIterator:
    """The responses of stream_infer(), handed from sonic's callback thread to the event loop."""

    def __init__(self, owner, client, inputs_iterator, stream_timeout):
        self._owner = owner
        self._client = client  # kept: the stream's client lives as long as the stream
        self._verbose = owner._verbose
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self._cancelled = False
        try:
            self._stream = client.open_stream(self._on_response, timeout=stream_timeout)
        except _errors.Error as failure:
            raise get_error_grpc(failure) from None
        self._sender = self._loop.create_task(self._send_all(inputs_iterator))
        threading.Thread(target=self._watch, name="sonic-tritonclient-aio-stream",
                         daemon=True).start()

    def __aiter__(self):
        return self

    async def __anext__(self):
        item = await self._queue.get()
        if item is _END or isinstance(item, Exception):
            self._queue.put_nowait(_END)  # later calls end the iteration too
            if item is _END:
                raise StopAsyncIteration
            raise item
        return item

    def cancel(self):
        """Ends the stream now: responses not yet received are dropped."""
        self._cancelled = True
        self._sender.cancel()
        self._stream.cancel()
        return True

    def _post(self, item):
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:
            pass  # the event loop is closed: nobody is waiting

    def _on_response(self, response):  # on sonic's callback thread
        if self._verbose:
            print(response)
        if response.error is not None:
            # As tritonclient: a failed request on a stream that goes on, without status.
            self._post((None, InferenceServerException(msg=response.error.message)))
        else:
            self._post((InferResult(response.result), None))

    def _watch(self):
        try:
            self._stream.wait()
        except _errors.Error as failure:
            if not self._cancelled:
                self._post(get_error_grpc(failure))
        self._post(_END)

    async def _send_all(self, inputs_iterator):
        try:
            async for inputs in inputs_iterator:
                self._stream.send(**self._arguments(inputs))
        except asyncio.CancelledError:
            raise
        except Exception as failure:  # the iterator's, or a request sonic refused
            self._post(get_error_grpc(failure))
            self._cancelled = True
            self._stream.cancel()
            return
        self._stream.close()

    def _arguments(self, inputs):
        # The checks and defaults of tritonclient's aio stream_infer().
        if type(inputs) != dict:  # noqa: E721
            raise_error("inputs_iterator is not yielding a dict")
        if "model_name" not in inputs or "inputs" not in inputs:
            raise_error("model_name and/or inputs is missing from inputs_iterator's yielded dict")
        if type(inputs.get("model_version", "")) != str:  # noqa: E721
            raise_error("model_version must be a string")
        return self._owner._infer_arguments(
            inputs["model_name"], inputs["inputs"], inputs.get("model_version", ""),
            inputs.get("outputs"), inputs.get("request_id", ""), inputs.get("sequence_id", 0),
            inputs.get("sequence_start", False), inputs.get("sequence_end", False),
            inputs.get("priority", 0), inputs.get("timeout"), inputs.get("parameters"),
            inputs.get("enable_empty_final_response", False))


__all__ = ["InferenceServerClient", "KeepAliveOptions"] + [
    name for name in _grpc_names if name not in ("InferenceServerClient",)]
