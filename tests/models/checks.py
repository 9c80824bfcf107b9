"""Shared pieces of the model-level tests (tests/models/*_test.py): a check list that prints
each result and fails the script at the end, and running a plan with `precis run` on .npy inputs.
"""
import os
import subprocess
import sys

import numpy as np


class Checks:
    def __init__(self):
        self.failures = []

    def __call__(self, ok, what):
        print(f"{'ok:  ' if ok else 'FAIL:'} {what}")
        if not ok:
            self.failures.append(what)
        return ok

    def finish(self):
        if self.failures:
            sys.exit(f"{len(self.failures)} failures")
        print("all passed")


def same_bits(a, b):
    """The same dtype, shape and float32 bits, NaN where the other has NaN (any payload)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    na, nb = np.isnan(a), np.isnan(b)
    return bool((na == nb).all() and (a[~na].view(np.uint32) == b[~nb].view(np.uint32)).all())


def run_plan(precis, plan, feeds, out_dir, outputs, extra=(), env=None):
    """Runs `plan` on `feeds` (name -> array, saved next to out_dir), with `extra` arguments for
    `precis run` (e.g. --reference) and `env` (None: this process's); returns the named outputs
    as stored, and "" (or None and precis's stderr when it fails)."""
    args = list(extra)
    for name, value in feeds.items():
        f = f"{out_dir}_{name}.npy"
        np.save(f, value)
        args += ["--input", f"{name}={f}"]
    r = subprocess.run([precis, "run", plan, *args, "--output-dir", out_dir], capture_output=True, text=True, env=env)
    if r.returncode:
        return None, r.stderr.strip()[-400:]
    return [np.load(os.path.join(out_dir, o + ".npy")) for o in outputs], ""
