#!/usr/bin/env bash
# Triton's published Python example clients and python_backend examples, unmodified, against
# sonic-server: the check of "a Triton user changes nothing" against code sonic did not write.
# Not part of CI (it needs NVIDIA's repositories, which CI cannot fetch).
#
#   scripts/triton-examples.sh BUILD CLIENT PYTHON_BACKEND SERVER [triton|sonic]
#
# BUILD: sonic's build directory (tools/sonic-server, python/ for the sonic package); CLIENT,
# PYTHON_BACKEND and SERVER: checkouts of triton-inference-server/client, /python_backend and
# /server. Mode triton
# (default) runs NVIDIA's tritonclient from CLIENT's sources; sonic runs the same examples with
# tritonclient replaced by sonic.tritonclient in their imports. Needs Debian's
# python3-grpc-tools, -geventhttpclient, -rapidjson, -aiohttp, -packaging, -pil, -numpy and, for
# the pytorch example, -torch (Debian's python3, or $PYTHON); ports 8000-8002, 8100-8102,
# 8200-8202 and 8300-8302 free on 127.0.0.1. The C++ examples: scripts/triton-cpp-examples*.sh.
set -u
python=${PYTHON:-/usr/bin/python3}
build=$(realpath "$1") client=$(realpath "$2") pb_src=$(realpath "$3") server_src=$(realpath "$4")
mode=${5:-triton}
SRC=$(cd "$(dirname "$0")/.." && pwd)  # sonic's source tree
server=$build/tools/sonic-server
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

# tritonclient from source: its gRPC modules are generated from sonic's protos (Triton's).
lib=$work/lib
cp -r "$client/src/python/library" "$lib"
protos=$work/protos
mkdir -p "$protos"
cp "$SRC/proto/grpc_service.proto" "$protos/service.proto"
cp "$SRC/proto/model_config.proto" "$protos/"
"$python" -m grpc_tools.protoc -I"$protos" --python_out="$lib/tritonclient/grpc" \
  --grpc_python_out="$lib/tritonclient/grpc" "$protos/service.proto" "$protos/model_config.proto"
sed -i -E 's/^import (service_pb2|model_config_pb2) as/from tritonclient.grpc import \1 as/' \
  "$lib"/tritonclient/grpc/*_pb2*.py
# image_client.py imports attrdict, which Debian does not package: a stand-in of what it uses.
mkdir -p "$work/shims"
cat >"$work/shims/attrdict.py" <<'PY'
class AttrDict(dict):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for key, value in self.items():
            self[key] = self._wrap(value)

    @classmethod
    def _wrap(cls, value):
        if isinstance(value, dict):
            return cls(value)
        return [cls._wrap(v) for v in value] if isinstance(value, list) else value

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name)
PY
examples=$work/examples
cp -r "$client/src/python/examples" "$examples"
if [ "$mode" = sonic ]; then
  sed -i -E 's/^(\s*)(import|from) tritonclient/\1\2 sonic.tritonclient/' "$examples"/*.py
  path=$work/shims:$build/python
else
  path=$lib:$work/shims
fi

pass=0 fail=0
run() {  # run NAME COMMAND...
  local name=$1
  shift
  if (cd "$work" && PYTHONPATH=$path timeout 120 "$python" "$@" >"$work/$name.log" 2>&1); then
    pass=$((pass + 1)) && echo "PASS $name"
  else
    fail=$((fail + 1)) && echo "FAIL $name: $(tail -3 "$work/$name.log" | tr '\n' ' ' | cut -c1-300)"
  fi
}

source "$SRC/scripts/triton-examples-servers.sh"

for f in "$examples"/simple_grpc_*.py "$examples"/simple_http_*.py \
         "$examples"/grpc_explicit_*.py "$examples"/grpc_client.py \
         "$examples"/reuse_infer_objects_client.py; do
  name=$(basename "$f" .py)
  case $name in
    *cudashm*) ;;  # CUDA: needs a GPU
    simple_grpc_model_control) run "$name" "$f" -u localhost:8101 ;;
    simple_http_model_control) run "$name" "$f" -u localhost:8300 ;;
    simple_grpc_custom_repeat) run "$name" "$f" -u localhost:8201 ;;
    *) run "$name" "$f" ;;
  esac
done
run image_client_http "$examples/image_client.py" -m inception_onnx -s INCEPTION "$image"
run image_client_http_async "$examples/image_client.py" -a -m inception_onnx -s INCEPTION "$image"
run image_client_grpc "$examples/image_client.py" -i grpc -u localhost:8001 -m inception_onnx \
  -s INCEPTION "$image"
run image_client_grpc_streaming "$examples/image_client.py" --streaming -i grpc \
  -u localhost:8001 -m inception_onnx -s INCEPTION "$image"
run image_client_densenet "$examples/image_client.py" -m densenet_onnx -c 3 -s INCEPTION "$image"
run grpc_image_client "$examples/grpc_image_client.py" -m inception_onnx -s INCEPTION "$image"

# python_backend's examples, laid out as their READMEs say, on a server of their own.
kill "${pids[@]}" && wait
pids=()
e=$pb_src/examples m=$work/pb_models
put() {  # put MODEL MODEL_PY [CONFIG]
  mkdir -p "$m/$1/1" && cp "$e/$2" "$m/$1/1/model.py"
  if [ $# -eq 3 ]; then cp "$e/$3" "$m/$1/config.pbtxt"; fi
}
put add_sub add_sub/model.py add_sub/config.pbtxt
put pytorch pytorch/model.py pytorch/config.pbtxt
put nobatch_auto_complete auto_complete/nobatch_model.py
put batch_auto_complete auto_complete/batch_model.py
put bls_sync bls/sync_model.py bls/sync_config.pbtxt
put bls_async bls/async_model.py bls/async_config.pbtxt
put bls_decoupled_sync bls_decoupled/sync_model.py bls_decoupled/sync_config.pbtxt
put bls_decoupled_async bls_decoupled/async_model.py bls_decoupled/async_config.pbtxt
put repeat_int32 decoupled/repeat_model.py decoupled/repeat_config.pbtxt
put square_int32 decoupled/square_model.py decoupled/square_config.pbtxt
put custom_metrics custom_metrics/model.py custom_metrics/config.pbtxt
SONIC_PYTHON=$python "$server" --model-repository "$m" >"$work/pb.log" 2>&1 &
pids+=($!)
started "$work/pb.log"
path=$lib
run pb_add_sub "$e/add_sub/client.py"
run pb_pytorch "$e/pytorch/client.py"
run pb_auto_complete "$e/auto_complete/client.py"
run pb_bls_sync "$e/bls/sync_client.py"
run pb_bls_async "$e/bls/async_client.py"
run pb_bls_decoupled_sync "$e/bls_decoupled/sync_client.py"
run pb_bls_decoupled_async "$e/bls_decoupled/async_client.py"
run pb_decoupled_repeat "$e/decoupled/repeat_client.py"
run pb_decoupled_square "$e/decoupled/square_client.py"
run pb_custom_metrics "$e/custom_metrics/client.py"
echo "passed $pass, failed $fail"
