"""What every tritonclient.http call shares: sonic's errors as tritonclient.http's exceptions,
and the protobuf answers of sonic's control calls as the JSON Triton's HTTP frontend sends."""

import base64
import math
import re

from ... import _errors
from .. import _messages
from ..utils import InferenceServerException, raise_error

__all__ = ["InferenceServerException", "raise_error", "get_error_http", "raise_error_http"]

# The HTTP status Triton's HTTP frontend answers an error of each code with (its
# HttpCodeFromError: NOT_FOUND 404, UNAVAILABLE 503, UNSUPPORTED 501, INTERNAL 500, others 400),
# and those sonic's http:// transport reads back from proxies (401, 403).
_HTTP_STATUS = {
    _errors.StatusCode.INVALID_ARGUMENT: "400",
    _errors.StatusCode.UNAUTHENTICATED: "401",
    _errors.StatusCode.PERMISSION_DENIED: "403",
    _errors.StatusCode.NOT_FOUND: "404",
    _errors.StatusCode.INTERNAL: "500",
    _errors.StatusCode.UNIMPLEMENTED: "501",
    _errors.StatusCode.UNAVAILABLE: "503",
}
# sonic's transport keeps a status it has no code for in the message: "HTTP status 418: ...",
# and says "HTTP status 400" alone for an answer without a body.
_UNMAPPED_STATUS = re.compile(r"^HTTP status (\d{3}): ?")
_EMPTY_ANSWER = re.compile(r"^HTTP status \d{3}$")
# tritonclient.http's words for an error answer without a body (http/_utils.py, _get_error).
_EMPTY_MESSAGE = "client received an empty response from the server."


def get_error_http(error):
    """The InferenceServerException tritonclient.http raises for a failed call: for a
    sonic.Error, the server's message (Triton's {"error": ...}) and status() the HTTP status as
    a str ("400"), as tritonclient.http's _get_error() gives them; sonic's account of the
    failure (retries, endpoints) is in debug_details(). An error that no answer carried (a
    refused connection, every endpoint ejected) has the status Triton's frontend answers that
    code with ("503" for UNAVAILABLE); a deadline or a cancelled call has none."""
    if isinstance(error, InferenceServerException):
        return error
    if not isinstance(error, _errors.Error):
        return InferenceServerException(msg=str(error))
    message = error.message
    status = _HTTP_STATUS.get(error.code)
    unmapped = _UNMAPPED_STATUS.match(message)
    if status is None and unmapped:
        status, message = unmapped.group(1), message[unmapped.end():]
    if _EMPTY_ANSWER.match(message):
        message = _EMPTY_MESSAGE
    details = str(error) + (" (reason: %s)" % error.reason if error.reason else "")
    return InferenceServerException(msg=message, status=status, debug_details=details)


def raise_error_http(error):
    """Raises get_error_http(error)."""
    raise get_error_http(error) from None


# ---- Protobuf answers as Triton's REST JSON ------------------------------------------------

def rest_json(message, defaults=True):
    """A protobuf Message as Triton's HTTP frontend writes the same object: field names as in
    the .proto, 64-bit integers as numbers, enums by name; with `defaults`, every field that
    is not a single message or in a oneof is there even at its default value (0, "", [], {}),
    as Triton prints model configurations (always_print_primitive_fields, core
    model_config_utils.cc) and writes statistics, metadata and regions; without, only the
    fields the answer set (the repository index, whose entries Triton writes without an empty
    reason)."""
    document = {}
    values = message._values
    for field in message._type.fields:
        if field.name in values:
            value = values[field.name]
        elif not defaults or (field.presence and not field.repeated):
            continue
        else:
            value = getattr(message, field.name)  # the default: 0, "", [], {}
        if _messages._is_map(field):
            entry = _messages.message_type(field.type_name)
            document[field.name] = {str(key): _rest_value(entry.fields[1], item, defaults)
                                    for key, item in value.items()}
        elif field.repeated:
            document[field.name] = [_rest_value(field, item, defaults) for item in value]
        else:
            document[field.name] = _rest_value(field, value, defaults)
    return document


def _rest_value(field, value, defaults):
    if field.type == _messages._MESSAGE:
        return rest_json(value, defaults)
    if field.type == _messages._ENUM:
        return _messages._enums[field.type_name].names.get(value, value)
    if field.type == _messages._BYTES:
        return base64.b64encode(bytes(value)).decode("ascii")
    if field.type in _messages._REALS and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def trace_settings_json(response):
    """A TraceSettingResponse as Triton's /v2/trace/setting answers: each setting's value,
    trace_level (and any setting with several values) as a list."""
    settings = {}
    for key, value in response.settings.items():
        values = list(value.value)
        settings[key] = values if key == "trace_level" or len(values) != 1 else values[0]
    return settings


def log_settings_json(response):
    """A LogSettingsResponse as Triton's /v2/logging answers: {setting: value}."""
    settings = {}
    for key, value in response.settings.items():
        which = value.WhichOneof("parameter_choice")
        if which is not None:
            settings[key] = getattr(value, which)
    return settings
