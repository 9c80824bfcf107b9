"""Model tests: FP32 plans of real architectures against onnxruntime.

usage: run_model_tests.py PRECIS CACHE_DIR [NAME ...]

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


def run_one(precis, d, name):
    meta = json.load(open(os.path.join(d, "meta.json")))
    rtol, atol = TOLERANCES.get(name, DEFAULT)[:2]
    with tempfile.TemporaryDirectory() as out:
        cmd = [precis, "run", os.path.join(d, "model.onnx"), "--output-dir", out]
        for k, inp in enumerate(meta["inputs"]):
            cmd += ["--shape", inp["name"] + "=" + "x".join(map(str, inp["shape"])),
                    "--input", f"{inp['name']}={os.path.join(d, f'input_{k}.npy')}"]
        start = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.monotonic() - start
        if r.returncode != 0:
            return [(name, "-", False, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}", 0, 0, seconds)]
        rows = []
        for k, oname in enumerate(meta["outputs"]):
            fname = "".join("_" if c in "/\\: " else c for c in oname) or "output"
            got = np.load(os.path.join(out, fname + ".npy"))
            want = np.load(os.path.join(d, f"expected_{k}.npy"))
            ok, why, max_abs, rel_l2 = compare(got, want, rtol, atol)
            rows.append((name, oname, ok, why, max_abs, rel_l2, seconds))
        return rows


def main():
    precis, cache, names = sys.argv[1], sys.argv[2], sys.argv[3:]
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
        for (model, oname, ok, why, max_abs, rel_l2, seconds) in run_one(precis, d, name):
            failures += 0 if ok else 1
            print(f"{model:<22} {oname[:10]:<10} {max_abs:12.3g} {rel_l2:10.3g} {seconds:7.1f}  {'ok' if ok else 'FAIL ' + why}")
    print(f"{len(names) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
