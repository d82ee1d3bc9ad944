"""tritonclient's request arguments as sonic takes them, for the gRPC and the HTTP clients."""

import base64
import numbers

from .utils import raise_error

# Request parameters that tritonclient sets from arguments of their own and refuses in
# `parameters` (its grpc/_utils.py).
_RESERVED_PARAMETERS = ("sequence_id", "sequence_start", "sequence_end", "priority",
                        "binary_data_output")


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


def infer_arguments(model_name, inputs, model_version, outputs, request_id, sequence_id,
                    sequence_start, sequence_end, priority, timeout, parameters,
                    enable_empty_final_response=False):
    """sonic's arguments of a request that tritonclient's infer() arguments describe."""
    check_version(model_version)
    return {
        "model": model_name,
        "inputs": list(inputs),
        "outputs": list(outputs) if outputs else None,
        "version": model_version,
        "request_id": request_id,
        "parameters": request_parameters(sequence_id, sequence_start, sequence_end, priority,
                                         timeout, parameters, enable_empty_final_response),
    }


def load_request(model_name, config, files):
    """The RepositoryModelLoadRequest (as JSON) of tritonclient's load_model(): the config
    override and the model's files, bytes in base64 as protobuf's JSON has them."""
    parameters = {}
    if config is not None:
        parameters["config"] = {"string_param": config}
    for path, content in (files or {}).items():
        parameters[path] = {"bytes_param": base64.b64encode(content).decode("ascii")}
    request = {"model_name": model_name}
    if parameters:
        request["parameters"] = parameters
    return request


def metadata_headers(headers, plugin):
    """The headers a call sends: the caller's, as the registered plugin (if any) left them,
    with lower-case names (as gRPC metadata has them; HTTP's are case-blind); None when there
    are none."""
    if plugin is not None:
        from ._plugin import Request
        request = Request(headers)
        plugin(request)
        headers = request.headers
    if not headers:
        return None
    return {str(name).lower(): str(value) for name, value in headers.items()}
