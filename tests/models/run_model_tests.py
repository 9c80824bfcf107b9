"""Model tests: FP32 and mixed-precision plans of real architectures against onnxruntime.

usage: run_model_tests.py PRECIS CACHE_DIR [--precision fp32|fp16|bf16] [--device cuda] [NAME ...]

--device cuda compiles GPU plans (epilogue fusion; NHWC regions for 16-bit convolutions) and runs
them on the CPU backend, which executes GPU plans as the reference: the same comparisons then
check that those rewrites keep each model's results (the GPU itself is tested by tests/cuda/).

Mixed precision (fp16, bf16): the plan is compiled with --report, checked against the
structural rules of the precision policy (check_report below), run, and each output compared with
onnxruntime's FP32 result: no NaN/Inf, and relative L2 error <= 1e-2 (fp16) or 4e-2 (bf16) --
16-bit storage rounds every stored activation and weight to 11 (fp16) or 8 (bf16) significant
bits, i.e. a relative error of 2^-11 = 4.9e-4 (fp16) or 2^-8 = 3.9e-3 (bf16) per value, which
accumulates over tens of layers; MIXED_TOLERANCES gives a looser bound per model with its reason.

For each prepared model (scripts/make_model_tests.py) runs `precis run MODEL.onnx --shape ...
--input ... --output-dir` and compares every output with onnxruntime's, elementwise:
|precis - ort| <= atol * max(1, max|ort|) + rtol * |ort| with rtol 1e-4, atol 1e-5, and the
relative L2 error of the whole output <= 1e-4 (rtol). Both are FP32 computations whose summation orders
differ (oneDNN vs onnxruntime's kernels): a dot product of K terms of magnitude M carries
rounding of order 1e-7 * sqrt(K) * M, so on an output whose elements reach M, an element that
comes out small through cancellation still has an absolute error that scales with M, not with
itself. Hence the absolute bound scales with the output's largest magnitude (for outputs within
[-1, 1] it is exactly atol 1e-5). TOLERANCES below may give a looser bound with its reason. Prints a table (max abs error, relative L2 error, result) and
exits non-zero if any model fails or is missing.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

DEFAULT = (1e-4, 1e-5)
# name: (rtol, atol, reason)
TOLERANCES = {}
MIXED_DEFAULT = {"fp16": 1e-2, "bf16": 4e-2}
# (name, precision): (relative L2 bound, reason)
# Peer for the torchvision exports with re-estimated BatchNorm statistics: PyTorch 1.13 CPU
# autocast(bfloat16) on the same weights and input, against float64, measured rel L2 errors of
# 0.090 (shufflenet_v2), 0.108 (googlenet), 0.084 (mnasnet) and 0.031 (densenet121); resnet50 and
# mobilenet_v2 0.006. These untrained networks amplify rounding far more than trained ones. BF16
# bounds are 1.25x that peer's error; FP16 (3 more significand bits; PyTorch has no FP16 CPU path
# to measure) 1.25x the peer's error / 8.
MIXED_TOLERANCES = {
    ("shufflenet_v2", "bf16"): (0.113, "1.25x PyTorch autocast-bf16's 0.090 on the same model"),
    ("googlenet", "bf16"): (0.135, "1.25x PyTorch autocast-bf16's 0.108 on the same model"),
    ("mnasnet", "bf16"): (0.105, "1.25x PyTorch autocast-bf16's 0.084 on the same model"),
    ("shufflenet_v2", "fp16"): (0.0141, "1.25x PyTorch autocast-bf16's 0.090 / 8 (FP16 keeps 3 more bits)"),
    ("googlenet", "fp16"): (0.0169, "1.25x PyTorch autocast-bf16's 0.108 / 8 (FP16 keeps 3 more bits)"),
}
# (name, precision): (extra compile options, reason)
MIXED_OPTIONS = {
    ("light_resnet50", "fp16"): (["--calibrate", "random:2"], "random (untrained) weights drive activations past FP16's "
                                 "65504: without calibration the FP16 plan gives Inf/NaN; calibration keeps those tensors in FP32"),
    ("light_shufflenet", "fp16"): (["--calibrate", "random:2"], "as light_resnet50"),
}

SOFTMAX_LIKE = {"Softmax", "LogSoftmax"}
STATISTICS = {"LayerNormalization", "InstanceNormalization", "GroupNormalization", "MeanVarianceNormalization",
              "LpNormalization", "LRN", "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", "CumSum"}
COMPUTE = {"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum"}


def check_report(report, low):
    """Structural rules of the precision policy, checked on the plan's report. Returns a list of violations."""
    problems = []
    nodes = report["nodes"]
    producer = {}
    for n in nodes:
        for o in n["outputs"]:
            producer[o["name"]] = n
    for n in nodes:
        op, name = n["op"], n["name"] or n["op"]
        float_inputs = [i for i in n["inputs"] if i["dtype"] in ("f32", "f16", "bf16")]
        if (op in SOFTMAX_LIKE or op in STATISTICS or op.startswith("Reduce")) and n["reason"] != "user-override":
            for i in float_inputs:
                if i["dtype"] != "f32":
                    problems.append(f"{op} '{name}' reads {i['dtype']} input '{i['name']}'")
        if op in COMPUTE and n["accumulate"] != "f32":
            problems.append(f"{op} '{name}' accumulates in {n['accumulate']}")
        if op == "Cast":
            src = n["inputs"][0]
            if src["constant"]:
                problems.append(f"Cast '{name}' converts constant '{src['name']}' at run time")
            p = producer.get(src["name"])
            if p is not None and p["op"] == "Cast":
                problems.append(f"cast chain: '{p['name']}' -> '{name}'")
            if src["dtype"] not in ("f32", "f16", "bf16", "f64") or n["outputs"][0]["dtype"] not in ("f32", "f16", "bf16", "f64"):
                problems.append(f"Cast '{name}' touches a non-float tensor")
    # Widening (the compiler's capability-table decision, reported per node): every 16-bit node of
    # the oneDNN-backed ops runs widened on the CPU for its kernel; every other node mixing float
    # dtypes among its first input and outputs (conversions aside) runs widened for that; nodes
    # without 16-bit tensors never do; the summary counts the nodes.
    cpu_widened = 0
    for n in nodes:
        op, name = n["op"], n["name"] or n["op"]
        floats = [t["dtype"] for t in n["inputs"][:1] + n["outputs"] if t["dtype"] in ("f32", "f16", "bf16", "f64")]
        every = [t["dtype"] for t in n["inputs"] + n["outputs"]]
        half = any(d in ("f16", "bf16") for d in every)
        cpu = [w for w in n.get("widened", []) if w["backend"] == "cpu"]
        cpu_widened += bool(cpu)
        if not half and n.get("widened"):
            problems.append(f"{op} '{name}' is marked widened without 16-bit tensors")
        elif half and op in ("Conv", "ConvTranspose", "MatMul", "Gemm") and [w["reason"] for w in cpu] != ["widened-kernel"]:
            problems.append(f"{op} '{name}' has 16-bit tensors but is not marked widened-kernel on the CPU: {n.get('widened')}")
        elif half and op not in ("Cast", "CastLike") and len(set(floats)) > 1 and not cpu:
            problems.append(f"{op} '{name}' mixes {sorted(set(floats))} but is not marked widened on the CPU")
    if report["summary"]["widened_steps"]["cpu"] != cpu_widened:
        problems.append(f"summary counts {report['summary']['widened_steps']['cpu']} CPU-widened steps, the nodes {cpu_widened}")
    if report["summary"]["low_precision_flop_share"] < 0.5:
        problems.append(f"only {report['summary']['low_precision_flop_share']:.0%} of FLOPs run in {low}")
    return problems


