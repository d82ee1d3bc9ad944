"""Triton's model_config.proto as protobuf classes (tritonclient.grpc.model_config_pb2), built
when imported from the descriptors sonic embeds. Needs the protobuf package."""

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.internal import builder as _builder

from ... import _sonic

# A pool of sonic's own, so that these classes live beside a real tritonclient's (whose files
# have the same names in protobuf's default pool).
POOL = descriptor_pool.DescriptorPool()
for _file in descriptor_pb2.FileDescriptorSet.FromString(_sonic._kserve_descriptors()).file:
    POOL.AddSerializedFile(_file.SerializeToString())  # dependencies come first

DESCRIPTOR = POOL.FindFileByName("model_config.proto")
_builder.BuildMessageAndEnumDescriptors(DESCRIPTOR, globals())
_builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, __name__, globals())
