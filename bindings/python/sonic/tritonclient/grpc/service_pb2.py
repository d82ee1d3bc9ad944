"""Triton's grpc_service.proto as protobuf classes (tritonclient.grpc.service_pb2:
ModelInferRequest, ModelInferResponse, ...), built when imported from the descriptors sonic
embeds. Needs the protobuf package."""

from google.protobuf.internal import builder as _builder

from . import model_config_pb2  # noqa: F401 (its types, which these messages use)

DESCRIPTOR = model_config_pb2.POOL.FindFileByName("grpc_service.proto")
_builder.BuildMessageAndEnumDescriptors(DESCRIPTOR, globals())
_builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, __name__, globals())
