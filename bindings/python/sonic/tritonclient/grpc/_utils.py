"""What every tritonclient.grpc call shares: sonic's errors as tritonclient's exceptions, and
tritonclient's request arguments as sonic's."""

from ... import _errors
from .._requests import check_version, metadata_headers, request_parameters  # noqa: F401
from ..utils import InferenceServerException, raise_error

__all__ = ["raise_error", "raise_error_grpc", "get_error_grpc", "get_cancelled_error"]

# tritonclient's grpc/_utils.py: a locally cancelled call reports grpc's own words.
_CANCELLED_MESSAGE = "Locally cancelled by application!"
# grpc reports a deadline the client set with these words (tritonclient's docs of
# client_timeout: the exception's message is "Deadline Exceeded").
_DEADLINE_MESSAGE = "Deadline Exceeded"


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
