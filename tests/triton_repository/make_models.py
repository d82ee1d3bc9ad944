"""Makes a copy of Triton's example model repository to serve in the tests.

The configs are Triton's, unchanged (model_repository/ beside this file: server
docs/examples/model_repository). The model files are made here, with onnx's helper, to compute
what Triton's do:

- simple, simple_int8: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1;
- simple_string: the same on decimal strings (Cast to INT32 and back, as ONNX Runtime runs it);
- simple_sequence: OUTPUT = (INPUT + START) * READY, Triton's ONNX sequence model (server
  qa/common/gen_qa_sequence_models.py);
- densenet_onnx, inception_onnx: the published networks are downloads of 30 and 90 MB; here, a
  network of the same inputs, outputs and shapes with small known weights (a global average
  pool and one dense layer), and label files of made-up names, so that classification can be
  checked against numpy.

- simple_identity: Triton's Python model (its config names backend "python" since Triton put a
  model.py beside the TensorFlow SavedModel it had); the model.py is the Python backend tests'
  identity, written to the same contract.

simple_dyna_sequence (TensorFlow GraphDef, a custom backend in Triton's tests) names a backend
sonic does not have: its version directory is made empty, and the server must list it as
unavailable, with the reason.
"""

import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "model_repository")
OPSET = 13


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(model, path)


