"""Fused elementwise kernels: generated x86 code against the unfused plan and independent references.

usage: fused_elementwise_test.py PRECIS WORKDIR

Models with chains of the fusable operators (Add, Sub, Mul, Div, Max, Min, Neg, Abs, Sqrt,
Reciprocal, Relu, LeakyRelu, Clip, Cast between float types; scalar constants and a broadcast
one-element input; a value read twice, which ends a group; and a model with per-channel,
last-axis and leading-axis broadcast operands; one of PRelu (per-channel slope), HardSwish and
HardSigmoid against onnxruntime; and one of Sigmoid, Tanh, Exp, Erf and Gelu in both forms,
compared with float64) are compiled with code generation
(the default) and with --no-codegen, in FP32, FP16 and BF16, for element counts 1, 2, 31, 32, 33,
4096 and 4099 (not multiples of the vector width), and run on:
  - random normal data, and
  - special values: NaN, +-inf, -0, FP32 denormals, values that overflow FP16 (7e4, 3e38) or sit
    near FP16/BF16 rounding ties.
Checks, per case:
  1. the compile output reports fused kernels (the chains did fuse) and `precis bench --profile`
     shows the fused steps running generated code for this CPU (x86-64-v3 or -v4), not the
     reference interpreter; with one element nothing is fused (by design: one-element results
     stay unfused), and the checks below hold all the same;
  2. generated code == --no-codegen plan, bit for bit (NaN positions equal): fusion keeps every
     rounding the unfused plan makes, and the generated arithmetic is IEEE without contraction;
  3. generated code == the reference interpreter (`--reference`), bit for bit, and the x86-64-v3
     objects (PRECIS_CPU_CODEGEN=x86-64-v3) == the x86-64-v4 ones;
  4. the plan's arena is no larger than the unfused plan's (fused steps run in place);
  5. FP32 plans on random data == numpy float32 evaluating the same ops one by one, bit for bit
     (every op is one IEEE operation), and within 1e-6 relative of onnxruntime (a second,
     independent implementation; its Sqrt/Div are IEEE too, so this is exact in practice).
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from checks import same_bits  # same folder

SIZES = [1, 2, 31, 32, 33, 4096, 4099]


def chain_model(path):
    """x, y: [n]; s: [1] broadcast. Two outputs: `out` (a long chain) and `mid2` (a value that is
    also read inside the chain: one fused kernel, a DAG, with mid2 its second output)."""
    c = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    inits = [c("half", 0.5), c("three", 3.0), c("zero", 0.0), c("six", 6.0), c("one", 1.0)]
    n = helper.make_node
    nodes = [
        n("Mul", ["x", "half"], ["t1"], name="mul_half"),
        n("Add", ["t1", "y"], ["t2"], name="add_y"),
        n("Mul", ["t2", "s"], ["mid2"], name="mul_s"),
        n("Relu", ["mid2"], ["t3"], name="relu"),
        n("Clip", ["t3", "zero", "six"], ["t4"], name="clip"),
        n("Sub", ["t4", "mid2"], ["t5"], name="sub_mid"),
        n("Div", ["t5", "three"], ["t6"], name="div3"),
        n("Max", ["t6", "x"], ["t7"], name="max_x"),
        n("Min", ["t7", "y"], ["t8"], name="min_y"),
        n("Neg", ["t8"], ["t9"], name="neg"),
        n("Abs", ["t9"], ["t10"], name="abs"),
        n("Sqrt", ["t10"], ["t11"], name="sqrt"),
        n("Add", ["t11", "one"], ["t12"], name="add1"),
        n("Reciprocal", ["t12"], ["t13"], name="recip"),
        n("Sub", ["t13", "half"], ["t14"], name="sub_half"),
        n("LeakyRelu", ["t14"], ["t15"], name="leaky", alpha=0.1),
        n("Cast", ["t15"], ["t16"], name="to_f16", to=TensorProto.FLOAT16),
        n("Cast", ["t16"], ["t17"], name="to_f32", to=TensorProto.FLOAT),
        n("Mul", ["t17", "x"], ["out"], name="mul_x"),
    ]
    dyn = ["n"]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dyn),
                                               helper.make_tensor_value_info("y", TensorProto.FLOAT, dyn),
                                               helper.make_tensor_value_info("s", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, dyn),
                               helper.make_tensor_value_info("mid2", TensorProto.FLOAT, dyn)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def broadcast_model(path):
    """Periodic broadcasts: y = (Relu(x + b) * w - r) / 2 with x [2,3,5], a per-channel b [3,1],
    a last-axis w [5] and a leading-axis r [2,1,1]."""
    n = helper.make_node
    nodes = [n("Add", ["x", "b"], ["u"], name="bias"), n("Relu", ["u"], ["v"], name="relu"), n("Mul", ["v", "w"], ["m"], name="scale"),
             n("Sub", ["m", "r"], ["d"], name="shift"), n("Div", ["d", "two"], ["y"], name="half")]
    t = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    graph = helper.make_graph(nodes, "bcast", [t("x", [2, 3, 5]), t("b", [3, 1]), t("w", [5]), t("r", [2, 1, 1])], [t("y", [2, 3, 5])],
                              [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def mobile_model(path):
    """y = HardSwish(p) * HardSigmoid(HardSwish(p)) with p = PRelu(x, per-channel slope)."""
    n = helper.make_node
    nodes = [n("PRelu", ["x", "slope"], ["p"], name="prelu"), n("HardSwish", ["p"], ["h"], name="hswish"),
             n("HardSigmoid", ["h"], ["g"], name="hsigmoid", alpha=0.25, beta=0.4), n("Mul", ["h", "g"], ["y"], name="gate")]
    t = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    graph = helper.make_graph(nodes, "mobile", [t("x", [2, 3, 4, 4]), t("slope", [3, 1, 1])], [t("y", [2, 3, 4, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)


def transcendental_model(path):
    """out = Erf(Exp(Tanh(x * Sigmoid(x)))) + Gelu(x) (tanh form) + Gelu(x) (erf form), opset 20."""
    n = helper.make_node
    nodes = [n("Sigmoid", ["x"], ["s"], name="sigmoid"), n("Mul", ["x", "s"], ["silu"], name="silu"), n("Tanh", ["silu"], ["t"], name="tanh"),
             n("Exp", ["t"], ["e"], name="exp"), n("Erf", ["e"], ["f"], name="erf"), n("Gelu", ["x"], ["g"], name="gelu_tanh", approximate="tanh"),
             n("Gelu", ["x"], ["h"], name="gelu_erf"), n("Add", ["f", "g"], ["a"], name="add1"), n("Add", ["a", "h"], ["y"], name="add2")]
    t = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [4, 257])
    graph = helper.make_graph(nodes, "transc", [t("x")], [t("y")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), path)


def transcendental_reference(x):
    import math
    x = x.astype(np.float64)
    erf = np.vectorize(math.erf)
    with np.errstate(all="ignore"):  # the NaN and infinite inputs
        s = 1 / (1 + np.exp(-x))
        f = erf(np.exp(np.tanh(x * s)))
        g = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        h = 0.5 * x * (1 + erf(x / math.sqrt(2)))
        return f + g + h


def numpy_reference(x, y, s):
    """The chain in float32, one numpy op per node (each one IEEE operation, as the plan's)."""
    f = np.float32
    with np.errstate(all="ignore"):
        t1 = x * f(0.5)
        t2 = t1 + y
        mid2 = t2 * s[0]
        t3 = np.where(mid2 > 0, mid2, f(0))
        t4 = np.where(t3 < 0, f(0), t3)
        t4 = np.where(t4 > 6, f(6), t4)
        t5 = t4 - mid2
        t6 = t5 / f(3)
        t7 = np.where((x > t6) | np.isnan(x), x, t6)
        t8 = np.where((y < t7) | np.isnan(y), y, t7)
        t11 = np.sqrt(np.abs(-t8))
        t13 = f(1) / (t11 + f(1))
        t14 = t13 - f(0.5)
        t15 = np.where(t14 < 0, f(0.1) * t14, t14)
        t17 = t15.astype(np.float16).astype(np.float32)
        out = t17 * x
    return out.astype(np.float32), mid2.astype(np.float32)


def special_values(n, rng):
    sp = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, -1e-45, 7e4, -7e4, 3e38, 65504, 65520, 1 + 2 ** -11, 1 + 3 * 2 ** -11,
                   1 + 2 ** -8, 2.5, -2.5, 6.0, 6.000001], np.float32)
    return rng.choice(sp, n).astype(np.float32)


