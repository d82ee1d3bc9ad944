"""tritonclient.http for sonic: InferenceServerClient, InferInput, InferRequestedOutput,
InferResult, InferAsyncRequest and the names of sonic.tritonclient.utils, as tritonclient.http
exports them, over sonic's http:// transport (KServe v2 REST with binary tensor data).

    import sonic.tritonclient.http as httpclient     # was: import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient("localhost:8000")
    inputs = [httpclient.InferInput("INPUT0", [1, 16], "INT32")]
    inputs[0].set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
    result = client.infer("simple", inputs)
    result.as_numpy("OUTPUT0")

Control calls answer with the JSON dicts Triton's HTTP frontend sends, as tritonclient.http's
do; errors are InferenceServerException with the HTTP status as status() ("404").
"""

from .._plugin import InferenceServerClientPlugin, Request
from ..utils import *  # noqa: F401,F403 (tritonclient.http exports tritonclient.utils' names)
from ..utils import InferenceServerException
from ..utils import __all__ as _utils_names
from ._client import InferAsyncRequest, InferenceServerClient
from ._infer import InferInput, InferRequestedOutput, InferResult

__all__ = ["InferenceServerClientPlugin", "Request", "InferenceServerClient", "InferInput",
           "InferRequestedOutput", "InferResult", "InferAsyncRequest",
           "InferenceServerException"] + [name for name in _utils_names
                                          if name != "InferenceServerException"]
