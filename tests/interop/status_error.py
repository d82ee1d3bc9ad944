"""The one exception of the Python test server and its helpers: a gRPC status code and the
message a servicer aborts the call with."""


class StatusError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message
