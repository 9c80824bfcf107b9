"""Overflow model: activations above FP16's 65504 before a normalization.

usage: overflow_test.py PRECIS WORKDIR

The model: x[4,64] -> MatMul(W1, entries ~U(0, 5000)) -> Relu -> MatMul(W2) -> LayerNormalization.
With inputs in [0, 1) the first product reaches ~1.5e5: stored in FP16 it becomes Inf, and the
normalization turns that into NaN. Checks:
  1. the FP16 plan compiled without calibration gives Inf/NaN (the failure is real);
  2. with --calibrate random:4 the FP16 plan is finite and within relative L2 1e-2 of the FP32
     plan (FP16 storage of the remaining low tensors, as in the model tests), and its report names
     the first MatMul with reason range-overflow and the calibrated range as evidence.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_model(path):
    rng = np.random.default_rng(7)
    w1 = rng.uniform(0, 5000, (64, 128)).astype(np.float32)
    w2 = rng.uniform(-0.05, 0.05, (128, 32)).astype(np.float32)
    scale = np.ones(32, np.float32)
    bias = np.zeros(32, np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="big_matmul"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["m"], name="proj"),
        helper.make_node("LayerNormalization", ["m", "scale", "bias"], ["y"], name="norm", axis=-1),
    ]
    graph = helper.make_graph(nodes, "overflow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32])],
                              [numpy_helper.from_array(a, n) for a, n in [(w1, "w1"), (w2, "w2"), (scale, "scale"), (bias, "bias")]])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def run(precis, *args):
    r = subprocess.run([precis, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: precis {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def main():
    precis, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "overflow.onnx")
    make_model(model)
    x = np.random.default_rng(1).uniform(0, 1, (4, 64)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    outputs = {}
    for tag, extra in [("fp32", ["--precision", "fp32"]), ("fp16", ["--precision", "fp16"]),
                       ("calibrated", ["--precision", "fp16", "--calibrate", "random:4", "--report", os.path.join(work, "report.json")])]:
        plan = os.path.join(work, tag + ".plan")
        run(precis, "compile", model, "-o", plan, "--quiet", *extra)
        out = os.path.join(work, tag)
        run(precis, "run", plan, "--input", "x=" + os.path.join(work, "x.npy"), "--output-dir", out)
        outputs[tag] = np.load(os.path.join(out, "y.npy"))
    h_max = float(np.abs(x @ onnx.numpy_helper.to_array(onnx.load(model).graph.initializer[0])).max())
    print(f"max |h| = {h_max:.4g} (FP16 max 65504)")
    failures = []
    if not np.isfinite(outputs["fp32"]).all():
        failures.append("the FP32 plan is not finite")
    if np.isfinite(outputs["fp16"]).all():
        failures.append("the uncalibrated FP16 plan is finite: the model does not overflow")
    else:
        print("uncalibrated fp16: Inf/NaN in output (expected)")
    cal = outputs["calibrated"]
    rel = float(np.linalg.norm(cal.astype(np.float64) - outputs["fp32"]) / np.linalg.norm(outputs["fp32"].astype(np.float64)))
    print(f"calibrated fp16: finite={bool(np.isfinite(cal).all())}, relative L2 vs fp32 {rel:.3g}")
    if not np.isfinite(cal).all() or rel > 1e-2:
        failures.append(f"calibrated FP16 plan: finite={bool(np.isfinite(cal).all())}, relative L2 {rel:.3g} > 1e-2")
    report = json.load(open(os.path.join(work, "report.json")))
    node = next((n for n in report["nodes"] if n["name"] == "big_matmul"), None)
    if node is None or node["reason"] != "range-overflow" or "max |h|" not in node["evidence"]:
        failures.append(f"report: big_matmul should have reason range-overflow with the range, got {node and (node['reason'], node['evidence'])}")
    else:
        print(f"report: big_matmul {node['reason']}: {node['evidence']}")
    if not report.get("calibration") or not any(r["name"] == "h" for r in report["calibration"]["ranges"]):
        failures.append("report: calibration ranges lack 'h'")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
