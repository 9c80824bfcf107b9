"""CPU latency of FP32 plans against onnxruntime in the same run, with the same thread count.

usage: .venv/bin/python bench/latency_bench.py PRECIS [--threads 2] [--iterations 20]
           [--models resnet50,mobilenet_v2,vit_b_16,encoder] [--batches 1,8]

Models are the exports in .cache/model-tests/exports/ (scripts/make_model_tests.py makes them).
For each model and batch: precis compile time and planned arena bytes (`precis compile`), precis
median latency (`precis bench`), onnxruntime median latency (same input shapes, random data,
intra-op threads = --threads, sequential execution, all graph optimizations), and the ratio
precis / onnxruntime (lower is better; the goal for FP32 is <= 1.5).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = {  # input name and shape without the batch dim
    "resnet50": ("input", [3, 224, 224]),
    "mobilenet_v2": ("input", [3, 224, 224]),
    "vit_b_16": ("input", [3, 224, 224]),
    "encoder": ("input", [64, 256]),
}


def ort_median(path, name, shape, threads, iterations):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for _ in range(3):
        sess.run(None, {name: x})
    times = []
    for _ in range(iterations):
        t = time.perf_counter()
        sess.run(None, {name: x})
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("precis")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--models", default="resnet50,mobilenet_v2,vit_b_16,encoder")
    p.add_argument("--batches", default="1,8")
    a = p.parse_args()
    exports = os.path.join(ROOT, ".cache", "model-tests", "exports")
    print(f"threads {a.threads}, {a.iterations} iterations, median ms")
    print(f"{'model':<14} {'batch':>5} {'compile ms':>10} {'arena MiB':>10} {'precis ms':>10} {'ort ms':>9} {'ratio':>6}")
    for model in a.models.split(","):
        path = os.path.join(exports, f"{model}.onnx")
        if not os.path.exists(path):
            print(f"{model:<14} missing {path}: run scripts/make_model_tests.py .cache/model-tests")
            continue
        name, shape = SHAPES[model]
        for batch in map(int, a.batches.split(",")):
            full = [batch] + shape
            shape_arg = f"{name}={'x'.join(map(str, full))}"
            with tempfile.TemporaryDirectory() as tmp:
                plan = os.path.join(tmp, "m.plan")
                c = subprocess.run([a.precis, "compile", path, "-o", plan, "--shape", shape_arg], capture_output=True, text=True)
                if c.returncode != 0:
                    print(f"{model:<14} {batch:>5} compile failed: {c.stderr.strip()[:200]}")
                    continue
                compile_ms = float(re.search(r"time\s+([\d.]+) ms", c.stdout).group(1))
                b = subprocess.run([a.precis, "bench", plan, "--json", "--threads", str(a.threads),
                                    "--iterations", str(a.iterations)], capture_output=True, text=True)
                if b.returncode != 0:
                    print(f"{model:<14} {batch:>5} bench failed: {b.stderr.strip()[:200]}")
                    continue
                r = json.loads(b.stdout)
            ort_ms = ort_median(path, name, full, a.threads, a.iterations)
            print(f"{model:<14} {batch:>5} {compile_ms:>10.1f} {r['arena_bytes'] / 2**20:>10.1f} {r['median_ms']:>10.2f} "
                  f"{ort_ms:>9.2f} {r['median_ms'] / ort_ms:>6.2f}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