def arena_bytes(stdout):
    """The planned arena of `precis compile`'s output ("arena 64.3 KiB ...")."""
    m = re.search(r"arena\s+([\d.]+) (B|KiB|MiB|GiB)", stdout)
    return float(m.group(1)) * {"B": 1, "KiB": 1024, "MiB": 2 ** 20, "GiB": 2 ** 30}[m.group(2)] if m else float("nan")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main():
    precis, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "chain.onnx")
    chain_model(model)
    failures = []
    checks = 0
    rng = np.random.default_rng(7)

    def check(ok, what):
        nonlocal checks
        checks += 1
        if not ok:
            failures.append(what)
            print("FAIL:", what)

    for precision in ("fp32", "fp16", "bf16"):
        for n in SIZES:
            case = f"{precision} n={n}"
            shapes = ["--shape", f"x={n}", "--shape", f"y={n}"]
            plans, arenas = {}, {}
            for mode, extra in (("gen", []), ("nogen", ["--no-codegen"])):
                plan = os.path.join(work, f"{precision}_{n}_{mode}.plan")
                r = run([precis, "compile", model, "-o", plan, "--precision", precision] + shapes + extra)
                check(r.returncode == 0, f"{case} {mode}: compile failed: {r.stderr.strip()}")
                if r.returncode:
                    continue
                plans[mode] = plan
                arenas[mode] = arena_bytes(r.stdout)
                if mode == "gen":
                    m = re.search(r"codegen\s+(\d+) fused elementwise kernels \((\d+) nodes\)", r.stdout)
                    if n == 1:
                        check(m is not None and int(m.group(1)) == 0, f"{case}: expected no fused kernels, compile said: {m.group(0) if m else r.stdout}")
                    else:
                        # mid2 is read twice inside the chain and is a graph output: one kernel
                        # (a DAG), mid2 its second output.
                        check(m is not None and int(m.group(1)) == 1, f"{case}: expected one fused kernel, compile said: {m.group(0) if m else r.stdout}")
            if len(plans) < 2:
                continue
            # Fused steps run in place where the unfused ones did: never more arena.
            check(arenas["gen"] <= arenas["nogen"], f"{case}: arena {arenas['gen']} with code generation, {arenas['nogen']} without")
            r = run([precis, "bench", plans["gen"], "--iterations", "1", "--warmup", "0", "--profile"])
            used = re.findall(r"FusedElementwise \(fast\) \[x86-64-v[34]\]", r.stdout)
            if n > 1:
                check(r.returncode == 0 and len(used) >= 2 and "reference interpreter" not in r.stdout,
                      f"{case}: fused steps do not run generated code: {r.stdout[-600:]} {r.stderr[-300:]}")
            for data in ("random", "special"):
                if data == "random":
                    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
                    s = np.array([1.5], np.float32)
                else:
                    x, y = special_values(n, rng), special_values(n, rng)
                    s = np.array([rng.choice([np.inf, -2.0, 1e-40])], np.float32)
                files = []
                for name, v in (("x", x), ("y", y), ("s", s)):
                    p = os.path.join(work, f"{name}.npy")
                    np.save(p, v)
                    files += ["--input", f"{name}={p}"]
                outs = {}
                for mode, plan, extra in (("gen", plans["gen"], []), ("nogen", plans["nogen"], []), ("ref", plans["gen"], ["--reference"]),
                                          ("v3", plans["gen"], [])):
                    d = os.path.join(work, f"out_{mode}")
                    env = dict(os.environ, PRECIS_CPU_CODEGEN="x86-64-v3") if mode == "v3" else None
                    r = run([precis, "run", plan, "--output-dir", d] + files + extra, env=env)
                    check(r.returncode == 0, f"{case} {data} {mode}: run failed: {r.stderr.strip()}")
                    if r.returncode == 0:
                        outs[mode] = {k: np.load(os.path.join(d, k + ".npy")) for k in ("out", "mid2")}
                if len(outs) < 4:
                    continue
                for k in ("out", "mid2"):
                    check(same_bits(outs["gen"][k], outs["v3"][k]), f"{case} {data} {k}: the x86-64-v3 code differs from the x86-64-v4 code")
                    check(same_bits(outs["gen"][k], outs["nogen"][k]), f"{case} {data} {k}: generated code differs from the unfused plan")
                    check(same_bits(outs["gen"][k], outs["ref"][k]), f"{case} {data} {k}: generated code differs from the reference interpreter")
                if precision == "fp32" and data == "random":
                    want = numpy_reference(x, y, s)
                    got = (outs["gen"]["out"], outs["gen"]["mid2"])
                    for k, g, w in zip(("out", "mid2"), got, want):
                        check(same_bits(g, w), f"{case} {k}: differs from numpy float32 (max |diff| {np.abs(g - w).max():.3g})")
                    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
                    ow = sess.run(None, {"x": x, "y": y, "s": s})
                    for k, g, w in zip(("out", "mid2"), got, ow):
                        err = float(np.abs(g - w).max() / max(np.abs(w).max(), 1e-30))
                        check(err <= 1e-6, f"{case} {k}: differs from onnxruntime (rel {err:.3g})")
            print(f"{'ok:  ' if not failures else 'so far failing:'} {case}")
    # In place: a fused step between two softmaxes takes its input's bytes, as the unfused Mul and
    # Add would (without that, the plan needs one more buffer).
    n = helper.make_node
    t = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [64, 256])
    ip_model = os.path.join(work, "in_place.onnx")
    onnx.save(helper.make_model(helper.make_graph(
        [n("Softmax", ["x"], ["s"]), n("Mul", ["s", "two"], ["m"]), n("Add", ["m", "one"], ["a"]), n("Softmax", ["a"], ["y"])], "ip", [t("x")],
        [t("y")], [numpy_helper.from_array(np.array(2.0, np.float32), "two"), numpy_helper.from_array(np.array(1.0, np.float32), "one")]),
        opset_imports=[helper.make_opsetid("", 13)]), ip_model)
    ip = {}
    for mode, extra in (("gen", []), ("nogen", ["--no-codegen"])):
        r = run([precis, "compile", ip_model, "-o", os.path.join(work, f"ip_{mode}.plan")] + extra)
        check(r.returncode == 0, f"in place {mode}: compile failed: {r.stderr.strip()}")
        ip[mode] = (arena_bytes(r.stdout), r.stdout)
    check("codegen    1 fused" in ip["gen"][1] and ip["gen"][0] <= ip["nogen"][0],
          f"in place: arena {ip['gen'][0]} fused, {ip['nogen'][0]} unfused: {ip['gen'][1]}")
    print(f"{'ok:  ' if not failures else 'so far failing:'} in place")

    def three_modes(tag, model_path, precision, feeds, on_gen):
        """Compiles with and without code generation, runs both plans and the generated plan with
        --reference on `feeds`; checks the three give the same bits; returns output y (or None)."""
        files = []
        for name, v in feeds.items():
            p = os.path.join(work, f"{tag}_{name}.npy")
            np.save(p, v)
            files += ["--input", f"{name}={p}"]
        outs = {}
        for mode, extra, run_extra in (("gen", [], []), ("nogen", ["--no-codegen"], []), ("ref", [], ["--reference"])):
            plan = os.path.join(work, f"{tag}_{precision}_{mode}.plan")
            r = run([precis, "compile", model_path, "-o", plan, "--precision", precision] + extra)
            check(r.returncode == 0, f"{tag} {precision} {mode}: compile failed: {r.stderr.strip()}")
            if mode == "gen":
                on_gen(plan, r.stdout)
            d = os.path.join(work, f"{tag}_out_{mode}")
            r = run([precis, "run", plan, "--output-dir", d] + files + run_extra)
            check(r.returncode == 0, f"{tag} {precision} {mode}: run failed: {r.stderr.strip()}")
            if r.returncode == 0:
                outs[mode] = np.load(os.path.join(d, "y.npy"))
        # The AVX2 objects too (an AVX-512 machine runs both; the session picks v4 by default).
        d = os.path.join(work, f"{tag}_out_v3")
        r = run([precis, "run", os.path.join(work, f"{tag}_{precision}_gen.plan"), "--output-dir", d] + files,
                env=dict(os.environ, PRECIS_CPU_CODEGEN="x86-64-v3"))
        check(r.returncode == 0, f"{tag} {precision} v3: run failed: {r.stderr.strip()}")
        if r.returncode == 0:
            outs["v3"] = np.load(os.path.join(d, "y.npy"))
        if len(outs) < 4:
            return None
        check(same_bits(outs["gen"], outs["v3"]), f"{tag} {precision}: the x86-64-v3 code differs from the x86-64-v4 code")
        check(same_bits(outs["gen"], outs["nogen"]), f"{tag} {precision}: generated code differs from the unfused plan")
        check(same_bits(outs["gen"], outs["ref"]), f"{tag} {precision}: generated code differs from the reference interpreter")
        return outs["gen"]

    # Periodic broadcasts (per-channel, last-axis, leading-axis operands) in one fused kernel.
    bmodel = os.path.join(work, "bcast.onnx")
    broadcast_model(bmodel)
    feeds = {"x": rng.standard_normal((2, 3, 5)).astype(np.float32), "b": rng.standard_normal((3, 1)).astype(np.float32),
             "w": rng.standard_normal(5).astype(np.float32), "r": rng.standard_normal((2, 1, 1)).astype(np.float32)}
    with np.errstate(all="ignore"):
        want = ((np.maximum(feeds["x"] + feeds["b"], np.float32(0)) * feeds["w"] - feeds["r"]) / np.float32(2)).astype(np.float32)
    for precision in ("fp32", "fp16", "bf16"):
        def one_kernel(plan, stdout, precision=precision):
            check("codegen    1 fused elementwise kernels (5 nodes)" in stdout, f"bcast {precision}: expected one kernel of 5 nodes: {stdout}")
        y = three_modes("bcast", bmodel, precision, feeds, one_kernel)
        if y is not None and precision == "fp32":
            check(same_bits(y, want), f"bcast fp32: differs from numpy float32 (max |diff| {np.abs(y - want).max():.3g})")
        print(f"{'ok:  ' if not failures else 'so far failing:'} broadcast {precision}")

    # PRelu with a per-channel slope, HardSwish and HardSigmoid (MobileNetV3's activations).
    mmodel = os.path.join(work, "mobile.onnx")
    mobile_model(mmodel)
    feeds = {"x": (rng.standard_normal((2, 3, 4, 4)) * 4).astype(np.float32), "slope": rng.uniform(0, 0.5, (3, 1, 1)).astype(np.float32)}
    want = ort.InferenceSession(mmodel, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for precision in ("fp32", "fp16", "bf16"):
        def all_fused(plan, stdout, precision=precision):
            # h is read twice (HardSigmoid and the gate), both inside the group: one kernel.
            check("codegen    1 fused elementwise kernels (4 nodes)" in stdout, f"mobile {precision}: expected one kernel of 4 nodes: {stdout}")
        y = three_modes("mobile", mmodel, precision, feeds, all_fused)
        if y is not None and precision == "fp32":
            err = float(np.abs(y - want).max() / np.abs(want).max())
            check(err <= 1e-6, f"mobile fp32: {err:.3g} from onnxruntime (relative to max |y|)")
        print(f"{'ok:  ' if not failures else 'so far failing:'} prelu/hardswish/hardsigmoid {precision}")

    # Transcendentals (the fast kernels' polynomials, approx_math.h): fused == unfused bit for bit,
    # and within 4e-7 of float64 relative to max |y| (a few float ulps of the largest value).
    tmodel = os.path.join(work, "transc.onnx")
    transcendental_model(tmodel)
    x = (rng.standard_normal((4, 257)) * 3).astype(np.float32)
    x.flat[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40]
    want = transcendental_reference(x)
    for precision in ("fp32", "fp16", "bf16"):
        def fused_and_reported(plan, stdout, precision=precision):
            m = re.search(r"codegen\s+(\d+) fused elementwise kernels \((\d+) nodes\)", stdout)
            check(m is not None and int(m.group(2)) >= 6, f"transc {precision}: expected the chain fused: {stdout}")
            # Deterministic: a second compilation gives the same bytes (code included).
            again = plan + ".again"
            run([precis, "compile", tmodel, "-o", again, "--precision", precision, "--quiet"])
            check(open(plan, "rb").read() == open(again, "rb").read(), f"transc {precision}: two compilations differ")
            # The report lists the kernel and the nodes it replaced.
            rep = run([precis, "report", plan, "--json"])
            kernels = json.loads(rep.stdout).get("generated_kernels", {}).get("kernels", []) if rep.returncode == 0 else []
            replaced = sorted(n for k in kernels for n in k["replaced"])
            check(replaced == sorted(["sigmoid", "silu", "tanh", "exp", "erf", "gelu_tanh", "gelu_erf", "add1", "add2"]),
                  f"transc {precision}: report lists {replaced}")
        y = three_modes("transc", tmodel, precision, {"x": x}, fused_and_reported)
        if y is not None and precision == "fp32":
            finite = np.isfinite(want)
            err = float(np.abs(y[finite] - want[finite]).max() / np.abs(want[finite]).max())
            check(err <= 4e-7, f"transc fp32: {err:.3g} from float64 (relative to max |y|)")
            check(bool((np.isnan(y) == np.isnan(want)).all()), "transc fp32: NaN positions differ from float64")
        print(f"{'ok:  ' if not failures else 'so far failing:'} transcendentals {precision}")

    # CUDA plans with --codegen: the chain becomes FusedElementwise steps with PTX modules for
    # sm_80 and sm_90 (and cubins where ptxas is installed); without --codegen CUDA plans do not
    # fuse. On this machine the plans run on the CPU, where a fused step runs the program's
    # reference interpreter: the same bits as the unfused CUDA plan. (The generated GPU kernels
    # themselves run only on a GPU: tests/cuda/make_bundle.py --codegen.)
    xfile = os.path.join(work, "cuda_x.npy")
    np.save(xfile, x)
    ptxas = os.environ.get("PRECIS_PTXAS") or "/usr/local/cuda/bin/ptxas"
    for precision in ("fp32", "fp16"):
        outs = {}
        for mode, extra in (("codegen", ["--codegen"]), ("plain", [])):
            plan = os.path.join(work, f"cuda_{precision}_{mode}.plan")
            r = run([precis, "compile", tmodel, "-o", plan, "--precision", precision, "--device", "cuda"] + extra)
            check(r.returncode == 0, f"cuda {precision} {mode}: compile failed: {r.stderr.strip()}")
            if r.returncode:
                continue
            m = re.search(r"codegen\s+(\d+) fused elementwise kernels \((\d+) nodes\)(.*)", r.stdout)
            if mode == "plain":
                check(m is None, f"cuda {precision}: a CUDA plan without --codegen fused: {m.group(0) if m else ''}")
            else:
                check(m is not None and int(m.group(2)) >= 6 and "sm_80 ptx" in m.group(3) and "sm_90 ptx" in m.group(3),
                      f"cuda {precision}: expected the chain fused with sm_80/sm_90 PTX: {r.stdout}")
                if os.access(ptxas, os.X_OK):
                    check(m is not None and "sm_80 cubin" in m.group(3) and "sm_90 cubin" in m.group(3),
                          f"cuda {precision}: ptxas is installed but no cubins: {m.group(3) if m else r.stdout}")
                rep = run([precis, "report", plan, "--json"])
                modules = json.loads(rep.stdout).get("generated_kernels", {}).get("modules", []) if rep.returncode == 0 else []
                check({"sm_80 ptx", "sm_90 ptx"} <= {mm["target"] for mm in modules}, f"cuda {precision}: report modules {modules}")
            d = os.path.join(work, f"cuda_out_{precision}_{mode}")
            r = run([precis, "run", plan, "--output-dir", d, "--input", f"x={xfile}"])
            check(r.returncode == 0, f"cuda {precision} {mode}: CPU run failed: {r.stderr.strip()}")
            if r.returncode == 0:
                outs[mode] = np.load(os.path.join(d, "y.npy"))
        if len(outs) == 2:
            check(same_bits(outs["codegen"], outs["plain"]), f"cuda {precision}: the fused CUDA plan differs from the unfused one on the CPU")
        print(f"{'ok:  ' if not failures else 'so far failing:'} cuda plans with --codegen {precision}")
    print(f"{checks} checks, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
