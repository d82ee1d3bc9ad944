"""A boosted decision tree as the field exports one from XGBoost or scikit-learn: ONNX's
ai.onnx.ml TreeEnsembleRegressor summing the trees' leaf weights, then a Sigmoid for a
signal probability. Written with onnx's helper (no converter is packaged in Debian); the
reference answers come from walking the same trees in numpy.

  bdt_onnx   8 features -> 1 probability, 50 trees of depth 3
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

FEATURES = 8
TREES = 50
DEPTH = 3
BATCH = 4


def random_trees(rng):
    """Per tree: for each internal node (breadth-first, children of i at 2i+1 and 2i+2) a
    feature and a threshold; for each leaf a weight."""
    internal = 2 ** DEPTH - 1
    return [(rng.integers(0, FEATURES, internal), rng.standard_normal(internal).astype(np.float32),
             (rng.standard_normal(2 ** DEPTH) * 0.1).astype(np.float32)) for _ in range(TREES)]


def ensemble_node(trees):
    attributes = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids",
                                  "nodes_values", "nodes_modes", "nodes_truenodeids",
                                  "nodes_falsenodeids", "target_treeids", "target_nodeids",
                                  "target_ids", "target_weights")}
    internal = 2 ** DEPTH - 1
    for t, (features, thresholds, leaves) in enumerate(trees):
        for node in range(2 * internal + 1):
            leaf = node >= internal
            attributes["nodes_treeids"].append(t)
            attributes["nodes_nodeids"].append(node)
            attributes["nodes_featureids"].append(0 if leaf else int(features[node]))
            attributes["nodes_values"].append(0.0 if leaf else float(thresholds[node]))
            attributes["nodes_modes"].append("LEAF" if leaf else "BRANCH_LEQ")
            attributes["nodes_truenodeids"].append(0 if leaf else 2 * node + 1)
            attributes["nodes_falsenodeids"].append(0 if leaf else 2 * node + 2)
            if leaf:
                attributes["target_treeids"].append(t)
                attributes["target_nodeids"].append(node)
                attributes["target_ids"].append(0)
                attributes["target_weights"].append(float(leaves[node - internal]))
    return helper.make_node("TreeEnsembleRegressor", ["features"], ["score"], domain="ai.onnx.ml",
                            n_targets=1, aggregate_function="SUM", **attributes)


def predict(trees, x):
    internal = 2 ** DEPTH - 1
    score = np.zeros(len(x), dtype=np.float64)
    for features, thresholds, leaves in trees:
        for row in range(len(x)):
            node = 0
            while node < internal:
                node = 2 * node + 1 if x[row, features[node]] <= thresholds[node] else 2 * node + 2
            score[row] += leaves[node - internal]
    return (1 / (1 + np.exp(-score))).astype(np.float32).reshape(-1, 1)


CONFIG = """name: "bdt_onnx"
platform: "onnxruntime_onnx"
max_batch_size: 64
input [ { name: "features" data_type: TYPE_FP32 dims: [ 8 ] } ]
output [ { name: "probability" data_type: TYPE_FP32 dims: [ 1 ] } ]
"""


def export(out):
    rng = np.random.default_rng(2026)
    trees = random_trees(rng)
    graph = helper.make_graph(
        [ensemble_node(trees), helper.make_node("Sigmoid", ["score"], ["probability"])], "bdt",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", FEATURES])],
        [helper.make_tensor_value_info("probability", TensorProto.FLOAT, ["batch", 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("ai.onnx.ml", 3)])
    onnx.checker.check_model(model)
    directory = os.path.join(out, "repository", "bdt_onnx")
    os.makedirs(os.path.join(directory, "1"), exist_ok=True)
    onnx.save(model, os.path.join(directory, "1", "model.onnx"))
    with open(os.path.join(directory, "config.pbtxt"), "w") as f:
        f.write(CONFIG)
    x = rng.standard_normal((BATCH, FEATURES)).astype(np.float32)
    reference = os.path.join(out, "reference", "bdt_onnx")
    os.makedirs(reference, exist_ok=True)
    np.save(os.path.join(reference, "features.npy"), x)
    np.save(os.path.join(reference, "probability.npy"), predict(trees, x))
