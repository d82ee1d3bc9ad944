"""The models bench/overload.sh serves, written into ROOT:

- python_20ms: a Python model that takes 20 ms per request (it sleeps: a fixed service time,
  as a model waiting on an accelerator), FP32 INPUT0 [-1] -> OUTPUT0, two instances;
- onnx_mlp: an ONNX model that computes: FP32 INPUT0 [batch, 1024] through sixteen 1024 x 1024
  matrix products (ReLU between), one instance, one ONNX Runtime thread, so that its service
  time is its own CPU time (a few ms for a batch of 16 rows).

    overload_models.py ROOT
"""

import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

SLEEPER_PY = '''import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            time.sleep(0.020)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor(
                "OUTPUT0", pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy())]))
        return responses
'''


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make(root):
    write(os.path.join(root, "python_20ms", "config.pbtxt"),
          'name: "python_20ms"\nbackend: "python"\nmax_batch_size: 0\n'
          'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
          'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
          'instance_group [ { count: 2 kind: KIND_CPU } ]\n')
    write(os.path.join(root, "python_20ms", "1", "model.py"), SLEEPER_PY)

    width, layers = 1024, 16
    rng = np.random.default_rng(58)
    nodes, weights, previous = [], [], "INPUT0"
    for i in range(layers):
        w = numpy_helper.from_array(
            (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32), f"w{i}")
        weights.append(w)
        product = f"p{i}"
        nodes.append(helper.make_node("MatMul", [previous, f"w{i}"], [product]))
        out = "OUTPUT0" if i == layers - 1 else f"r{i}"
        nodes.append(helper.make_node("Relu", [product], [out]))
        previous = out
    x = helper.make_tensor_value_info("INPUT0", TensorProto.FLOAT, ("batch", width))
    y = helper.make_tensor_value_info("OUTPUT0", TensorProto.FLOAT, ("batch", width))
    graph = helper.make_graph(nodes, "mlp", [x], [y], initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    os.makedirs(os.path.join(root, "onnx_mlp", "1"), exist_ok=True)
    save(model, os.path.join(root, "onnx_mlp", "1", "model.onnx"))
    write(os.path.join(root, "onnx_mlp", "config.pbtxt"),
          'name: "onnx_mlp"\nbackend: "onnxruntime"\nmax_batch_size: 64\n'
          'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1024 ] } ]\n'
          'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1024 ] } ]\n'
          'instance_group [ { count: 1 kind: KIND_CPU } ]\n'
          'parameters { key: "intra_op_thread_count" value: { string_value: "1" } }\n')


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    make(sys.argv[1])