def compare(got, want, rtol, atol):
    if got.shape != want.shape or got.dtype != want.dtype:
        return False, f"got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}", 0.0, 0.0
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    err = np.abs(g - w)
    max_abs = float(err.max()) if err.size else 0.0
    rel_l2 = float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))
    scale = max(1.0, float(np.abs(w).max())) if w.size else 1.0
    bad = ~(err <= atol * scale + rtol * np.abs(w))
    if np.isnan(g).any() and not np.isnan(w).any():
        return False, "NaN in output", max_abs, rel_l2
    if rel_l2 > rtol:
        return False, f"relative L2 error {rel_l2:.3g} > {rtol}", max_abs, rel_l2
    if bad.any():
        i = np.unravel_index(np.argmax(np.where(bad, err, -1)), err.shape)
        return False, f"{int(bad.sum())} elements out of tolerance, worst at {list(i)}: {g[i]:.7g} vs {w[i]:.7g}", max_abs, rel_l2
    return True, "", max_abs, rel_l2


def compare_mixed(got, want, bound):
    if got.shape != want.shape or got.dtype != want.dtype:
        return False, f"got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}", 0.0, 0.0
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    max_abs = float(np.abs(g - w).max()) if g.size else 0.0
    if not np.isfinite(g).all():
        return False, "NaN/Inf in output", max_abs, float("inf")
    rel_l2 = float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))
    if rel_l2 > bound:
        return False, f"relative L2 error {rel_l2:.3g} > {bound}", max_abs, rel_l2
    return True, "", max_abs, rel_l2


