"""sonic.tritonclient: NVIDIA's tritonclient Python API over sonic's client.

Code written for tritonclient ports by changing its imports alone::

    import sonic.tritonclient.grpc as grpcclient            # was: tritonclient.grpc
    import sonic.tritonclient.http as httpclient            # was: tritonclient.http
    from sonic.tritonclient.utils import InferenceServerException

The modules are laid out as tritonclient's: sonic.tritonclient.grpc (with .aio and .auth),
sonic.tritonclient.http (with .aio and .auth), sonic.tritonclient.utils and
sonic.tritonclient.utils.shared_memory, with tritonclient's names, signatures, defaults, return
types and exceptions. Underneath is sonic.Client: its transports (grpc:// for .grpc, http:// for
.http), retries, endpoint ejection and CPU fallback; sonic's own options are extra keyword
arguments of InferenceServerClient (sonic.client_option_names() lists them).

CUDA shared memory (tritonclient.utils.cuda_shared_memory) is not provided; the CUDA shared
memory calls of the clients ask the server as tritonclient does.
"""
