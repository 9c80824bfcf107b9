"""Kernel form: operators whose meaning changed between ONNX versions, compiled at their old
versions and run by `precis run`, against float64 references written here with numpy (and
onnxruntime for Resize 10, whose rounding rules are that version's own). The emitter rewrites
each version difference into explicit attributes (compiler/ops/step_attrs.cc) and kernels never
see the opset: a wrong rewrite gives the new version's meaning, which these cases tell apart
(legacy Softmax flattens at the axis; Clip 6 bounds are attributes; PRelu 6 slopes are per
channel; GroupNormalization 18 scales are per group; Pad 2 pads are attributes; Resize 10 reads
scales from input 1; Slice 1 and TopK 1 use attributes; ReduceSum 11 axes are an attribute).

Usage: kernel_form_test.py PRECIS. Tolerance: max abs error <= 1e-5 (FP32 kernels against
float64 references on values of magnitude ~1; exact ops must match exactly and do).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PRECIS = sys.argv[1]
rng = np.random.default_rng(7)
failures = []


def model(op, inputs, outputs, opset, attrs=None, inits=()):
    """inputs/outputs: (name, np dtype, shape); inits: (name, array) constants."""
    tp = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64}
    node = helper.make_node(op, [n for n, _, _ in inputs] + [n for n, _ in inits], [n for n, _, _ in outputs], **(attrs or {}))
    graph = helper.make_graph(
        [node], op.lower(),
        [helper.make_tensor_value_info(n, tp[t], s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, tp[t], s) for n, t, s in outputs],
        [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    return m


def run(name, m, feeds, want, tol=1e-5):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.onnx")
        onnx.save(m, path)
        args = [PRECIS, "run", path, "--output-dir", os.path.join(d, "out")]
        for k, v in feeds.items():
            np.save(os.path.join(d, k + ".npy"), v)
            args += ["--input", f"{k}={os.path.join(d, k + '.npy')}"]
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode != 0:
            failures.append(f"{name}: precis run failed: {p.stderr.strip()}")
            print(f"FAIL {name}: precis run failed: {p.stderr.strip()}")
            return
        for out_name, ref in want.items():
            got = np.load(os.path.join(d, "out", out_name + ".npy"))
            if got.shape != ref.shape:
                failures.append(f"{name}: shape {got.shape} != {ref.shape}")
                print(f"FAIL {name}: output {out_name} shape {got.shape}, want {ref.shape}")
                continue
            err = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
            ok = err <= tol
            print(f"{'ok  ' if ok else 'FAIL'} {name} {out_name}: max abs err {err:.3g}")
            if not ok:
                failures.append(f"{name}: max abs err {err:.3g} > {tol}")


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# Softmax/LogSoftmax/Hardmax before 13: flattened to 2-D at axis (default 1).
x = f32(2, 3, 4)
x64 = x.astype(np.float64)
for opset in (11, 13):
    for op in ("Softmax", "LogSoftmax", "Hardmax"):
        for axis in (None, 1):
            attrs = {} if axis is None else {"axis": axis}
            if opset < 13:
                a = 1 if axis is None else axis
                rows = x64.reshape(int(np.prod(x.shape[:a])), -1)
                ax = 1
            else:
                a = -1 if axis is None else axis
                rows, ax = x64, a
            e = np.exp(rows - rows.max(axis=ax, keepdims=True))
            if op == "Softmax":
                ref = e / e.sum(axis=ax, keepdims=True)
            elif op == "LogSoftmax":
                ref = (rows - rows.max(axis=ax, keepdims=True)) - np.log(e.sum(axis=ax, keepdims=True))
            else:
                ref = np.zeros_like(rows)
                np.put_along_axis(ref, np.expand_dims(np.argmax(rows, axis=ax), ax), 1.0, axis=ax)
            run(f"{op}-{opset} axis={axis}", model(op, [("x", np.float32, x.shape)], [("y", np.float32, x.shape)], opset, attrs),
                {"x": x}, {"y": ref.reshape(x.shape)})

# Clip 6: bounds as attributes, and their defaults (unbounded).
x = f32(3, 5) * 3
run("Clip-6 min/max", model("Clip", [("x", np.float32, x.shape)], [("y", np.float32, x.shape)], 6, {"min": -0.5, "max": 1.25}),
    {"x": x}, {"y": np.clip(x.astype(np.float64), -0.5, 1.25)})
run("Clip-6 defaults", model("Clip", [("x", np.float32, x.shape)], [("y", np.float32, x.shape)], 6),
    {"x": x}, {"y": x.astype(np.float64)})
run("Clip-11 inputs", model("Clip", [("x", np.float32, x.shape)], [("y", np.float32, x.shape)], 11,
                            inits=[("lo", np.array(-0.25, np.float32)), ("hi", np.array(0.75, np.float32))]),
    {"x": x}, {"y": np.clip(x.astype(np.float64), -0.25, 0.75)})

# PRelu 6: a 1-D slope of X's dim-1 size is per channel (dim 1), not broadcast over the last dim.
x = f32(2, 3, 4, 3)
slope = np.array([0.1, 0.5, 2.0], np.float32)
ref = np.where(x < 0, x.astype(np.float64) * slope.astype(np.float64).reshape(3, 1, 1), x)
run("PRelu-6 per channel", model("PRelu", [("x", np.float32, x.shape)], [("y", np.float32, x.shape)], 6, inits=[("slope", slope)]),
    {"x": x}, {"y": ref})
ref7 = np.where(x < 0, x.astype(np.float64) * slope.astype(np.float64), x)  # numpy broadcasting from 7
run("PRelu-7 broadcast", model("PRelu", [("x", np.float32, x.shape)], [("y", np.float32, x.shape)], 7, inits=[("slope", slope)]),
    {"x": x}, {"y": ref7})

# GroupNormalization 18: scale and bias per group; 21: per channel.
x = f32(2, 4, 3, 3)
g = 2
xs = x.astype(np.float64).reshape(2, g, -1)
norm = ((xs - xs.mean(-1, keepdims=True)) / np.sqrt(xs.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
sg, bg = np.array([1.5, -0.5], np.float32), np.array([0.25, 1.0], np.float32)
ref = norm * np.repeat(sg, 2).reshape(1, 4, 1, 1) + np.repeat(bg, 2).reshape(1, 4, 1, 1)
run("GroupNormalization-18", model("GroupNormalization", [("x", np.float32, x.shape)], [("y", np.float32, x.shape)], 18,
                                   {"num_groups": g, "epsilon": 1e-5}, inits=[("s", sg), ("b", bg)]), {"x": x}, {"y": ref})
sc, bc = np.array([1.5, -0.5, 2.0, 0.5], np.float32), np.array([0.25, 1.0, 0.0, -1.0], np.float32)
ref = norm * sc.reshape(1, 4, 1, 1) + bc.reshape(1, 4, 1, 1)
run("GroupNormalization-21", model("GroupNormalization", [("x", np.float32, x.shape)], [("y", np.float32, x.shape)], 21,
                                   {"num_groups": g, "epsilon": 1e-5}, inits=[("s", sc), ("b", bc)]), {"x": x}, {"y": ref})

# Pad 2: pads and value as attributes.
x = f32(2, 3)
ref = np.pad(x.astype(np.float64), ((1, 0), (2, 1)), constant_values=-1.5)
run("Pad-2 attributes", model("Pad", [("x", np.float32, x.shape)], [("y", np.float32, ref.shape)], 2,
                              {"pads": [1, 2, 0, 1], "value": -1.5}), {"x": x}, {"y": ref})
run("Pad-11 inputs", model("Pad", [("x", np.float32, x.shape)], [("y", np.float32, ref.shape)], 11,
                           inits=[("pads", np.array([1, 2, 0, 1], np.int64)), ("v", np.array(-1.5, np.float32))]), {"x": x}, {"y": ref})

# Slice 1: starts/ends/axes as attributes.
x = f32(6, 8)
run("Slice-1 attributes", model("Slice", [("x", np.float32, x.shape)], [("y", np.float32, (3, 8))], 1,
                                {"starts": [1], "ends": [-2], "axes": [0]}), {"x": x}, {"y": x[1:-2].astype(np.float64)})

# TopK 1: k as an attribute.
x = f32(3, 7)
idx = np.argsort(-x, axis=1, kind="stable")[:, :3]
run("TopK-1 attribute", model("TopK", [("x", np.float32, x.shape)], [("v", np.float32, (3, 3)), ("i", np.int64, (3, 3))], 1, {"k": 3}),
    {"x": x}, {"v": np.take_along_axis(x, idx, 1).astype(np.float64), "i": idx.astype(np.float64)})

# ReduceSum 11 / ReduceMean 13: axes as an attribute; ReduceSum 13: axes as input 1.
x = f32(3, 4, 5)
run("ReduceSum-11 attribute", model("ReduceSum", [("x", np.float32, x.shape)], [("y", np.float32, (3, 1, 5))], 11, {"axes": [1]}),
    {"x": x}, {"y": x.astype(np.float64).sum(1, keepdims=True)})
run("ReduceMean-13 attribute", model("ReduceMean", [("x", np.float32, x.shape)], [("y", np.float32, (3, 4))], 13, {"axes": [2], "keepdims": 0}),
    {"x": x}, {"y": x.astype(np.float64).mean(2)})
run("ReduceSum-13 input", model("ReduceSum", [("x", np.float32, x.shape)], [("y", np.float32, (1, 4, 1))], 13,
                                inits=[("axes", np.array([0, 2], np.int64))]), {"x": x}, {"y": x.astype(np.float64).sum((0, 2), keepdims=True)})

# Shape 15 start/end; Shape 13 has none.
run("Shape-15 start", model("Shape", [("x", np.float32, x.shape)], [("s", np.int64, (2,))], 15, {"start": 1}),
    {"x": x}, {"s": np.array([4, 5], np.float64)})

# Upsample 7 (scales attribute) and 9 (scales input); Resize 10 (scales input 1, asymmetric).
x = f32(1, 1, 3, 3)
up = np.repeat(np.repeat(x.astype(np.float64), 2, axis=2), 2, axis=3)
run("Upsample-7 attribute", model("Upsample", [("x", np.float32, x.shape)], [("y", np.float32, (1, 1, 6, 6))], 7,
                                  {"mode": "nearest", "scales": [1.0, 1.0, 2.0, 2.0]}), {"x": x}, {"y": up})
run("Upsample-9 input", model("Upsample", [("x", np.float32, x.shape)], [("y", np.float32, (1, 1, 6, 6))], 9, {"mode": "nearest"},
                              inits=[("scales", np.array([1, 1, 2, 2], np.float32))]), {"x": x}, {"y": up})
try:
    import onnxruntime as ort
except ImportError:
    ort = None
if ort is None:
    failures.append("Resize-10: onnxruntime is missing from the test environment (scripts/install-deps.sh installs it)")
else:
    for mode, scales, out in (("linear", [1, 1, 2, 2.5], (1, 1, 6, 7)), ("nearest", [1, 1, 0.5, 0.7], (1, 1, 1, 2))):
        xin = f32(1, 1, 3, 3)
        m = model("Resize", [("x", np.float32, xin.shape)], [("y", np.float32, out)], 10, {"mode": mode},
                  inits=[("scales", np.array(scales, np.float32))])
        ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": xin})[0]
        run(f"Resize-10 {mode}", m, {"x": xin}, {"y": ref.astype(np.float64)})

if failures:
    print(f"{len(failures)} failure(s):")
    for f in failures:
        print("  " + f)
    sys.exit(1)
print("all kernel-form cases pass")
