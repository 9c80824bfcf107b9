"""--error-budget on the 4-layer transformer encoder (BF16), from the model-test cache.

usage: error_budget_test.py PRECIS CACHE_DIR WORKDIR

Checks that (1) a budget no region exceeds (1.0) keeps nothing in FP32 for that reason and
gives the same plan as no budget; (2) a tight budget (3e-3, below what BF16 MLP blocks add)
keeps some regions in FP32, names them in the report with the measured error, and lowers the
output's relative L2 error against the FP32 plan (measured on a fixed random input).
"""
import json
import os
import subprocess
import sys

import numpy as np


def main():
    precis, cache, work = sys.argv[1:4]
    model = os.path.join(cache, "exports", "encoder.onnx")
    if not os.path.exists(model):
        print("encoder export missing: run scripts/make_model_tests.py")
        return 1
    os.makedirs(work, exist_ok=True)
    shape = ["--shape", "input=1x64x256"]
    x = np.random.default_rng(3).standard_normal((1, 64, 256)).astype(np.float32)
    np.save(os.path.join(work, "input.npy"), x)

    def build(tag, *extra):
        plan, report = os.path.join(work, tag + ".plan"), os.path.join(work, tag + ".json")
        r = subprocess.run([precis, "compile", model, "-o", plan, "--quiet", "--report", report, *shape, *extra], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"FAIL: compile {tag}: {r.stderr.strip()}")
        out = os.path.join(work, tag)
        r = subprocess.run([precis, "run", plan, "--input", "input=" + os.path.join(work, "input.npy"), "--output-dir", out], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"FAIL: run {tag}: {r.stderr.strip()}")
        return json.load(open(report)), np.load(os.path.join(out, "output.npy")).astype(np.float64)

    _, ref = build("fp32", "--precision", "fp32")
    plain_report, plain = build("bf16", "--precision", "bf16")
    loose_report, loose = build("loose", "--precision", "bf16", "--error-budget", "1.0")
    tight_report, tight = build("tight", "--precision", "bf16", "--error-budget", "0.003")
    err = lambda y: float(np.linalg.norm(y - ref) / np.linalg.norm(ref))
    kept = [n for n in tight_report["nodes"] if n["reason"] == "error-budget"]
    print(f"bf16 rel L2 {err(plain):.3g}; budget 1.0: {err(loose):.3g}; budget 3e-3: {err(tight):.3g} with {len(kept)} nodes kept in FP32")
    failures = []
    if any(n["reason"] == "error-budget" for n in loose_report["nodes"]) or err(loose) != err(plain):
        failures.append("a budget of 1.0 changed the plan")
    if not kept or "adds relative error" not in kept[0]["evidence"]:
        failures.append("the tight budget kept no region in FP32 (or gave no evidence)")
    if not err(tight) < err(plain):
        failures.append(f"the tight budget did not lower the error ({err(tight):.3g} vs {err(plain):.3g})")
    if tight_report["summary"]["low_precision_flop_share"] >= plain_report["summary"]["low_precision_flop_share"]:
        failures.append("the tight budget did not reduce the low-precision share")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
