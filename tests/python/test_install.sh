#!/usr/bin/env bash
# `pip install --no-build-isolation bindings/python` as the README says it, into a fresh venv
# (Debian's python3-venv, with the system's numpy), then the installed package, away from the
# source and build trees: a request to a sonic-server, and the fallback through the ONNX
# backend the package carries. The TorchScript backend is left out of this build
# (SONIC_BUILD_TORCH=OFF): libtorch's headers take minutes to compile, and the package test
# adds nothing to what the build tree's tests check of it. The build is not optimised (-O0):
# what this test checks is the packaging (the libraries found through $ORIGIN, the extension
# imported away from both trees, the backend the fallback loads), which optimisation does not
# change, and the build is most of the test's time.
#   test_install.sh SONIC_SERVER PYTHON [MODELS_DIR]
set -euo pipefail
server=$1 python=$2 models=${3:-}
repo=$(cd "$(dirname "$0")/../.." && pwd)
source "$repo/tests/tools/serve.sh"
serve "$server"

"$python" -m venv --system-site-packages "$work/venv"
package_build="-DSONIC_BUILD_TORCH=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0"
SONIC_CMAKE_ARGS="$package_build ${SONIC_CMAKE_ARGS:-}" \
  "$work/venv/bin/pip" install --quiet --no-build-isolation "$repo/bindings/python" ||
  fail "pip install failed"

cd "$work"  # neither the source nor the build tree: only the installed package can be imported
PYTHONPATH= "$work/venv/bin/python" - "grpc://127.0.0.1:$port" "$work/venv" "$models" <<'PY'
import os, sys
import numpy as np
import sonic

url, venv, models = sys.argv[1:4]
assert sonic.__file__.startswith(venv), sonic.__file__
with sonic.Client(url) as client:
    out = client.infer("identity_fp32", {"INPUT0": np.arange(16, dtype=np.float32).reshape(1, 16)})
    assert out["OUTPUT0"].tolist() == [list(range(16))], out
# The tritonclient-compatible subpackages, and the message schema the extension carries.
import sonic.tritonclient.grpc as grpcclient
with grpcclient.InferenceServerClient(url.split("://", 1)[1]) as triton_client:
    assert triton_client.get_model_metadata("identity_fp32").inputs[0].datatype == "FP32"
import sonic.tritonclient.http as httpclient
import sonic.tritonclient.http.aio  # noqa: F401
import sonic.tritonclient.http.auth  # noqa: F401
assert httpclient.InferInput("INPUT0", [1], "FP32").datatype() == "FP32"
if models:
    import socket
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))  # a loopback port where nothing listens, once closed
    dead = "grpc://127.0.0.1:%d" % probe.getsockname()[1]
    probe.close()
    reference = os.path.join(models, "reference", "jet_mlp_onnx")
    with sonic.Client(dead, fallback_repository=os.path.join(models, "repository"),
                      max_attempts=1) as client:
        result = client.infer("jet_mlp_onnx",
                              {"features": np.load(os.path.join(reference, "features.npy"))})
        assert result.executed_on == "local"
        np.testing.assert_allclose(result["probabilities"],
                                   np.load(os.path.join(reference, "probabilities.npy")),
                                   rtol=1e-5, atol=1e-6)
print("installed package OK:", sonic.__file__)
PY
