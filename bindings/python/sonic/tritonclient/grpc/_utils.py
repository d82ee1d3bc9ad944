"""What every tritonclient.grpc call shares: sonic's errors as tritonclient's exceptions, and
tritonclient's request arguments as sonic's."""

import numbers

from ... import _errors
from ..utils import InferenceServerException, raise_error

__all__ = ["raise_error", "raise_error_grpc", "get_error_grpc", "get_cancelled_error"]

# tritonclient's grpc/_utils.py: a locally cancelled call reports grpc's own words.
_CANCELLED_MESSAGE = "Locally cancelled by application!"
# grpc reports a deadline the client set with these words (tritonclient's docs of
# client_timeout: the exception's message is "Deadline Exceeded").
_DEADLINE_MESSAGE = "Deadline Exceeded"

# Request parameters that tritonclient sets from arguments of their own and refuses in
# `parameters` (its grpc/_utils.py).
_RESERVED_PARAMETERS = ("sequence_id", "sequence_start", "sequence_end", "priority",
                        "binary_data_output")


def get_error_grpc(rpc_error):
    """The InferenceServerException tritonclient raises for a failed call: for a sonic.Error,
    the server's message, status() as str(grpc.StatusCode) ("StatusCode.NOT_FOUND"), and
    sonic's account of it in debug_details()."""
    if isinstance(rpc_error, InferenceServerException):
        return rpc_error
    if not isinstance(rpc_error, _errors.Error):
        return InferenceServerException(msg=str(rpc_error))
    message = rpc_error.message
    if rpc_error.code == _errors.StatusCode.DEADLINE_EXCEEDED:
        message = _DEADLINE_MESSAGE
    elif rpc_error.code == _errors.StatusCode.CANCELLED:
        message = _CANCELLED_MESSAGE
    details = str(rpc_error) + (" (reason: %s)" % rpc_error.reason if rpc_error.reason else "")
    return InferenceServerException(msg=message, status="StatusCode." + rpc_error.code.name,
                                    debug_details=details)


def get_cancelled_error(msg=None):
    """The exception of a call the application cancelled, as tritonclient reports it."""
    return InferenceServerException(msg=msg or _CANCELLED_MESSAGE, status="StatusCode.CANCELLED")


def raise_error_grpc(rpc_error):
    """Raises get_error_grpc(rpc_error)."""
    raise get_error_grpc(rpc_error) from None


def check_version(model_version):
    if type(model_version) != str:  # noqa: E721 (tritonclient refuses str subclasses too)
        raise_error("model version must be a string")


def request_parameters(sequence_id, sequence_start, sequence_end, priority, timeout,
                       parameters, enable_empty_final_response=False):
    """The request parameters tritonclient sends for these arguments (its
    _get_inference_request()), as sonic takes them: {name: bool | int | float | str}."""
    sent = {}
    # A sequence id of 0 or "" means no sequence; its flags go only with an id.
    if sequence_id != 0 and sequence_id != "":
        sent["sequence_id"] = sequence_id if isinstance(sequence_id, str) else int(sequence_id)
        sent["sequence_start"] = bool(sequence_start)
        sent["sequence_end"] = bool(sequence_end)
    if priority != 0:
        sent["priority"] = int(priority)
    if timeout is not None:
        sent["timeout"] = int(timeout)  # microseconds, for the server's queue policy
    for key, value in (parameters or {}).items():
        if key in _RESERVED_PARAMETERS:
            raise_error('Parameter "%s" is a reserved parameter and cannot be specified.' % key)
        if isinstance(value, (str, bool)):
            sent[key] = value
        elif isinstance(value, numbers.Integral):
            sent[key] = int(value)
        elif isinstance(value, numbers.Real):
            sent[key] = float(value)  # KServe's double_param; tritonclient refuses floats
        else:
            raise_error('The parameter datatype "%s" for key "%s" is not supported.'
                        % (type(value), key))
    if enable_empty_final_response:
        # Only when asked: the server then ends a decoupled model's answers with an empty one.
        sent["triton_enable_empty_final_response"] = True
    return sent or None


def metadata_headers(headers, plugin):
    """The headers a call sends: the caller's, as the registered plugin (if any) left them,
    with lower-case names as gRPC metadata has them; None when there are none."""
    if plugin is not None:
        from .._plugin import Request
        request = Request(headers)
        plugin(request)
        headers = request.headers
    if not headers:
        return None
    return {str(name).lower(): str(value) for name, value in headers.items()}
