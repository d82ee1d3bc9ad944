"""The client stub of Triton's GRPCInferenceService (tritonclient.grpc.service_pb2_grpc's
GRPCInferenceServiceStub), over grpcio. Needs the grpcio and protobuf packages."""

import grpc  # noqa: F401 (the channel the stub is given is grpcio's)

from . import service_pb2

_SERVICE = service_pb2.DESCRIPTOR.services_by_name["GRPCInferenceService"]


class GRPCInferenceServiceStub:
    """One attribute per method of inference.GRPCInferenceService ("ModelInfer", ...), each a
    grpcio multi-callable of `channel`: unary calls, and ModelStreamInfer a bidirectional
    stream."""

    def __init__(self, channel):
        for method in _SERVICE.methods:
            request = getattr(service_pb2, method.input_type.name)
            response = getattr(service_pb2, method.output_type.name)
            path = "/%s/%s" % (_SERVICE.full_name, method.name)
            streaming = getattr(method, "client_streaming", method.name == "ModelStreamInfer")
            make = channel.stream_stream if streaming else channel.unary_unary
            setattr(self, method.name, make(path, request_serializer=request.SerializeToString,
                                            response_deserializer=response.FromString))
