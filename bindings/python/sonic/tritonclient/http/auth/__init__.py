"""tritonclient.http.auth for sonic: BasicAuth, a plugin that sends HTTP basic credentials
(the same plugin as sonic.tritonclient.grpc.auth's)."""

from ...grpc.auth import BasicAuth

__all__ = ["BasicAuth"]
