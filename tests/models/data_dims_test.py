"""Data-dependent sizes (NonMaxSuppression, Unique, NonZero, Compress) in whole models, against
onnxruntime.

usage: data_dims_test.py PRECIS WORKDIR

Models (hand-built, random inputs with fixed seeds):
  - detect: detection post-processing. NonMaxSuppression over 2 classes of 24 boxes (at most 20
    per class, IoU 0.3, score 0.5), then the selected boxes gathered, their areas computed and
    a per-box score picked with GatherND. Run at three draws: the selected count differs.
  - unique: Unique (sorted) of an int64 vector of symbolic length, its counts cast to float and
    multiplied by the distinct values; run at lengths 1, 7 and 40.
  - masked: the mean of the entries of x above a threshold given as an input (NonZero ->
    GatherND -> ReduceMean), symbolic batch; a threshold above every value gives an empty
    selection. ONNX leaves ReduceMean of nothing undefined: onnxruntime gives 0, Precis numpy's
    NaN (0 / 0), and that case is compared with numpy.
Each model is compiled once (a dynamic plan) and run at every input. Tolerances: FP32 outputs
within 1e-6 absolute + 1e-6 relative of onnxruntime (the same FP32 operations) and integer
outputs equal; FP16/BF16 plans: integer outputs (selected indices, counts) equal, float outputs
within rel L2 1e-2 / 4e-2 (NonMaxSuppression keeps its boxes and scores in FP32, so the
selection does not change).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from checks import Checks, run_plan


def tensor(name, dims, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, dims)


def detect_model():
    consts = [numpy_helper.from_array(np.array([20], np.int64), "max_out"), numpy_helper.from_array(np.array([0.3], np.float32), "iou"),
              numpy_helper.from_array(np.array([0.5], np.float32), "score_th"), numpy_helper.from_array(np.array([2], np.int64), "two"),
              numpy_helper.from_array(np.array([0], np.int64), "zero"), numpy_helper.from_array(np.array([1], np.int64), "one"),
              numpy_helper.from_array(np.array([0, 1], np.int64), "cols01"), numpy_helper.from_array(np.array([2, 3], np.int64), "cols23")]
    nodes = [
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score_th"], ["sel"]),
        helper.make_node("Gather", ["sel", "two"], ["box_col"], axis=1),
        helper.make_node("Squeeze", ["box_col", "one"], ["box_idx"]),
        helper.make_node("Squeeze", ["boxes", "zero"], ["boxes2d"]),
        helper.make_node("Gather", ["boxes2d", "box_idx"], ["chosen"], axis=0),
        helper.make_node("Gather", ["chosen", "cols01"], ["lo"], axis=1),
        helper.make_node("Gather", ["chosen", "cols23"], ["hi"], axis=1),
        helper.make_node("Sub", ["hi", "lo"], ["extent"]),
        helper.make_node("ReduceProd", ["extent"], ["area"], axes=[1], keepdims=0),
        helper.make_node("GatherND", ["scores", "sel"], ["picked"]),
    ]
    g = helper.make_graph(nodes, "detect", [tensor("boxes", [1, 24, 4]), tensor("scores", [1, 2, 24])],
                          [tensor("sel", None, TensorProto.INT64), tensor("chosen", None), tensor("area", None), tensor("picked", None)],
                          initializer=consts)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def unique_model():
    nodes = [
        helper.make_node("Unique", ["x"], ["y", "first", "inverse", "counts"], sorted=1),
        helper.make_node("Cast", ["counts"], ["countsf"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["y"], ["yf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["yf", "countsf"], ["weighted"]),
    ]
    g = helper.make_graph(nodes, "unique", [tensor("x", ["n"], TensorProto.INT64)],
                          [tensor("y", None, TensorProto.INT64), tensor("first", None, TensorProto.INT64), tensor("inverse", None, TensorProto.INT64),
                           tensor("counts", None, TensorProto.INT64), tensor("weighted", None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def masked_model():
    nodes = [
        helper.make_node("Greater", ["x", "threshold"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["idx"]),
        helper.make_node("Transpose", ["idx"], ["pairs"], perm=[1, 0]),
        helper.make_node("GatherND", ["x", "pairs"], ["picked"]),
        helper.make_node("ReduceMean", ["picked"], ["mean"], keepdims=0),
    ]
    g = helper.make_graph(nodes, "masked", [tensor("x", ["b", 5]), tensor("threshold", [])], [tensor("mean", None), tensor("picked", None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def main():
    precis, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    check = Checks()
    rng = np.random.default_rng(3)

    def boxes_feed():
        corners = rng.uniform(0, 10, (1, 24, 2)).astype(np.float32)
        size = rng.uniform(0.5, 4, (1, 24, 2)).astype(np.float32)
        return {"boxes": np.concatenate([corners, corners + size], axis=2), "scores": rng.uniform(0, 1, (1, 2, 24)).astype(np.float32)}

    cases = {
        "detect": (detect_model(), [boxes_feed() for _ in range(3)]),
        "unique": (unique_model(), [{"x": rng.integers(-3, 4, n).astype(np.int64)} for n in (1, 7, 40)]),
        "masked": (masked_model(), [{"x": rng.standard_normal((b, 5)).astype(np.float32), "threshold": np.array(t, np.float32)}
                                    for b, t in ((2, 0.5), (3, -0.2), (1, 100.0))]),
    }
    for name, (model, feeds) in cases.items():
        path = os.path.join(work, name + ".onnx")
        onnx.save(model, path)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        outputs = [o.name for o in model.graph.output]
        for precision, bound in (("fp32", None), ("fp16", 1e-2), ("bf16", 4e-2)):
            plan = os.path.join(work, f"{name}_{precision}.plan")
            r = subprocess.run([precis, "compile", path, "-o", plan, "--precision", precision], capture_output=True, text=True)
            if r.returncode:
                check(False, f"{name} {precision}: compile: {r.stderr.strip()[-400:]}")
                continue
            check("dynamic in" in r.stdout and "count(" in r.stdout, f"{name} {precision}: a dynamic plan with data dims ({r.stdout.strip().splitlines()[1:2]})")
            for k, feed in enumerate(feeds):
                got, err = run_plan(precis, plan, feed, os.path.join(work, f"{name}_{precision}_{k}"), outputs)
                if got is None:
                    check(False, f"{name} {precision} {k}: run: {err}")
                    continue
                want = sess.run(None, feed)
                if name == "masked" and want[1].size == 0:
                    # ReduceMean of an empty selection: ONNX leaves it undefined; onnxruntime gives 0,
                    # Precis numpy's NaN (0 / 0). The reference here is numpy.
                    want[0] = np.array(np.nan, np.float32)
                for o, g_, w in zip(outputs, got, want):
                    if g_.shape != w.shape:
                        check(False, f"{name} {precision} {k} {o}: shape {g_.shape} vs onnxruntime {w.shape}")
                        continue
                    if w.dtype.kind in "iu":
                        check(np.array_equal(g_, w), f"{name:<6} {precision} {k} {o:<8} {list(w.shape)} equal")
                        continue
                    g64, w64 = g_.astype(np.float64), w.astype(np.float64)
                    if w.size == 0 or np.isnan(w64).all():
                        check(np.array_equal(np.isnan(g64), np.isnan(w64)), f"{name:<6} {precision} {k} {o:<8} {list(w.shape)} (empty or NaN as onnxruntime)")
                        continue
                    rel = float(np.linalg.norm(g64 - w64) / max(np.linalg.norm(w64), 1e-30))
                    ok = np.allclose(g64, w64, rtol=1e-6, atol=1e-6) if bound is None else rel <= bound
                    check(ok, f"{name:<6} {precision} {k} {o:<8} {list(w.shape)} max abs {np.abs(g64 - w64).max():.3g} rel L2 {rel:.3g}")
    check.finish()


if __name__ == "__main__":
    main()
