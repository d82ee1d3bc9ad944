"""sonic: inference as a service from Python, over sonic's C++ client.

    import numpy as np, sonic
    client = sonic.Client("grpc://127.0.0.1:8001")
    out = client.infer("identity_fp32", {"INPUT0": np.ones((1, 16), np.float32)})
    print(out["OUTPUT0"])

The same client as C++: its transports (grpc://, grpc+shm://, tcp://, tcp+zstd://), retries,
endpoint ejection, the CPU fallback and its statistics. Arrays pass without copies where they
are C-contiguous; the GIL is released while sonic waits and while it hands over large requests.
"""

import asyncio
import atexit
import json
import weakref

from . import _backends
from . import _sonic
from ._errors import *  # noqa: F401,F403 (the exception classes)
from ._errors import __all__ as _error_names
from ._types import (InferFuture, InferInput, InferRequestedOutput, InferResult,
                     StreamResponse)

__version__ = _sonic.__version__

_open_clients = weakref.WeakSet()


class Client(_sonic.Client):
    """A client of one or more endpoints ("grpc://host:port", or a list: requests balance over
    them, failing ones are ejected and retried elsewhere). Thread-safe: share one per process.

    Keyword options (durations in seconds), as ClientOptions in C++: timeout (per request;
    default none), max_in_flight (0: no limit; past it a request fails at once with
    sonic.ResourceExhausted), max_attempts (3), retry_on (["UNAVAILABLE"]), per_attempt_timeout,
    control_timeout (10), connect_timeout (3), compression (None, "gzip", "deflate"),
    zstd_level, adaptive_compression (True), headers ({name: value}), bearer_token (a str) or
    token_file (a path, read again when the file changes: sent as "authorization: Bearer
    TOKEN"), tls_ca_file, tls_cert_file, tls_key_file and tls_server_name (for grpcs:// and
    tcp+tls:// URLs: the authorities the server's certificate must chain to, default the
    system's; a client certificate and key for mutual TLS; the name the certificate must be
    for, default the URL's host) or, instead of the three files, tls_ca_pem, tls_cert_pem and
    tls_key_pem (the PEM text itself), validate_inputs (True), fallback_repository (a Triton model
    repository, or a list, whose models run in-process when no server can), fallback_threads
    (1; 0: the cores this process may use, its CPU affinity limited by its cgroup's quota),
    fallback_latency_budget, eject_after (3), cool_down (1), probe_interval (0.25),
    model_recheck (10), each_address (False: every address of a host name an endpoint),
    resolve_interval (30), max_addresses (64), discovery_interval (0: off), preferred ({model:
    [urls]}), balancing ("least_outstanding" or "power_of_two_choices"), pins ({model:
    {"version": v, "config_checksum": client.model_config_checksum(model)}}), batching
    ({model: True or {"max_batch": rows, "max_delay": seconds, "ragged":
    {"accumulated_count_input": name, "source_input": name}}}: concurrent requests merged
    before the wire), keepalive_interval (60) and keepalive_timeout (10), reconnect_backoff
    (0.1, doubling up to reconnect_backoff_max, 5), stream_window_bytes (16 MiB) and
    connection_window_bytes (256 MiB: HTTP/2 receive windows), http_connections (8 per
    http:// endpoint), max_message_bytes,
    shm_pool_bytes (1 GiB) and shm_min_region_bytes (64 KiB), share_connections (True),
    drive_blocking_calls (True: infer() reads its answer on the calling thread),
    network_threads, callback_threads (1: they run stream callbacks), log (a callable(level,
    message)). sonic.client_option_names() lists them.

    infer(model, inputs, outputs=None, timeout=None, *, version="", request_id="",
    parameters=None, headers=None) -> InferResult; `inputs` is {name: numpy array} or a list
    of sonic.InferInput, `outputs` a list of names or sonic.InferRequestedOutput. Raises
    sonic.Error subclasses: sonic.Unavailable, sonic.InvalidArgument, ...
    infer_chunked(model, inputs, ..., rows=0, target_chunk_bytes=2 MiB, max_in_flight=4) sends
    a large batch as chunks of rows and joins their outputs in order.
    """

    def __init__(self, url, **options):
        if "fallback_repository" in options:
            _backends.load_backends()
        super().__init__(url, **options)
        _open_clients.add(self)

    def stats(self):
        """This client's counters: requests, retries, fallbacks, failures by code, and per
        endpoint its load, failures and ejections."""
        return json.loads(self._stats_json())

    async def ainfer(self, model, inputs, outputs=None, timeout=None, **request):
        """infer() for asyncio: awaits the result without blocking the event loop. Cancelling
        the task cancels the request on the wire."""
        future, handle = self._ainfer_start(model, inputs, outputs, timeout, **request)
        try:
            return await future
        except asyncio.CancelledError:
            handle.cancel()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def client_option_names():
    """The keyword options Client accepts."""
    return list(_sonic.client_option_names())


@atexit.register
def _close_open_clients():
    # Before the interpreter goes: a client closed later could still owe callbacks that need it.
    for client in list(_open_clients):
        client.close()


__all__ = ["Client", "InferFuture", "InferInput", "InferRequestedOutput", "InferResult",
           "StreamResponse", "client_option_names"] + list(_error_names)
