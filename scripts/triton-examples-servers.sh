# Sourced by scripts/triton-examples.sh and triton-cpp-examples.sh: Triton's example repository
# and the sonic-servers Triton's examples run against, on Triton's ports, as Triton's QA runs
# them. Needs $work, $python, $server (sonic-server), $server_src (a checkout of
# triton-inference-server/server), $SRC (sonic's source tree) and the array pids; sets
# $published and $image.

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

started() { for _ in $(seq 200); do grep -qs "listening" "$1" && return; sleep 0.1; done; cat "$1"; exit 1; }

# --id triton: the health examples check that the server calls itself "triton".
SONIC_PYTHON=$python "$server" --id triton --model-repository "$published" >"$work/server.log" 2>&1 &
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

