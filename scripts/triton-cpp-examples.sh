#!/usr/bin/env bash
# Triton's C++ example clients (client/src/c++/examples), built unmodified against NVIDIA's C++
# client libraries, run against sonic-server the way scripts/triton-examples.sh runs the Python
# ones. Not part of CI (it needs NVIDIA's repositories, which CI cannot fetch).
#
#   scripts/triton-cpp-examples.sh BUILD EXAMPLES SERVER
#
# BUILD: sonic's build directory (tools/sonic-server); EXAMPLES: the folder holding the built C++
# examples (scripts/triton-cpp-examples-build.sh's OUT/build/examples); SERVER: a checkout of
# triton-inference-server/server. Needs Debian's python3 with -numpy and -pil
# (for the repository's models and a test image); ports 8000-8002, 8100-8102, 8200-8202 and
# 8300-8302 free on 127.0.0.1. SONIC_SRC: sonic's source tree (default: this script's folder's
# parent, as in scripts/).
set -u
python=${PYTHON:-/usr/bin/python3}
build=$(realpath "$1") bin=$(realpath "$2") server_src=$(realpath "$3")
SRC=${SONIC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}  # sonic's source tree
server=$build/tools/sonic-server
work=$(mktemp -d)
pids=()
cleanup() {  # KEEP=1 keeps the logs
  kill "${pids[@]}" 2>/dev/null
  wait 2>/dev/null
  if [ -n "${KEEP:-}" ]; then echo "logs: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# Triton's example repository as published (SERVER: a checkout of
# triton-inference-server/server; docs/examples/model_repository, its configs and model files),
# with densenet_onnx's and inception_onnx's model files, which Triton's fetch_models.sh
# downloads, made by the tests' script.
published=$work/model_repository
cp -r "$server_src/docs/examples/model_repository" "$published"
SONIC_PYTHON=$python "$python" -c "import sys; sys.path.insert(0, '$SRC/tests/triton_repository')
import make_models; make_models.make('$work/made')" >/dev/null
for m in densenet_onnx inception_onnx; do
  mkdir -p "$published/$m/1" && cp "$work/made/$m/1/model.onnx" "$published/$m/1/"
done
repo=$published

pass=0 fail=0 skip=0
started() { for _ in $(seq 200); do grep -qs "listening" "$1" && return; sleep 0.1; done; cat "$1"; exit 1; }
run() {  # run NAME PROGRAM [ARGS...]
  local name=$1 prog=$bin/$2
  shift 2
  if [ ! -x "$prog" ]; then
    skip=$((skip + 1)) && echo "SKIP $name: not built"
    return
  fi
  if (cd "$work" && timeout 120 "$prog" "$@" >"$work/$name.log" 2>&1); then
    pass=$((pass + 1)) && echo "PASS $name"
  else
    fail=$((fail + 1)) && echo "FAIL $name: $(tail -3 "$work/$name.log" | tr '\n' ' ' | cut -c1-300)"
  fi
}

# --id triton: the health examples check that the server calls itself "triton".
SONIC_PYTHON=$python "$server" --id triton --model-repository "$repo" >"$work/server.log" 2>&1 &
pids+=($!)
# The model control examples' server: explicit mode, the whole published repository.
"$server" --model-repository "$published" --model-control-mode explicit -p 8101 \
  --http-port 8100 --metrics-port 8102 >"$work/control.log" 2>&1 &
pids+=($!)
# simple_http_model_control counts 7 models: the repository Triton's QA runs it on (L0_http:
# six of the published models and a simple_string_dyna_sequence), where the gRPC one counts 8
# (L0_grpc's: those, simple_int8 and simple_string_dyna_sequence), as many as the published one.
http_control=$work/http_control
mkdir -p "$http_control"
for m in simple simple_dyna_sequence simple_identity simple_sequence simple_string densenet_onnx; do
  cp -r "$published/$m" "$http_control/"
done
cp -r "$published/simple_dyna_sequence" "$http_control/simple_string_dyna_sequence"
sed -i 's/simple_dyna_sequence/simple_string_dyna_sequence/' \
  "$http_control/simple_string_dyna_sequence/config.pbtxt"
"$server" --model-repository "$http_control" --model-control-mode explicit -p 8301 \
  --http-port 8300 --metrics-port 8302 >"$work/http_control.log" 2>&1 &
pids+=($!)
# Without a repository: the built-in models (repeat_int32, which the QA repository has).
"$server" -p 8201 --http-port 8200 --metrics-port 8202 >"$work/bare.log" 2>&1 &
pids+=($!)
for log in server control http_control bare; do started "$work/$log.log"; done
image=$work/image.jpg
"$python" -c "from PIL import Image; import numpy as np
Image.fromarray((np.random.RandomState(1).rand(300, 300, 3) * 255).astype('uint8')).save('$image')"

run simple_grpc_infer_client simple_grpc_infer_client
run simple_grpc_async_infer_client simple_grpc_async_infer_client
run simple_grpc_string_infer_client simple_grpc_string_infer_client
run simple_grpc_sequence_sync_infer_client simple_grpc_sequence_sync_infer_client
run simple_grpc_sequence_stream_infer_client simple_grpc_sequence_stream_infer_client
run simple_grpc_shm_client simple_grpc_shm_client
run simple_grpc_health_metadata simple_grpc_health_metadata
run simple_grpc_keepalive_client simple_grpc_keepalive_client
run simple_grpc_custom_args_client simple_grpc_custom_args_client
run simple_grpc_custom_repeat simple_grpc_custom_repeat -u localhost:8201
run simple_grpc_model_control simple_grpc_model_control -u localhost:8101
run simple_http_infer_client simple_http_infer_client
# Variants Triton's QA runs (qa/L0_http, qa/L0_grpc): compressed bodies, JSON tensors, headers.
run simple_http_infer_client_gzip simple_http_infer_client -i gzip -o gzip
run simple_http_infer_client_deflate simple_http_infer_client -i deflate -o deflate
run simple_http_infer_client_header simple_http_infer_client -H test:1
run simple_grpc_infer_client_gzip simple_grpc_infer_client -C gzip
run simple_grpc_infer_client_deflate simple_grpc_infer_client -C deflate
run simple_grpc_infer_client_uncached simple_grpc_infer_client -c false
run simple_http_async_infer_client simple_http_async_infer_client
run simple_http_string_infer_client simple_http_string_infer_client
run simple_http_string_infer_client_json simple_http_string_infer_client --json-input-data \
  --json-output-data
run simple_http_sequence_sync_infer_client simple_http_sequence_sync_infer_client
run simple_http_shm_client simple_http_shm_client
run simple_http_health_metadata simple_http_health_metadata
run simple_http_model_control simple_http_model_control -u localhost:8300
run reuse_infer_objects_client_http reuse_infer_objects_client
run reuse_infer_objects_client_grpc reuse_infer_objects_client -i grpc -u localhost:8001
run image_client_http image_client -m inception_onnx -s INCEPTION "$image"
run image_client_http_async image_client -a -m inception_onnx -s INCEPTION "$image"
run image_client_grpc image_client -i grpc -u localhost:8001 -m inception_onnx -s INCEPTION \
  "$image"
run image_client_grpc_async image_client -a -i grpc -u localhost:8001 -m inception_onnx \
  -s INCEPTION "$image"
# The C++ image_client streams only asynchronously (-a), unlike image_client.py.
run image_client_grpc_streaming image_client -a --streaming -i grpc -u localhost:8001 \
  -m inception_onnx -s INCEPTION "$image"
run image_client_densenet image_client -m densenet_onnx -c 3 -s INCEPTION "$image"
run image_client_densenet_grpc image_client -i grpc -u localhost:8001 -m densenet_onnx -c 3 \
  -s INCEPTION "$image"
# ensemble_image_client: its ensemble (preprocess_inception_ensemble, a DALI pipeline) is not
# in the example repository.
echo "passed $pass, failed $fail, skipped $skip"
[ "$fail" -eq 0 ]