def run_one(precis, d, name, precision, device="cpu"):
    meta = json.load(open(os.path.join(d, "meta.json")))
    rtol, atol = TOLERANCES.get(name, DEFAULT)[:2]
    bound = MIXED_TOLERANCES.get((name, precision), (MIXED_DEFAULT.get(precision, 0),))[0]
    with tempfile.TemporaryDirectory() as out:
        shapes, inputs = [], []
        for k, inp in enumerate(meta["inputs"]):
            shapes += ["--shape", inp["name"] + "=" + "x".join(map(str, inp["shape"]))]
            inputs += ["--input", f"{inp['name']}={os.path.join(d, f'input_{k}.npy')}"]
        start = time.monotonic()
        target = os.path.join(d, "model.onnx")
        if precision != "fp32" or device != "cpu":
            target = os.path.join(out, "model.plan")
            report_path = os.path.join(out, "report.json")
            r = subprocess.run([precis, "compile", os.path.join(d, "model.onnx"), "-o", target, "--precision", precision,
                                "--device", device, "--report", report_path, "--quiet"] + shapes +
                               MIXED_OPTIONS.get((name, precision), ([],))[0], capture_output=True, text=True)
            if r.returncode != 0:
                return [(name, "-", False, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}", 0, 0, 0)]
            problems = check_report(json.load(open(report_path)), precision) if precision != "fp32" else []
            if problems:
                return [(name, "report", False, f"{len(problems)} rule violations, first: {problems[0]}", 0, 0, 0)]
            shapes = []
        r = subprocess.run([precis, "run", target, "--output-dir", out] + shapes + inputs, capture_output=True, text=True)
        seconds = time.monotonic() - start
        if r.returncode != 0:
            return [(name, "-", False, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}", 0, 0, seconds)]
        rows = []
        for k, oname in enumerate(meta["outputs"]):
            fname = "".join("_" if c in "/\\: " else c for c in oname) or "output"
            got = np.load(os.path.join(out, fname + ".npy"))
            want = np.load(os.path.join(d, f"expected_{k}.npy"))
            if precision == "fp32":
                ok, why, max_abs, rel_l2 = compare(got, want, rtol, atol)
            else:
                ok, why, max_abs, rel_l2 = compare_mixed(got, want, bound)
            rows.append((name, oname, ok, why, max_abs, rel_l2, seconds))
        return rows


def main():
    precis, cache, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    precision, device = "fp32", "cpu"
    while names[:1] in (["--precision"], ["--device"]):
        if names[0] == "--precision":
            precision = names[1]
        else:
            device = names[1]
        names = names[2:]
    if not names:
        names = sorted(n for n in os.listdir(cache) if os.path.exists(os.path.join(cache, n, "meta.json")))
    failures = 0
    print(f"{'model':<22} {'output':<10} {'max abs err':>12} {'rel L2':>10} {'time s':>7}  result")
    for name in names:
        d = os.path.join(cache, name)
        if not os.path.exists(os.path.join(d, "meta.json")):
            print(f"{name:<22} missing: run scripts/make_model_tests.py")
            failures += 1
            continue
        failed = False
        for (model, oname, ok, why, max_abs, rel_l2, seconds) in run_one(precis, d, name, precision, device):
            failed |= not ok
            print(f"{model:<22} {oname[:10]:<10} {max_abs:12.3g} {rel_l2:10.3g} {seconds:7.1f}  {'ok' if ok else 'FAIL ' + why}")
        failures += 1 if failed else 0
    print(f"{precision}{' (' + device + ' plans)' if device != 'cpu' else ''}: {len(names) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
