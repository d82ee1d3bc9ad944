"""sonic's errors: one exception class per gRPC status code, all subclasses of sonic.Error."""

import enum


class StatusCode(enum.IntEnum):
    """gRPC status codes, numerically identical to gRPC's and to sonic::StatusCode."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


class Error(Exception):
    """A failed sonic call: `code` (a StatusCode), `message` (the server's words when the server
    failed it) and `reason` (a machine-readable cause such as "SHM_REGION_NOT_FOUND", or "")."""

    code = StatusCode.UNKNOWN

    def __init__(self, message, reason=""):
        super().__init__("%s: %s" % (self.code.name, message))
        self.message = message
        self.reason = reason


class Cancelled(Error):
    code = StatusCode.CANCELLED


class Unknown(Error):
    code = StatusCode.UNKNOWN


class InvalidArgument(Error, ValueError):
    code = StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(Error, TimeoutError):
    code = StatusCode.DEADLINE_EXCEEDED


class NotFound(Error, LookupError):
    code = StatusCode.NOT_FOUND


class AlreadyExists(Error):
    code = StatusCode.ALREADY_EXISTS


class PermissionDenied(Error):
    code = StatusCode.PERMISSION_DENIED


class ResourceExhausted(Error):
    code = StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(Error):
    code = StatusCode.FAILED_PRECONDITION


class Aborted(Error):
    code = StatusCode.ABORTED


class OutOfRange(Error, IndexError):
    code = StatusCode.OUT_OF_RANGE


class Unimplemented(Error, NotImplementedError):
    code = StatusCode.UNIMPLEMENTED


class Internal(Error):
    code = StatusCode.INTERNAL


class Unavailable(Error, ConnectionError):
    code = StatusCode.UNAVAILABLE


class DataLoss(Error):
    code = StatusCode.DATA_LOSS


class Unauthenticated(Error):
    code = StatusCode.UNAUTHENTICATED


_BY_CODE = {cls.code: cls for cls in Error.__subclasses__()}


def error_for_code(code, message, reason=""):
    """The exception for a status code (called by the extension for every failure)."""
    return _BY_CODE.get(code, Unknown)(message, reason)


__all__ = ["StatusCode", "Error"] + [cls.__name__ for cls in _BY_CODE.values()]
