"""tritonclient.grpc for sonic: InferenceServerClient, InferInput, InferRequestedOutput,
InferResult, KeepAliveOptions and the names of sonic.tritonclient.utils, as tritonclient.grpc
exports them.

    import sonic.tritonclient.grpc as grpcclient     # was: import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient("localhost:8001")
    inputs = [grpcclient.InferInput("INPUT0", [1, 16], "INT32")]
    inputs[0].set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
    result = client.infer("simple", inputs)
    result.as_numpy("OUTPUT0")

service_pb2, service_pb2_grpc and model_config_pb2 (Triton's protobuf messages and gRPC stub,
for code that speaks to the server through grpcio directly) are here too; they need the
protobuf and grpcio packages, as tritonclient's do, and are loaded only when asked for.
"""

import importlib

from .._plugin import InferenceServerClientPlugin
from ..utils import *  # noqa: F401,F403 (tritonclient.grpc exports tritonclient.utils' names)
from ..utils import __all__ as _utils_names
from ._client import (MAX_GRPC_MESSAGE_SIZE, CallContext, InferenceServerClient,
                      KeepAliveOptions)
from ._infer import InferInput, InferRequestedOutput, InferResult
from ._utils import get_cancelled_error, get_error_grpc, raise_error, raise_error_grpc

_PROTOBUF_MODULES = ("service_pb2", "service_pb2_grpc", "model_config_pb2")


def __getattr__(name):
    # The protobuf modules load on first use: `import sonic.tritonclient.grpc` needs neither
    # protobuf nor grpcio.
    if name in _PROTOBUF_MODULES:
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


__all__ = ["InferenceServerClient", "InferInput", "InferRequestedOutput", "InferResult",
           "KeepAliveOptions", "CallContext", "MAX_GRPC_MESSAGE_SIZE",
           "InferenceServerClientPlugin", "raise_error_grpc", "get_error_grpc",
           "get_cancelled_error"] + list(_utils_names)
