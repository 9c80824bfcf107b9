"""Row programs (reductions fused with their elementwise neighbours) in whole plans.

usage: fused_rows_test.py PRECIS WORKDIR

One model (opset 18) with inputs x, y [2, 3, D] and mask [3, D], and six outputs, each a reduction
over rows with the elementwise nodes around it:
  ln  = LayerNormalization(x + y, g, b)                         a residual Add into a layer norm
  sm  = Softmax(x * 0.125 + mask)                               attention scores with an additive mask
  rms = x * 1 / sqrt(ReduceMean(x * x, -1) + 1e-6) * g          a decomposed RMSNorm
  rs  = ReduceSum(Exp(y * 0.5), axes [1, 2], keepdims 0)        a sum over two trailing axes, shape [2]
  dm  = y - ReduceMax(y, -1)                                    a row value feeding the frame
  inn = InstanceNormalization(Relu(x), s3, b3)                  a row per (n, c), scale and bias per channel
compiled with code generation (the default) and with --no-codegen, in FP32, FP16 and BF16, for row
lengths D = 1, 31, 32, 33, 768, 4099 (around and between the vector widths), on random data and
on special rows (the mask -inf in half its elements and in one whole row; a NaN in x). Checks:
  1. the compile output reports kernels over rows, and `precis bench --profile` shows the fused
     steps running generated code for this CPU;
  2. generated code == the reference interpreter (--reference) == the x86-64-v3 objects, bit for
     bit (the reduction order is fixed: runtime/kernels/fused_program.h);
  3. FP32, random data: every output within 1e-6 of float64 numpy (relative to the output's
     largest magnitude; measured at most 2.0e-7, the unfused plan 1.3e-7: the sums run in 16
     interleaved double partials, the unfused kernels' in double in another order) and of
     onnxruntime (instance norm: plus its FP32 sums' rounding);
  4. the fused plan against the unfused one (whose kernels accumulate in double): FP32 within
     1e-6 of the output's largest magnitude (instance norm: plus the unfused formula's
     cancellation, 4 ulps of |x * a| + |mean * a|; onnxruntime's has the same); FP16/BF16 within one ulp of the 16-bit output (both
     round the same FP32 value, which the two accumulation orders move by a few FP32 ulps);
  5. special rows: NaN exactly where the unfused plan has NaN (a fully masked softmax row is 0/0 in
     both; a NaN in a layer norm's row makes the row NaN).
"""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from checks import run_plan, same_bits  # same folder

LENGTHS = [1, 31, 32, 33, 768, 4099]
OUTPUTS = ["ln", "sm", "rms", "rs", "dm", "inn"]


