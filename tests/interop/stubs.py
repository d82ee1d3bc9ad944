"""Python stubs for sonic's proto/ files, generated with grpc_tools.protoc on first use.

Shared by the interoperability scripts, which run against Debian's python3-grpcio.
"""

import glob
import os
import subprocess
import sys
import tempfile

PROTO_FILES = ("model_config.proto", "grpc_service.proto")
GEN_MODULES = ("model_config_pb2.py", "grpc_service_pb2.py",
               "grpc_service_pb2_grpc.py")


def load_stubs(proto_dir, gen_dir):
    """Generate (when absent or stale) and import the Python stubs."""
    proto_dir = os.path.abspath(proto_dir)
    gen_dir = os.path.abspath(gen_dir)
    os.makedirs(gen_dir, exist_ok=True)
    protos = [os.path.join(proto_dir, p) for p in PROTO_FILES]
    for p in protos:
        if not os.path.isfile(p):
            raise SystemExit("missing proto file: %s" % p)
    newest_proto = max(os.path.getmtime(p) for p in protos)
    gen = [os.path.join(gen_dir, m) for m in GEN_MODULES]
    if not all(os.path.isfile(g) and os.path.getmtime(g) >= newest_proto
               for g in gen):
        # Generate privately, then move into place atomically so concurrent
        # runs sharing gen_dir never import a half-written module.
        tmp = tempfile.mkdtemp(prefix=".gen-", dir=gen_dir)
        try:
            cmd = [sys.executable, "-m", "grpc_tools.protoc",
                   "-I" + proto_dir, "--python_out=" + tmp,
                   "--grpc_python_out=" + tmp] + protos
            res = subprocess.run(cmd, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT)
            if res.returncode != 0:
                raise SystemExit("grpc_tools.protoc failed:\n" +
                                 res.stdout.decode(errors="replace"))
            for f in glob.glob(os.path.join(tmp, "*.py")):
                os.replace(f, os.path.join(gen_dir, os.path.basename(f)))
        finally:
            for f in glob.glob(os.path.join(tmp, "*")):
                os.unlink(f)
            os.rmdir(tmp)
    if gen_dir not in sys.path:
        sys.path.insert(0, gen_dir)
    import model_config_pb2  # noqa: E402
    import grpc_service_pb2  # noqa: E402
    import grpc_service_pb2_grpc  # noqa: E402
    return model_config_pb2, grpc_service_pb2, grpc_service_pb2_grpc