def add_sub(element, batch_shape=("batch", 16)):
    x = [helper.make_tensor_value_info(n, element, batch_shape) for n in ("INPUT0", "INPUT1")]
    y = [helper.make_tensor_value_info(n, element, batch_shape) for n in ("OUTPUT0", "OUTPUT1")]
    if element == TensorProto.INT32:
        nodes = [helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
                 helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"])]
    else:  # ONNX Runtime's CPU Add and Sub take 32- and 64-bit types: compute in INT32, wrapping
        nodes = [helper.make_node("Cast", ["INPUT0"], ["a"], to=TensorProto.INT32),
                 helper.make_node("Cast", ["INPUT1"], ["b"], to=TensorProto.INT32),
                 helper.make_node("Add", ["a", "b"], ["sum"]),
                 helper.make_node("Sub", ["a", "b"], ["difference"]),
                 helper.make_node("Cast", ["sum"], ["OUTPUT0"], to=element),
                 helper.make_node("Cast", ["difference"], ["OUTPUT1"], to=element)]
    return helper.make_graph(nodes, "simple", x, y)


def add_sub_strings():
    shape = ("batch", 16)
    x = [helper.make_tensor_value_info(n, TensorProto.STRING, shape) for n in ("INPUT0", "INPUT1")]
    y = [helper.make_tensor_value_info(n, TensorProto.STRING, shape) for n in ("OUTPUT0", "OUTPUT1")]
    nodes = [helper.make_node("Cast", ["INPUT0"], ["a"], to=TensorProto.INT32),
             helper.make_node("Cast", ["INPUT1"], ["b"], to=TensorProto.INT32),
             helper.make_node("Add", ["a", "b"], ["sum"]),
             helper.make_node("Sub", ["a", "b"], ["difference"]),
             helper.make_node("Cast", ["sum"], ["OUTPUT0"], to=TensorProto.STRING),
             helper.make_node("Cast", ["difference"], ["OUTPUT1"], to=TensorProto.STRING)]
    return helper.make_graph(nodes, "simple_string", x, y)


def sequence():
    shape = ("batch", 1)
    x = [helper.make_tensor_value_info(n, TensorProto.INT32, shape)
         for n in ("INPUT", "START", "READY")]
    y = [helper.make_tensor_value_info("OUTPUT", TensorProto.INT32, shape)]
    nodes = [helper.make_node("Add", ["INPUT", "START"], ["sum"]),
             helper.make_node("Mul", ["READY", "sum"], ["OUTPUT"])]
    return helper.make_graph(nodes, "simple_sequence", x, y)


def dense_weights(inputs, classes, seed):
    """The classifier's weights: the same for the file and for the test's expectations."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((classes, inputs)).astype(np.float32),
            rng.standard_normal(classes).astype(np.float32))


DENSENET = {"classes": 1000, "seed": 11}
INCEPTION = {"classes": 1001, "seed": 12}


def densenet_scores(images):
    """What densenet_onnx's stand-in gives for images [batch, 3, 224, 224]: [batch, 1000]."""
    w, b = dense_weights(3, DENSENET["classes"], DENSENET["seed"])
    return images.mean(axis=(2, 3)) @ w.T + b


def inception_scores(image):
    """What inception_onnx's stand-in gives for an image [299, 299, 3]: [1001], a softmax."""
    w, b = dense_weights(3, INCEPTION["classes"], INCEPTION["seed"])
    z = w @ image.mean(axis=(0, 1)) + b
    e = np.exp(z - z.max())
    return e / e.sum()


def densenet():
    # data_0 [batch, 3, 224, 224] -> fc6_1 [batch, 1000, 1, 1], as the published model.
    w, b = dense_weights(3, DENSENET["classes"], DENSENET["seed"])
    conv_w = numpy_helper.from_array(w.reshape(DENSENET["classes"], 3, 1, 1), "w")
    conv_b = numpy_helper.from_array(b, "b")
    x = helper.make_tensor_value_info("data_0", TensorProto.FLOAT, ("batch", 3, 224, 224))
    y = helper.make_tensor_value_info("fc6_1", TensorProto.FLOAT, ("batch", 1000, 1, 1))
    nodes = [helper.make_node("GlobalAveragePool", ["data_0"], ["pooled"]),
             helper.make_node("Conv", ["pooled", "w", "b"], ["fc6_1"], kernel_shape=[1, 1])]
    return helper.make_graph(nodes, "densenet", [x], [y], initializer=[conv_w, conv_b])


def inception():
    # input:0 [1, 299, 299, 3] (NHWC) -> softmax [1, 1001], as the published model.
    w, b = dense_weights(3, INCEPTION["classes"], INCEPTION["seed"])
    conv_w = numpy_helper.from_array(w.reshape(INCEPTION["classes"], 3, 1, 1), "w")
    conv_b = numpy_helper.from_array(b, "b")
    shape = numpy_helper.from_array(np.array([1, INCEPTION["classes"]], dtype=np.int64), "shape")
    x = helper.make_tensor_value_info("input:0", TensorProto.FLOAT, (1, 299, 299, 3))
    y = helper.make_tensor_value_info("InceptionV3/Predictions/Softmax:0", TensorProto.FLOAT,
                                      (1, INCEPTION["classes"]))
    nodes = [helper.make_node("Transpose", ["input:0"], ["nchw"], perm=[0, 3, 1, 2]),
             helper.make_node("GlobalAveragePool", ["nchw"], ["pooled"]),
             helper.make_node("Conv", ["pooled", "w", "b"], ["logits4"], kernel_shape=[1, 1]),
             helper.make_node("Reshape", ["logits4", "shape"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["InceptionV3/Predictions/Softmax:0"],
                              axis=1)]
    return helper.make_graph(nodes, "inception", [x], [y], initializer=[conv_w, conv_b, shape])


def labels(count, prefix):
    return "".join("%s %d\n" % (prefix, i) for i in range(count))


def make(out):
    """Copies the configs into `out` and writes the model and label files beside them."""
    shutil.copytree(CONFIGS, out, dirs_exist_ok=True)
    save(add_sub(TensorProto.INT32), os.path.join(out, "simple/1/model.onnx"))
    save(add_sub(TensorProto.INT8), os.path.join(out, "simple_int8/1/model.onnx"))
    save(add_sub_strings(), os.path.join(out, "simple_string/1/model.onnx"))
    save(sequence(), os.path.join(out, "simple_sequence/1/model.onnx"))
    save(densenet(), os.path.join(out, "densenet_onnx/1/model.onnx"))
    save(inception(), os.path.join(out, "inception_onnx/1/model.onnx"))
    with open(os.path.join(out, "densenet_onnx/densenet_labels.txt"), "w") as f:
        f.write(labels(DENSENET["classes"], "densenet class"))
    with open(os.path.join(out, "inception_onnx/inception_labels.txt"), "w") as f:
        f.write(labels(INCEPTION["classes"], "inception class"))
    os.makedirs(os.path.join(out, "simple_identity", "1"), exist_ok=True)
    shutil.copy(os.path.join(HERE, "..", "python_backend", "models", "simple_identity", "1",
                             "model.py"), os.path.join(out, "simple_identity/1/model.py"))
    os.makedirs(os.path.join(out, "simple_dyna_sequence", "1"), exist_ok=True)
    return out


if __name__ == "__main__":
    make(sys.argv[1])