def make_model(path, d, rng):
    f = lambda name, v: numpy_helper.from_array(np.asarray(v, np.float32), name)
    i = lambda name, v: numpy_helper.from_array(np.asarray(v, np.int64), name)
    g = rng.uniform(0.5, 1.5, d).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, d).astype(np.float32)
    s3 = rng.uniform(0.5, 1.5, 3).astype(np.float32)
    b3 = rng.uniform(-0.5, 0.5, 3).astype(np.float32)
    inits = [f("g", g), f("b", b), f("eighth", 0.125), f("half", 0.5), f("eps", 1e-6), i("last", [-1]), i("two_last", [1, 2]),
             f("s3", s3), f("b3", b3)]
    n = helper.make_node
    nodes = [
        n("Add", ["x", "y"], ["res"], name="residual"),
        n("LayerNormalization", ["res", "g", "b"], ["ln"], name="layer_norm", epsilon=1e-5),
        n("Mul", ["x", "eighth"], ["scaled"], name="scale"),
        n("Add", ["scaled", "mask"], ["masked"], name="mask"),
        n("Softmax", ["masked"], ["sm"], name="softmax", axis=-1),
        n("Mul", ["x", "x"], ["sq"], name="square"),
        n("ReduceMean", ["sq", "last"], ["ms"], name="mean_square", keepdims=1),
        n("Add", ["ms", "eps"], ["mse"], name="add_eps"),
        n("Sqrt", ["mse"], ["rt"], name="sqrt"),
        n("Reciprocal", ["rt"], ["inv"], name="inv"),
        n("Mul", ["x", "inv"], ["normed"], name="normalize"),
        n("Mul", ["normed", "g"], ["rms"], name="gain"),
        n("Mul", ["y", "half"], ["yh"], name="half_y"),
        n("Exp", ["yh"], ["ey"], name="exp"),
        n("ReduceSum", ["ey", "two_last"], ["rs"], name="sum", keepdims=0),
        n("ReduceMax", ["y", "last"], ["my"], name="max", keepdims=1),
        n("Sub", ["y", "my"], ["dm"], name="minus_max"),
        n("Relu", ["x"], ["rx"], name="relu"),
        n("InstanceNormalization", ["rx", "s3", "b3"], ["inn"], name="instance_norm", epsilon=1e-5),
    ]
    t = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    graph = helper.make_graph(nodes, "rows", [t("x", [2, 3, d]), t("y", [2, 3, d]), t("mask", [3, d])],
                              [t("ln", [2, 3, d]), t("sm", [2, 3, d]), t("rms", [2, 3, d]), t("rs", [2]), t("dm", [2, 3, d]),
                               t("inn", [2, 3, d])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    return g.astype(np.float64), b.astype(np.float64), s3.astype(np.float64), b3.astype(np.float64)


def reference(x, y, mask, g, b, s3, b3):
    """float64, from the same float32 inputs."""
    x, y, mask = x.astype(np.float64), y.astype(np.float64), mask.astype(np.float64)
    r = x + y
    mean = r.mean(-1, keepdims=True)
    var = ((r - mean) ** 2).mean(-1, keepdims=True)
    ln = (r - mean) / np.sqrt(var + 1e-5) * g + b
    s = x * 0.125 + mask
    with np.errstate(all="ignore"):
        e = np.exp(s - s.max(-1, keepdims=True))
        sm = e / e.sum(-1, keepdims=True)
    rms = x / np.sqrt((x * x).mean(-1, keepdims=True) + np.float64(np.float32(1e-6))) * g
    rs = np.exp(y * 0.5).sum(axis=(1, 2))
    dm = y - y.max(-1, keepdims=True)
    rx = np.maximum(x, 0)
    im = rx.mean(-1, keepdims=True)
    iv = ((rx - im) ** 2).mean(-1, keepdims=True)
    inn = (rx - im) / np.sqrt(iv + 1e-5) * s3[:, None] + b3[:, None]
    return {"ln": ln, "sm": sm, "rms": rms, "rs": rs, "dm": dm, "inn": inn}


def inn_slack(x, s3, float_sum=False):
    """Per element, 4 float ulps of |x * a| + |mean * a| (a = scale / sqrt(var + eps)): the
    cancellation of the unfused instance norm's x * a + (bias - mean * a); with `float_sum`, also
    4 sqrt(D) float roundings of the mean, times a (a sum over the row in FP32)."""
    rx = np.maximum(x.astype(np.float64), 0)
    mean = rx.mean(-1, keepdims=True)
    a = np.abs(s3[:, None]) / np.sqrt(((rx - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
    slack = (np.abs(rx) * a + np.abs(mean) * a) * 2.0 ** -22
    if float_sum:
        slack = slack + 4 * np.sqrt(x.shape[-1]) * 2.0 ** -24 * np.abs(mean) * a
    return slack


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def ulp16(v, precision):
    """One ulp of the 16-bit value v (FP16: 10 fraction bits, normal or not; BF16: 7)."""
    bits = 10 if precision == "fp16" else 7
    e = np.floor(np.log2(np.maximum(np.abs(v), 2.0 ** -14 if precision == "fp16" else 2.0 ** -126)))
    return 2.0 ** (e - bits)


def main():
    precis, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(3)
    failures = []
    checks = 0

    def check(ok, what):
        nonlocal checks
        checks += 1
        if not ok:
            failures.append(what)
            print("FAIL:", what)

    for d in LENGTHS:
        model = os.path.join(work, f"rows_{d}.onnx")
        g, b, s3, b3 = make_model(model, d, rng)
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        for precision in ("fp32", "fp16", "bf16"):
            case = f"{precision} D={d}"
            plans = {}
            for mode, extra in (("gen", []), ("nogen", ["--no-codegen"])):
                plan = os.path.join(work, f"rows_{d}_{precision}_{mode}.plan")
                r = run([precis, "compile", model, "-o", plan, "--precision", precision] + extra)
                check(r.returncode == 0, f"{case} {mode}: compile failed: {r.stderr.strip()}")
                if r.returncode:
                    continue
                plans[mode] = plan
                if mode == "gen":
                    m = re.search(r"codegen\s+(\d+) fused elementwise kernels \((\d+) nodes; (\d+) over rows", r.stdout)
                    check(m is not None and int(m.group(3)) >= 5, f"{case}: expected at least 5 kernels over rows: {r.stdout}")
            if len(plans) < 2:
                continue
            r = run([precis, "bench", plans["gen"], "--iterations", "1", "--warmup", "0", "--profile"])
            check(r.returncode == 0 and re.search(r"FusedElementwise \(fast\) \[x86-64-v[34]\]", r.stdout) is not None,
                  f"{case}: fused steps do not run generated code: {r.stdout[-600:]} {r.stderr[-300:]}")
            errors = []
            for data in ("random", "special"):
                x = rng.standard_normal((2, 3, d)).astype(np.float32) * 2
                y = rng.standard_normal((2, 3, d)).astype(np.float32)
                mask = np.where(rng.random((3, d)) < 0.2, -1e4, 0).astype(np.float32)
                if data == "special":
                    mask[rng.random((3, d)) < 0.5] = -np.inf
                    mask[1, :] = -np.inf
                    x[0, 2, d // 2] = np.nan
                outs = {}
                for mode, plan, extra, env in (("gen", plans["gen"], [], None), ("nogen", plans["nogen"], [], None),
                                               ("ref", plans["gen"], ["--reference"], None),
                                               ("v3", plans["gen"], [], dict(os.environ, PRECIS_CPU_CODEGEN="x86-64-v3"))):
                    got, err = run_plan(precis, plan, {"x": x, "y": y, "mask": mask}, os.path.join(work, f"out_{mode}"), OUTPUTS, extra, env)
                    check(got is not None, f"{case} {data} {mode}: run failed: {err}")
                    if got is not None:
                        outs[mode] = dict(zip(OUTPUTS, got))
                if len(outs) < 4:
                    continue
                want = reference(x, y, mask, g, b, s3, b3)
                ort_out = dict(zip(OUTPUTS, sess.run(OUTPUTS, {"x": x, "y": y, "mask": mask}))) if precision == "fp32" and data == "random" else {}
                for k in OUTPUTS:
                    gen, nogen = outs["gen"][k], outs["nogen"][k]
                    check(same_bits(gen, outs["ref"][k]), f"{case} {data} {k}: generated code differs from the reference interpreter")
                    check(same_bits(gen, outs["v3"][k]), f"{case} {data} {k}: the x86-64-v3 code differs from the x86-64-v4 code")
                    check(bool((np.isnan(gen) == np.isnan(nogen)).all()),
                          f"{case} {data} {k}: NaN at {int((np.isnan(gen) != np.isnan(nogen)).sum())} positions where the unfused plan differs")
                    ok = ~np.isnan(nogen) & ~np.isnan(gen)
                    scale = max(float(np.abs(nogen[ok]).max()), 1e-30) if ok.any() else 1.0  # D = 1: dm is all 0
                    diff = np.abs(gen[ok].astype(np.float64) - nogen[ok])
                    if precision == "fp32":
                        # The instance norm kernels (ours unfused, onnxruntime's) compute x * a + (bias - mean * a):
                        # up to a few float ulps of |x * a| + |mean * a| of cancellation, which a row of
                        # one element (variance 0, a = scale / sqrt(eps)) makes visible. The fused
                        # program computes (x - mean) * a + bias (float64 checks it below).
                        slack = inn_slack(x, s3)[ok] if k == "inn" else 0
                        bad = int((diff > 1e-6 * scale + slack).sum())
                        check(bad == 0, f"{case} {data} {k}: fused differs from the unfused plan at {bad} outputs "
                                        f"(max {float(diff.max() / scale) if ok.any() else 0:.3g} of the output's scale)")
                    else:
                        tol = ulp16(nogen[ok].astype(np.float64), precision) + 1e-6 * scale
                        bad = int((diff > tol).sum())
                        check(bad == 0, f"{case} {data} {k}: {bad} outputs differ from the unfused plan by more than one 16-bit ulp "
                                        f"(max {float(diff.max()) if diff.size else 0:.3g})")
                    if precision == "fp32" and data == "random":
                        for ref_name, ref in (("float64", want[k]), ("onnxruntime", ort_out[k])):
                            ref_scale = max(np.abs(ref).max(), 1e-30)
                            # onnxruntime's instance norm also sums its row in FP32: sqrt(D) float
                            # roundings of the mean (4x), times a.
                            slack = inn_slack(x, s3, float_sum=True) if k == "inn" and ref_name == "onnxruntime" else 0
                            dev = np.abs(gen.astype(np.float64) - ref)
                            check(bool((dev <= 1e-6 * ref_scale + slack).all()),
                                  f"{case} {k}: differs from {ref_name} by {float(dev.max() / ref_scale):.3g} of the output's scale")
                            err = float(dev.max() / ref_scale)
                            if ref_name == "float64":
                                nogen_err = float(np.abs(nogen.astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30))
                                errors.append(f"{k} {err:.2g} (unfused {nogen_err:.2g})")
            print(f"{'ok:  ' if not failures else 'so far failing:'} {case}" + (f"; error against float64: {', '.join(errors)}" if errors else ""))
    print(f"{checks} checks, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
