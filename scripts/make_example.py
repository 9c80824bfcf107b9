"""Builds the bundled example model examples/tiny_convnet.onnx (run with .venv/bin/python).

A small image classifier with the shapes of a real one: Conv/BatchNormalization/Relu/MaxPool
twice, GlobalAveragePool, Flatten, Gemm and Softmax, with a symbolic batch dimension and random
weights from a fixed seed. Small enough to commit, rich enough for the precision pass to have
both compute ops and ops that must stay in FP32.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(out_path):
    rng = np.random.default_rng(20261202)

    def weight(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        weight("conv1.weight", (16, 3, 3, 3), 0.2), weight("conv1.bias", (16,), 0.05),
        numpy_helper.from_array((1.0 + rng.standard_normal(16) * 0.1).astype(np.float32), "bn1.scale"),
        weight("bn1.bias", (16,), 0.1),
        weight("bn1.mean", (16,), 0.1),
        numpy_helper.from_array((rng.random(16) + 0.5).astype(np.float32), "bn1.var"),
        weight("conv2.weight", (32, 16, 3, 3), 0.1), weight("conv2.bias", (32,), 0.05),
        weight("fc.weight", (10, 32), 0.3), weight("fc.bias", (10,), 0.05),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["c1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"],
                         ["b1"], name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "tiny_convnet",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 32, 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="precis-example", producer_version="1",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, out_path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "examples/tiny_convnet.onnx")
