"""tritonclient.grpc.auth for sonic: BasicAuth, a plugin that sends HTTP basic credentials."""

import base64

from ..._plugin import InferenceServerClientPlugin

__all__ = ["BasicAuth"]


class BasicAuth(InferenceServerClientPlugin):
    """client.register_plugin(BasicAuth(username, password)): every call then sends
    "authorization: Basic base64(username:password)"."""

    def __init__(self, username, password):
        credentials = b":".join((username.encode("ascii"), password.encode("ascii")))
        self._value = "Basic " + base64.b64encode(credentials).decode("ascii")

    def __call__(self, request):
        request.headers["authorization"] = self._value
