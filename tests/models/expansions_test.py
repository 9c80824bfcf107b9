"""Operators Precis runs expanded into simpler ones (compiler/ops/expand.h), against independent
references.

usage: expansions_test.py PRECIS WORKDIR

Models (hand-built, random inputs with fixed seeds):
  - gqa: Attention (opset 23), 3-D Q/K/V with 4 query heads over 2 key/value heads, is_causal,
    past_key/past_value, symbolic batch, sequence and past lengths; one plan run at
    (batch, seq, past) = (1, 3, 2), (2, 5, 4), (1, 1, 7); outputs Y, present_key, present_value.
  - masked: Attention, 4-D, a boolean mask shorter than the key length (padded as masked),
    softcap, and the softmax probabilities as qk_matmul_output (mode 3).
  - rmsnorm: RMSNormalization over the last axis, symbolic batch and sequence.
  - rotary: RotaryEmbedding, 3-D input with num_heads, position_ids, interleaved, a partial
    rotary_embedding_dim.
  - legacy: opset-6 Add with broadcast=1, axis=0 (a graph input of rank 1 against rank 2) and
    Mul with axis=1 (a constant of rank 1 against rank 3): the second input aligns at axis.
    A model whose axis places the input past the end is a compile error naming the node.
References: ONNX's reference implementation (onnx.reference) evaluated in float64, and numpy for
the legacy broadcast. Tolerances: FP32 plans within 1e-5 absolute + 1e-5 relative (FP32
rounding of a few dozen operations); FP16 plans rel L2 <= 1e-2 and BF16 <= 4e-2 (the model
tests' bounds for 16-bit storage). The 16-bit reports must keep the softmax and the RMS
statistics in FP32.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from checks import Checks, run_plan


def tensor(name, dims, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, dims)


def gqa_model():
    node = helper.make_node("Attention", ["Q", "K", "V", "", "past_key", "past_value"], ["Y", "present_key", "present_value"],
                            is_causal=1, q_num_heads=4, kv_num_heads=2)
    g = helper.make_graph([node], "gqa",
                          [tensor("Q", ["b", "s", 32]), tensor("K", ["b", "s", 16]), tensor("V", ["b", "s", 16]),
                           tensor("past_key", ["b", 2, "p", 8]), tensor("past_value", ["b", 2, "p", 8])],
                          [tensor("Y", ["b", "s", 32]), tensor("present_key", ["b", 2, "t", 8]), tensor("present_value", ["b", 2, "t", 8])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])


def masked_model():
    node = helper.make_node("Attention", ["Q", "K", "V", "mask"], ["Y", "", "", "probs"], softcap=2.0, qk_matmul_output_mode=3)
    g = helper.make_graph([node], "masked",
                          [tensor("Q", [2, 3, 5, 8]), tensor("K", [2, 3, 7, 8]), tensor("V", [2, 3, 7, 6]),
                           tensor("mask", [5, 6], TensorProto.BOOL)],
                          [tensor("Y", [2, 3, 5, 6]), tensor("probs", [2, 3, 5, 7])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])


def rmsnorm_model():
    rng = np.random.default_rng(7)
    scale = numpy_helper.from_array(rng.uniform(0.5, 1.5, 64).astype(np.float32), "scale")
    node = helper.make_node("RMSNormalization", ["X", "scale"], ["Y"], axis=-1, epsilon=1e-6)
    g = helper.make_graph([node], "rmsnorm", [tensor("X", ["b", "s", 64])], [tensor("Y", ["b", "s", 64])], initializer=[scale])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])


def rotary_model():
    rng = np.random.default_rng(8)
    angles = rng.uniform(0, 6.3, (16, 2))
    cos = numpy_helper.from_array(np.cos(angles).astype(np.float32), "cos")
    sin = numpy_helper.from_array(np.sin(angles).astype(np.float32), "sin")
    node = helper.make_node("RotaryEmbedding", ["X", "cos", "sin", "pos"], ["Y"], num_heads=4, interleaved=1, rotary_embedding_dim=4)
    g = helper.make_graph([node], "rotary", [tensor("X", [2, 5, 32]), tensor("pos", [2, 5], TensorProto.INT64)], [tensor("Y", [2, 5, 32])],
                          initializer=[cos, sin])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])


LEGACY_C = np.array([0.5, -2.0, 3.0], np.float32)


def legacy_model(axis=0):
    add = helper.make_node("Add", ["A", "B"], ["S"], broadcast=1, axis=axis)
    c = numpy_helper.from_array(LEGACY_C, "C")
    shape = numpy_helper.from_array(np.array([2, 3, 1], np.int64), "shape")
    reshape = helper.make_node("Reshape", ["S", "shape"], ["S3"])
    tile = helper.make_node("Concat", ["S3", "S3", "S3", "S3"], ["S4"], axis=2)
    mul = helper.make_node("Mul", ["S4", "C"], ["Y"], broadcast=1, axis=1)
    g = helper.make_graph([add, reshape, tile, mul], "legacy", [tensor("A", [2, 3]), tensor("B", [2])], [tensor("Y", [2, 3, 4])],
                          initializer=[c, shape])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 6)], ir_version=3)


def reference(model, feeds):
    # ONNX's reference implementation in float64: the model's float inputs are fed as float64.
    ref = ReferenceEvaluator(model)
    wide = {k: (v.astype(np.float64) if v.dtype == np.float32 else v) for k, v in feeds.items()}
    return [np.asarray(y, np.float64) for y in ref.run(None, wide)]


def main():
    precis, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    check = Checks()

    def run(plan, feeds, tag, outputs):
        got, err = run_plan(precis, plan, feeds, os.path.join(work, tag), outputs)
        if got is None:
            check(False, f"{tag}: run: {err}")
            return None
        return [g.astype(np.float64) for g in got]

    rng = np.random.default_rng(0)
    cases = {
        "gqa": (gqa_model(), ["Y", "present_key", "present_value"],
                [{"Q": (b, s, 32), "K": (b, s, 16), "V": (b, s, 16), "past_key": (b, 2, p, 8), "past_value": (b, 2, p, 8)}
                 for b, s, p in ((1, 3, 2), (2, 5, 4), (1, 1, 7))]),
        "masked": (masked_model(), ["Y", "probs"], [{"Q": (2, 3, 5, 8), "K": (2, 3, 7, 8), "V": (2, 3, 7, 6), "mask": (5, 6)}]),
        "rmsnorm": (rmsnorm_model(), ["Y"], [{"X": (2, 3, 64)}, {"X": (1, 9, 64)}]),
        "rotary": (rotary_model(), ["Y"], [{"X": (2, 5, 32), "pos": (2, 5)}]),
    }
    for name, (model, outputs, shapes) in cases.items():
        path = os.path.join(work, name + ".onnx")
        onnx.save(model, path)
        for precision, bound in (("fp32", None), ("fp16", 1e-2), ("bf16", 4e-2)):
            plan, report = os.path.join(work, f"{name}_{precision}.plan"), os.path.join(work, f"{name}_{precision}.json")
            r = subprocess.run([precis, "compile", path, "-o", plan, "--precision", precision, "--report", report, "--quiet"],
                               capture_output=True, text=True)
            if r.returncode:
                check(False, f"{name} {precision}: compile: {r.stderr.strip()[-400:]}")
                continue
            nodes = json.load(open(report))["nodes"]
            check(not any(n["op"] in ("Attention", "RMSNormalization", "RotaryEmbedding") for n in nodes), f"{name} {precision}: expanded in the report")
            if precision != "fp32":
                stats = [n for n in nodes if n["op"] in ("Softmax", "ReduceMean")]
                check(bool(stats) == (name in ("gqa", "masked", "rmsnorm")) and all(n["precision"] == "f32" for n in stats),
                      f"{name} {precision}: softmax / RMS statistics in FP32 ({[(n['op'], n['precision']) for n in stats]})")
                low = [n for n in nodes if n["op"] == "MatMul"]
                check(all(n["precision"] == precision.replace("fp", "f") for n in low), f"{name} {precision}: MatMuls in {precision}")
            for k, dims in enumerate(shapes):
                feeds = {}
                for inp, shape in dims.items():
                    if inp == "mask":
                        m = rng.random(shape) < 0.7
                        m[:, 0] = True  # every row keeps a key
                        feeds[inp] = m
                    elif inp == "pos":
                        feeds[inp] = rng.integers(0, 16, shape).astype(np.int64)
                    else:
                        feeds[inp] = rng.standard_normal(shape).astype(np.float32)
                got = run(plan, feeds, f"{name}_{precision}_{k}", outputs)
                if got is None:
                    continue
                want = reference(model, feeds)
                for out, g_, w in zip(outputs, got, want):
                    if g_.shape != w.shape:
                        check(False, f"{name} {precision} {k} {out}: shape {g_.shape} vs {w.shape}")
                        continue
                    rel = float(np.linalg.norm(g_ - w) / max(np.linalg.norm(w), 1e-30))
                    ok = np.allclose(g_, w, rtol=1e-5, atol=1e-5) if bound is None else rel <= bound
                    check(ok, f"{name:<8} {precision} {'x'.join(map(str, feeds[next(iter(feeds))].shape)):<8} {out:<14} "
                              f"max abs {np.abs(g_ - w).max():.3g} rel L2 {rel:.3g}")

    # Legacy broadcast: numpy reference, written out.
    path = os.path.join(work, "legacy.onnx")
    onnx.save(legacy_model(), path)
    plan = os.path.join(work, "legacy.plan")
    r = subprocess.run([precis, "compile", path, "-o", plan, "--quiet"], capture_output=True, text=True)
    if r.returncode:
        check(False, f"legacy: compile: {r.stderr.strip()[-400:]}")
    else:
        a = rng.standard_normal((2, 3)).astype(np.float32)
        b = rng.standard_normal(2).astype(np.float32)
        got = run(plan, {"A": a, "B": b}, "legacy", ["Y"])
        s = (a + b[:, None]).reshape(2, 3, 1)
        want = np.concatenate([s] * 4, axis=2) * LEGACY_C[None, :, None]
        check(got is not None and got[0].shape == want.shape and np.array_equal(got[0], want.astype(np.float64)),
              f"legacy broadcast (axis=0 input, axis=1 constant): {None if got is None else got[0].shape}")
    path = os.path.join(work, "legacy_bad.onnx")
    onnx.save(legacy_model(axis=2), path)
    r = subprocess.run([precis, "compile", path, "-o", os.path.join(work, "legacy_bad.plan"), "--quiet"], capture_output=True, text=True)
    check(r.returncode != 0 and "axis 2 does not place a rank-1 input inside rank 2" in r.stderr and "Add" in r.stderr,
          f"legacy axis past the end refused: {r.stderr.strip()[-300:]}")

    check.finish()


if __name__ == "__main__":
    main()
