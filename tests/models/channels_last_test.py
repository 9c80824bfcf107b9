"""CPU plans run their convolutions channels-last (passes/choose_layout.h, layout-cpu) with a
Conv's Relu or Clip fused as a oneDNN post-op (passes/fuse_epilogues.h, fuse-epilogues-cpu).

usage: channels_last_test.py PRECIS WORKDIR

Model "block" (hand-built, FP32 weights from fixed seeds, symbolic batch N, 3x32x32 images): a
stem Conv 3->16 (3x3, stride 2) with Relu, MaxPool 3x3/2 with pads, a depthwise 3x3 Conv with
asymmetric pads and Clip(0, 6), a 1x1 Conv with a residual Add and Relu, a BatchNormalization
that cannot fold (after the Add: it runs channels-last between transposes), a Conv 16->32 with
stride 2, end pads (SAME_UPPER's geometry, which ONNX's reference evaluator pads at the start;
fast_conv_test covers auto_pad) and Relu, AveragePool 2x2 with ceil_mode and count_include_pad, two branches
(1x1, and 3x3 with dilation 2) concatenated, then GlobalAveragePool -> Flatten -> Gemm (logits), GlobalMaxPool
of the concatenation (gmax), and the concatenation itself (features: read outside the region).
Model "nan": Conv 1x1 -> Clip(0, 6) -> Mul by 1, with one NaN pixel in the input.

Checks:
  - compile output: every convolution of "block" NHWC, the Relus and the Clip fused; the report
    says so per node; `--layout nchw --no-epilogue-fusion` gives an NCHW plan without fusions.
  - FP32 plans (channels-last, NCHW, and the channels-last plan on the reference kernels, which
    run it between transposes) against ONNX's reference implementation in float64 at N = 1 and
    N = 3: rel L2 <= 1e-5 and max |error| <= 1e-5 * (1 + max |reference|) per output (FP32
    rounding of sums of at most 288 products); channels-last and NCHW within 1e-5 of each other.
  - FP16 and BF16 channels-last plans: rel L2 against float64 <= 1e-2 and 4e-2 (the model tests'
    bounds for 16-bit storage), and no worse than 1.5x the NCHW plan of the same precision plus
    1e-3 (the layout must not cost accuracy).
  - NaN: the fused Clip maps the NaN pixel to its min (0), as documented, while the unfused plan
    (--no-epilogue-fusion) keeps NaN there; elsewhere both agree.
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


def block_model():
    rng = np.random.default_rng(11)
    inits, nodes = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array, np.float32), name))
        return name

    def conv(x, y, c, m, k, group=1, **attrs):
        w = const(y + "_w", rng.standard_normal((m, c // group, k, k)) * np.sqrt(2.0 / (c // group * k * k)))
        b = const(y + "_b", rng.standard_normal(m) * 0.1)
        nodes.append(helper.make_node("Conv", [x, w, b], [y], kernel_shape=[k, k], group=group, **attrs))
        return y

    zero, six = const("zero", 0.0), const("six", 6.0)
    conv("x", "s0", 3, 16, 3, strides=[2, 2], pads=[1, 1, 1, 1])
    nodes.append(helper.make_node("Relu", ["s0"], ["s"]))
    nodes.append(helper.make_node("MaxPool", ["s"], ["m"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    conv("m", "d0", 16, 16, 3, group=16, pads=[1, 0, 1, 2])
    nodes.append(helper.make_node("Clip", ["d0", zero, six], ["d"]))
    conv("d", "p0", 16, 16, 1)
    nodes.append(helper.make_node("Add", ["p0", "m"], ["r0"]))
    nodes.append(helper.make_node("Relu", ["r0"], ["r"]))
    bn = [const("bn_" + k, v) for k, v in (("scale", rng.uniform(0.5, 1.5, 16)), ("bias", rng.standard_normal(16) * 0.1),
                                             ("mean", rng.standard_normal(16) * 0.1), ("var", rng.uniform(0.5, 2.0, 16)))]
    nodes.append(helper.make_node("BatchNormalization", ["r"] + bn, ["n"], epsilon=1e-5))
    conv("n", "e0", 16, 32, 3, strides=[2, 2], pads=[0, 0, 1, 1])
    nodes.append(helper.make_node("Relu", ["e0"], ["e"]))
    nodes.append(helper.make_node("AveragePool", ["e"], ["a"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1, count_include_pad=1,
                                  pads=[0, 0, 1, 1]))
    conv("a", "b1", 32, 8, 1)
    conv("a", "b2", 32, 8, 3, pads=[2, 2, 2, 2], dilations=[2, 2])
    nodes.append(helper.make_node("Concat", ["b1", "b2"], ["features"], axis=1))
    nodes.append(helper.make_node("GlobalAveragePool", ["features"], ["g"]))
    nodes.append(helper.make_node("GlobalMaxPool", ["features"], ["gmax"]))
    nodes.append(helper.make_node("Flatten", ["g"], ["flat"]))
    fc_w, fc_b = const("fc_w", rng.standard_normal((10, 16)) * 0.3), const("fc_b", rng.standard_normal(10) * 0.1)
    nodes.append(helper.make_node("Gemm", ["flat", fc_w, fc_b], ["logits"], transB=1))
    f = TensorProto.FLOAT
    g = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", f, ["N", 3, 32, 32])],
                          [helper.make_tensor_value_info("logits", f, ["N", 10]), helper.make_tensor_value_info("gmax", f, ["N", 16, 1, 1]),
                           helper.make_tensor_value_info("features", f, ["N", 16, 2, 2])], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def nan_model():
    rng = np.random.default_rng(12)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8, 1, 1)).astype(np.float32), "w"),
             numpy_helper.from_array(np.float32(0.0), "lo"), numpy_helper.from_array(np.float32(6.0), "hi"),
             numpy_helper.from_array(np.float32(1.0), "one")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]), helper.make_node("Clip", ["c", "lo", "hi"], ["k"]),
             helper.make_node("Mul", ["k", "one"], ["y"])]
    f = TensorProto.FLOAT
    g = helper.make_graph(nodes, "nan", [helper.make_tensor_value_info("x", f, [1, 8, 4, 4])], [helper.make_tensor_value_info("y", f, [1, 8, 4, 4])],
                          initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def rel_l2(got, want):
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def main():
    precis, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    check = Checks()
    model = block_model()
    path = os.path.join(work, "block.onnx")
    onnx.save(model, path)
    outputs = ["logits", "gmax", "features"]

    def compile_plan(name, src, *args):
        plan = os.path.join(work, name + ".plan")
        report = os.path.join(work, name + ".json")
        r = subprocess.run([precis, "compile", src, "-o", plan, "--report", report, *args], capture_output=True, text=True)
        if r.returncode:
            check(False, f"{name}: compile: {r.stderr.strip()[-400:]}")
            return None, None, None
        return plan, r.stdout, json.load(open(report))

    plans = {}
    for precision in ("fp32", "fp16", "bf16"):
        for layout in ("nhwc", "nchw"):
            extra = ["--layout", "nchw", "--no-epilogue-fusion"] if layout == "nchw" else []
            plan, out, report = compile_plan(f"block_{precision}_{layout}", path, "--precision", precision, *extra)
            if plan is None:
                continue
            plans[(precision, layout)] = plan
            line = next((l for l in out.splitlines() if l.strip().startswith("layout")), "")
            convs = [n for n in report["nodes"] if n["op"] == "Conv"]
            if layout == "nhwc":
                check("6 convolutions NHWC, 0 NCHW" in line and "3 activations fused" in line,
                      f"{precision}: compile says every Conv runs NHWC and 3 activations fused ({line.strip()!r})")
                evidence = [" ".join(n.get("evidence", [])) if isinstance(n.get("evidence"), list) else str(n.get("evidence", "")) for n in convs]
                check(len(convs) == 6 and all("layout NHWC" in e for e in evidence), f"{precision}: the report gives each Conv's layout")
                check(sum("epilogue: Relu fused" in e for e in evidence) == 2 and sum("epilogue: Clip [0, 6] fused" in e for e in evidence) == 1,
                      f"{precision}: the report names the fused Relus and Clip")
                check(not any(n["op"] == "Clip" for n in report["nodes"]), f"{precision}: no Clip node left")
            else:
                check(line == "" and any(n["op"] == "Clip" for n in report["nodes"]), f"{precision} --layout nchw --no-epilogue-fusion: no layout, no fusion")

    rng = np.random.default_rng(5)
    ref = ReferenceEvaluator(model)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)
        want = [np.asarray(w, np.float64) for w in ref.run(None, {"x": x.astype(np.float64)})]
        got = {}
        runs = [(p, l, ()) for p, l in plans] + ([("fp32", "nhwc-reference", ("--reference",))] if ("fp32", "nhwc") in plans else [])
        for precision, layout, extra in runs:
            plan = plans[(precision, layout.split("-")[0])]
            tag = f"{precision}_{layout}_n{batch}"
            res, err = run_plan(precis, plan, {"x": x}, os.path.join(work, tag), outputs, extra)
            if res is None:
                check(False, f"{tag}: run: {err}")
                continue
            got[(precision, layout)] = [r.astype(np.float64) for r in res]
        for (precision, layout), res in sorted(got.items()):
            for name, g_, w in zip(outputs, res, want):
                if g_.shape != w.shape:
                    check(False, f"{precision} {layout} N={batch} {name}: shape {g_.shape} vs {w.shape}")
                    continue
                rel = rel_l2(g_, w)
                if precision == "fp32":
                    err, bound = float(np.max(np.abs(g_ - w))), 1e-5 * (1 + float(np.max(np.abs(w))))
                    check(rel <= 1e-5 and err <= bound, f"fp32 {layout} N={batch} {name}: rel L2 {rel:.2e}, max err {err:.2e} (<= {bound:.2e})")
                else:
                    bound = 1e-2 if precision == "fp16" else 4e-2
                    nchw = got.get((precision, "nchw"))
                    base = rel_l2(nchw[outputs.index(name)], w) if nchw is not None else bound
                    limit = min(bound, 1.5 * base + 1e-3) if layout == "nhwc" else bound
                    check(rel <= limit, f"{precision} {layout} N={batch} {name}: rel L2 {rel:.2e} (<= {limit:.2e}; NCHW plan {base:.2e})")
        if ("fp32", "nhwc") in got and ("fp32", "nchw") in got:
            diff = max(rel_l2(a, b) for a, b in zip(got[("fp32", "nhwc")], got[("fp32", "nchw")]))
            check(diff <= 1e-5, f"N={batch}: channels-last and NCHW FP32 plans agree (rel L2 {diff:.2e})")

    # NaN through the fused Clip.
    npath = os.path.join(work, "nan.onnx")
    onnx.save(nan_model(), npath)
    x = np.random.default_rng(6).standard_normal((1, 8, 4, 4)).astype(np.float32)
    x[0, 2, 1, 3] = np.nan
    res = {}
    for tag, extra in (("fused", []), ("unfused", ["--no-epilogue-fusion"])):
        plan, _, _ = compile_plan("nan_" + tag, npath, *extra)
        if plan is None:
            continue
        r, err = run_plan(precis, plan, {"x": x}, os.path.join(work, "nan_" + tag), ["y"])
        if r is None:
            check(False, f"nan {tag}: run: {err}")
            continue
        res[tag] = r[0]
    if len(res) == 2:
        at = (0, slice(None), 1, 3)
        check(bool(np.all(res["fused"][at] == 0.0)), f"nan: the fused Clip maps NaN to its min 0 ({res['fused'][at]})")
        check(bool(np.all(np.isnan(res["unfused"][at]))), f"nan: the Clip node keeps NaN ({res['unfused'][at]})")
        mask = np.ones(res["fused"].shape, bool)
        mask[at] = False
        diff = float(np.max(np.abs(res["fused"][mask] - res["unfused"][mask])))
        check(diff <= 1e-5, f"nan: elsewhere the two plans agree (max diff {diff:.2e})")
    check.finish()


if __name__ == "__main__":
    main()
