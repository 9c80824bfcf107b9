"""Precision rules for values outside FP16's normal range, and the error budget's regions.

usage: range_rules_test.py PRECIS WORKDIR

Every model here has unnamed nodes (as many exporters write them) and is compared against a
float64 NumPy reference of the same graph, not against the FP32 plan alone. Cases:

  tiny-weights   Conv 3->8 3x3 (weights N(0,1)*1e-7) -> Relu -> Flatten -> Gemm 2048->10: the Conv
                 weights are subnormal in FP16. Forced low (--force-low) the FP16 plan is off by
                 rel L2 > 5e-2 (the failure is real); by default the Conv stays FP32 with reason
                 constant-range, and the plan is within 1e-2 of float64. --error-budget 1e-3 keeps
                 the whole model within 1e-2 as well.
  shrinking      six MatMuls 64x64 with weights N(0,1)*2e-3: activations shrink from ~1 to ~1e-14.
                 Uncalibrated, the FP16 output is all zero; with --calibrate random:4 the layers
                 whose tensors lie below 6.1e-5 stay FP32 (reason range-underflow, with the range)
                 and the output is within 1e-2 of float64.
  region-walk    Conv (normal weights) -> Mul 1e-4 -> Mul 1e-4 -> Relu -> Flatten -> Gemm: one 16-bit
                 region whose activations become subnormal inside it. --error-budget 1e-3 must
                 measure it over budget (its input is the model input, not the Relu output reached
                 through Flatten) and keep it FP32: within 1e-2 of float64.
  bn-fold        Conv (weights N(0,1)*0.02) -> BatchNormalization with scale 1e-3: folding would
                 make the FP16 weights ~2e-5, mostly subnormal. The FP16 plan keeps the
                 BatchNormalization apart (evidence "not folded"), the Conv runs in FP16, and the
                 output is within 1e-2 of float64; the FP32 plan still folds it.

Tolerances: 1e-2 relative L2 is the model tests' bound for FP16 storage of activations; 5e-2 is
far above FP16 rounding, so a plan that loses the tiny values cannot pass for one that keeps them.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(path, nodes, inputs, outputs, inits, opset=13):
    graph = helper.make_graph(nodes, os.path.basename(path), inputs, outputs,
                              [numpy_helper.from_array(a, n) for n, a in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)


def conv2d(x, w, pad):
    """float64 NCHW convolution, stride 1."""
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, m, oh, ow))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,mc->nmhw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return y


def rel(y, ref):
    return float(np.linalg.norm(y.astype(np.float64) - ref) / np.linalg.norm(ref))


class Case:
    def __init__(self, precis, work, name):
        self.precis, self.dir = precis, os.path.join(work, name)
        os.makedirs(self.dir, exist_ok=True)
        self.model = os.path.join(self.dir, "model.onnx")
        self.failures = []

    def compile_and_run(self, tag, x, *args):
        """Compiles with ARGS, runs on x; returns (output, report, compile stderr)."""
        plan, report = os.path.join(self.dir, tag + ".plan"), os.path.join(self.dir, tag + ".json")
        r = subprocess.run([self.precis, "compile", self.model, "-o", plan, "--quiet", "--report", report, *args],
                           capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"FAIL: compile {tag}: {r.stderr.strip()}")
        np.save(os.path.join(self.dir, "x.npy"), x)
        out = os.path.join(self.dir, tag)
        rr = subprocess.run([self.precis, "run", plan, "--input", "x=" + os.path.join(self.dir, "x.npy"), "--output-dir", out],
                            capture_output=True, text=True)
        if rr.returncode:
            sys.exit(f"FAIL: run {tag}: {rr.stderr.strip()}")
        return np.load(os.path.join(out, "y.npy")), json.load(open(report)), r.stderr

    def check(self, ok, message):
        print(("ok:   " if ok else "FAIL: ") + message)
        if not ok:
            self.failures.append(message)


def nodes_with(report, reason):
    return [n for n in report["nodes"] if n["reason"] == reason]


def tiny_weights(precis, work):
    c = Case(precis, work, "tiny-weights")
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((8, 3, 3, 3)) * 1e-7).astype(np.float32)
    g = (rng.standard_normal((10, 2048)) * 1e-2).astype(np.float32)
    save(c.model, [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
                   helper.make_node("Flatten", ["r"], ["f"]), helper.make_node("Gemm", ["f", "g"], ["y"], transB=1)],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], {"w": w, "g": g})
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    ref = np.maximum(conv2d(x.astype(np.float64), w.astype(np.float64), 1), 0).reshape(1, -1) @ g.astype(np.float64).T
    forced, _, _ = c.compile_and_run("forced", x, "--precision", "fp16", "--force-low", "Conv")
    c.check(rel(forced, ref) > 5e-2, f"Conv forced to FP16: rel L2 {rel(forced, ref):.3g} > 5e-2 (subnormal weights lose the model)")
    y, report, _ = c.compile_and_run("fp16", x, "--precision", "fp16")
    kept = nodes_with(report, "constant-range")
    c.check(rel(y, ref) < rel(forced, ref) / 4, f"fp16: rel L2 {rel(y, ref):.3g}, a quarter of forced low's at most (the Gemm still reads "
            "the tiny activations in FP16: only calibration can see them)")
    c.check(len(kept) == 1 and kept[0]["op"] == "Conv" and "below 6.1e-05" in kept[0]["evidence"],
            f"fp16 report: the Conv kept FP32 for constant-range with evidence ({[(n['op'], n['evidence']) for n in kept]})")
    y, report, _ = c.compile_and_run("calibrated", x, "--precision", "fp16", "--calibrate", "random:4")
    c.check(rel(y, ref) < 1e-2, f"calibrated fp16: rel L2 {rel(y, ref):.3g} < 1e-2")
    c.check(any(n["op"] == "Gemm" and n["reason"] == "range-underflow" for n in report["nodes"]), "calibrated: the Gemm kept FP32 for range-underflow")
    y, report, err = c.compile_and_run("budget", x, "--precision", "fp16", "--error-budget", "1e-3")
    c.check(rel(y, ref) < 1e-2, f"fp16 --error-budget 1e-3: rel L2 {rel(y, ref):.3g} < 1e-2 ({err.strip().splitlines()[-1]})")
    y, _, _ = c.compile_and_run("bf16", x, "--precision", "bf16")
    c.check(rel(y, ref) < 2e-2, f"bf16 (FP32's range, 8-bit mantissa): rel L2 {rel(y, ref):.3g} < 2e-2")
    return c.failures


def shrinking(precis, work):
    c = Case(precis, work, "shrinking")
    rng = np.random.default_rng(2)
    ws = {f"w{i}": (rng.standard_normal((64, 64)) * 2e-3).astype(np.float32) for i in range(6)}
    names = ["x"] + [f"h{i}" for i in range(5)] + ["y"]
    save(c.model, [helper.make_node("MatMul", [names[i], f"w{i}"], [names[i + 1]]) for i in range(6)],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])], ws)
    x = rng.uniform(-1, 1, (4, 64)).astype(np.float32)
    ref = x.astype(np.float64)
    for i in range(6):
        ref = ref @ ws[f"w{i}"].astype(np.float64)
    print(f"shrinking: max |y| = {np.abs(ref).max():.3g}")
    y, _, _ = c.compile_and_run("fp16", x, "--precision", "fp16")
    c.check(not np.any(y), f"uncalibrated fp16: output all zero ({np.count_nonzero(y)} nonzero): the failure is real")
    y, report, _ = c.compile_and_run("calibrated", x, "--precision", "fp16", "--calibrate", "random:4")
    kept = nodes_with(report, "range-underflow")
    c.check(rel(y, ref) < 1e-2, f"calibrated fp16: rel L2 {rel(y, ref):.3g} < 1e-2")
    c.check(len(kept) >= 3 and all("smallest normal" in n["evidence"] for n in kept),
            f"calibrated report: {len(kept)} MatMuls kept FP32 for range-underflow (>= 3), e.g. {kept[0]['evidence'] if kept else None}")
    c.check(any(n["op"] == "MatMul" and n["precision"] == "f16" for n in report["nodes"]),
            "calibrated: the first MatMuls (normal range) still run in FP16")
    return c.failures


def region_walk(precis, work):
    c = Case(precis, work, "region-walk")
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    g = (rng.standard_normal((10, 2048)) * 1e-2).astype(np.float32)
    k = np.array(1e-4, np.float32)
    save(c.model, [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Mul", ["c", "k"], ["m1"]),
                   helper.make_node("Mul", ["m1", "k"], ["m2"]), helper.make_node("Relu", ["m2"], ["r"]),
                   helper.make_node("Flatten", ["r"], ["f"]), helper.make_node("Gemm", ["f", "g"], ["y"], transB=1)],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], {"w": w, "g": g, "k": k})
    x = rng.uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)
    ref = np.maximum(conv2d(x.astype(np.float64), w.astype(np.float64), 1) * 1e-8, 0).reshape(1, -1) @ g.astype(np.float64).T
    y, _, _ = c.compile_and_run("fp16", x, "--precision", "fp16")
    c.check(rel(y, ref) > 5e-2, f"fp16 without a budget: rel L2 {rel(y, ref):.3g} > 5e-2 (the failure is real)")
    y, report, err = c.compile_and_run("budget", x, "--precision", "fp16", "--error-budget", "1e-3")
    summary = err.strip().splitlines()[-1] if err.strip() else ""
    c.check("1 over budget" in summary, f"--error-budget 1e-3 measures the region over budget: '{summary}'")
    c.check(len(nodes_with(report, "error-budget")) >= 4, f"{len(nodes_with(report, 'error-budget'))} unnamed nodes kept FP32 by the budget (>= 4)")
    c.check(rel(y, ref) < 1e-2, f"fp16 --error-budget 1e-3: rel L2 {rel(y, ref):.3g} < 1e-2")
    return c.failures


def bn_fold(precis, work):
    c = Case(precis, work, "bn-fold")
    rng = np.random.default_rng(4)
    w = (rng.standard_normal((8, 3, 3, 3)) * 0.01).astype(np.float32)
    scale = np.full(8, 5e-5, np.float32)
    zeros = np.zeros(8, np.float32)
    var = rng.uniform(0.5, 1.5, 8).astype(np.float32)
    w2 = (rng.standard_normal((4, 8, 1, 1)) * 7e3).astype(np.float32)
    save(c.model, [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                   helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["b"], epsilon=1e-5),
                   helper.make_node("Relu", ["b"], ["r"]), helper.make_node("Conv", ["r", "w2"], ["y"])],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])],
         {"w": w, "scale": scale, "bias": zeros, "mean": zeros, "var": var, "w2": w2})
    x = rng.uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)
    s = (scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + 1e-5)).reshape(1, 8, 1, 1)
    r = np.maximum(conv2d(x.astype(np.float64), w.astype(np.float64), 1) * s, 0)
    ref = conv2d(r, w2.astype(np.float64), 0)
    _, report32, _ = c.compile_and_run("fp32", x, "--precision", "fp32")
    c.check(not any(n["op"] == "BatchNormalization" for n in report32["nodes"]), "fp32: the BatchNormalization is folded")
    y, report, _ = c.compile_and_run("fp16", x, "--precision", "fp16", "--calibrate", "random:4")
    bn = [n for n in report["nodes"] if n["op"] == "BatchNormalization"]
    conv1 = next(n for n in report["nodes"] if n["op"] == "Conv")
    c.check(len(bn) == 1 and "not folded into Conv" in bn[0]["evidence"] and "below 6.1e-05" in bn[0]["evidence"],
            f"fp16: the BatchNormalization stays apart with evidence ({bn[0]['evidence'] if bn else 'folded'})")
    c.check(conv1["precision"] == "f16", f"fp16: the first Conv runs in FP16 with its unfolded weights ({conv1['precision']}, {conv1['reason']})")
    c.check(rel(y, ref) < 1e-2, f"calibrated fp16: rel L2 {rel(y, ref):.3g} < 1e-2")
    return c.failures


def main():
    precis, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    failures = []
    for case in (tiny_weights, shrinking, region_walk, bn_fold):
        print(f"--- {case.__name__}")
        failures += case(precis, work)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
