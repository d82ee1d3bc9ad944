"""Client plugins, as tritonclient's: a callable that may change each request's headers."""

import abc


class Request:
    """What a plugin sees of a request: `headers`, a dict it may change (never None)."""

    def __init__(self, headers):
        self.headers = dict(headers) if headers is not None else {}


class InferenceServerClientPlugin(abc.ABC):
    """Base of client plugins: __call__(request) runs before each call is sent."""

    @abc.abstractmethod
    def __call__(self, request):
        """Changes `request.headers` as the plugin needs."""
