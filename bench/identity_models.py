"""The models bench/pipelines.sh, bench/ensemble_batching.sh and bench/python_backend.sh serve,
written into ROOT: a 64 B (FP32 [batch, 16]) identity as an ONNX model (onnx_identity), a 3-step
ensemble of it (ensemble3), the same two with the identity's dynamic_batching on
(onnx_identity_batched, ensemble3_batched), and the identity as a Python model with 1 and 4
instances (python_identity, python_identity_x4).

    identity_models.py ROOT
"""

import os
import sys

from onnx import TensorProto, helper, save

TENSORS = ('input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]\n'
           'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]\n')
MODEL_PY = '''import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
'''


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make(root):
    x = helper.make_tensor_value_info("INPUT0", TensorProto.FLOAT, ("batch", 16))
    y = helper.make_tensor_value_info("OUTPUT0", TensorProto.FLOAT, ("batch", 16))
    graph = helper.make_graph([helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])], "id",
                              [x], [y])
    for suffix, scheduling in (("", ""), ("_batched", "dynamic_batching { }\n")):
        identity = f"onnx_identity{suffix}"
        os.makedirs(f"{root}/{identity}/1")
        save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
             f"{root}/{identity}/1/model.onnx")
        write(f"{root}/{identity}/config.pbtxt",
              f'backend: "onnxruntime"\nmax_batch_size: 8\n{TENSORS}{scheduling}')
        steps = "".join(
            f'step [{{ model_name: "{identity}" model_version: -1 '
            f'input_map {{ key: "INPUT0" value: "{a}" }} '
            f'output_map {{ key: "OUTPUT0" value: "{b}" }} }}]\n'
            for a, b in (("INPUT0", "t1"), ("t1", "t2"), ("t2", "OUTPUT0")))
        os.makedirs(f"{root}/ensemble3{suffix}/1")  # an ensemble's version directory is empty
        write(f"{root}/ensemble3{suffix}/config.pbtxt",
              f'platform: "ensemble"\nmax_batch_size: 8\n{TENSORS}'
              f'ensemble_scheduling {{\n{steps}}}\n')
    for name, count in (("python_identity", 1), ("python_identity_x4", 4)):
        write(f"{root}/{name}/1/model.py", MODEL_PY)
        write(f"{root}/{name}/config.pbtxt",
              f'backend: "python"\nmax_batch_size: 8\n{TENSORS}'
              f'instance_group [ {{ count: {count} kind: KIND_CPU }} ]\n')


if __name__ == "__main__":
    make(sys.argv[1])
