"""What the gRPC and the HTTP clients of sonic.tritonclient share: the sonic clients that carry
their calls, plugins, and the control calls' time limits."""

import asyncio
import collections
import functools
import sys
import threading

from .. import Client as _SonicClient
from .. import _errors
from .utils import raise_error

# The most different header sets (or compressions, or control timeouts) whose clients are kept;
# they share the first client's connection, so one more costs a little memory, not a socket.
_MAX_VARIANTS = 16


class InferenceServerClientBase:
    """Plugins, as tritonclient's clients have them: one callable that sees each call's
    headers before it is sent (tritonclient.grpc.auth.BasicAuth, say)."""

    def __init__(self):
        self._plugin = None

    def register_plugin(self, plugin):
        """Registers a plugin; raises InferenceServerException if one is registered."""
        if self._plugin is not None:
            raise_error("A plugin is already registered. Please unregister the previous "
                        "plugin first before registering a new plugin.")
        self._plugin = plugin

    def plugin(self):
        """The registered plugin, or None."""
        return self._plugin

    def unregister_plugin(self):
        """Unregisters the plugin; raises InferenceServerException if none is registered."""
        if self._plugin is None:
            raise_error("No plugin has been registered.")
        self._plugin = None


class AioClient:
    """What the asyncio clients (.grpc.aio, .http.aio) share over their blocking twin's calls:
    each runs on the loop's default executor, so the loop never waits on the network."""

    async def __aenter__(self):
        return self

    async def __aexit__(self, type, value, traceback):
        await self.close()

    async def close(self):
        """Closes the client: requests in flight end CANCELLED, later calls fail."""
        await self._off_loop(self._connection.close)

    async def _off_loop(self, call, *arguments):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(call, *arguments))


def control_limit(client_timeout):
    """sonic's control_timeout for a control call's client_timeout (seconds; tritonclient's
    default, sys.maxsize or None, leaves the client's own)."""
    if client_timeout is None or client_timeout >= sys.maxsize:
        return None
    return client_timeout


class Connection:
    """The sonic clients of one InferenceServerClient: the first, made from `url` and
    `settings` (sonic.Client's options), and variants of it for calls that need other
    client-wide settings (a control call's headers or time limit, a compression, a stream's
    headers). Variants share the first's connection, so that what one call registers (shared
    memory regions) is there for the others. `error_of` turns a sonic.Error into the
    protocol's InferenceServerException. Thread-safe."""

    def __init__(self, url, settings, error_of):
        self._url = url
        self._settings = settings
        self._error_of = error_of
        self._lock = threading.Lock()
        self._variants = collections.OrderedDict()
        try:
            self._first = _SonicClient(url, **settings)
        except _errors.Error as failure:
            raise error_of(failure) from None

    def client(self, compression=None, headers=None, control_timeout=None):
        """The sonic client for calls with these client-wide settings."""
        key = (compression, tuple(sorted(headers.items())) if headers else None, control_timeout)
        if key == (None, None, None):
            return self._first
        with self._lock:
            client = self._variants.get(key)
            if client is not None:
                self._variants.move_to_end(key)
                return client
        settings = dict(self._settings)
        if compression is not None:
            settings["compression"] = compression
        if headers:
            settings["headers"] = {**settings.get("headers", {}), **headers}
        if control_timeout is not None:
            settings["control_timeout"] = control_timeout
        try:
            client = _SonicClient(self._url, **settings)
        except _errors.Error as failure:
            raise self._error_of(failure) from None
        with self._lock:
            self._variants[key] = client
            # A variant dropped here closes once the calls that hold it are done.
            while len(self._variants) > _MAX_VARIANTS:
                self._variants.popitem(last=False)
        return client

    def close(self):
        with self._lock:
            variants = list(self._variants.values())
            self._variants.clear()
        for client in variants:
            client.close()
        self._first.close()
