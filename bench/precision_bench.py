"""Mixed-precision benchmark: compile time, planned bytes, CPU latency and casts.

usage: .venv/bin/python bench/precision_bench.py build/bin/precis [--threads 2] [--iterations 10]

On the exported models in .cache/model-tests/exports (tests/models/model_tests.sh makes them):
  1. FP16 compile time of resnet50 and vit_b_16 at batch 1 (median of 3 `precis compile` runs,
     as the tool reports it, which includes import);
  2. planned activation (arena) and weight bytes of the FP16 plan over the FP32 plan, resnet50 at
     batch 32 and vit_b_16 at batch 1 (from the report's summary);
  3. CPU latency (median, same thread count, same run) of the BF16 and FP16 plans and the FP32
     plan against onnxruntime FP32, resnet50 and vit_b_16 at batch 1;
  4. Cast nodes in the plan against onnxconverter-common's float16 converter with
     keep_io_types=True on the same models (installed into .venv on first use).
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
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from latency_bench import ort_median  # noqa: E402  (the same onnxruntime timing as the FP32 bench)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPORTS = os.path.join(ROOT, ".cache", "model-tests", "exports")


def compile_plan(precis, model, plan, precision, shape, report=None):
    cmd = [precis, "compile", model, "-o", plan, "--precision", precision, "--shape", shape]
    if report:
        cmd += ["--report", report]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"time\s+([\d.]+) ms", out).group(1))


def precis_latency(precis, plan, threads, iterations):
    out = subprocess.run([precis, "bench", plan, "--threads", str(threads), "--iterations", str(iterations), "--json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["median_ms"]


def ort_latency(model, shape, threads, iterations):
    name = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).get_inputs()[0].name
    return ort_median(model, name, shape, threads, iterations)


def converter_casts(model):
    from codegen_bench import float16_model  # same folder
    return sum(1 for n in float16_model(model).graph.node if n.op_type == "Cast")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("precis")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iterations", type=int, default=10)
    a = p.parse_args()
    shapes = {"resnet50": [3, 224, 224], "vit_b_16": [3, 224, 224]}
    tmp = tempfile.mkdtemp()
    print("1. FP16 compile time (batch 1, median of 3)")
    for m in shapes:
        model = os.path.join(EXPORTS, m + ".onnx")
        ms = statistics.median(compile_plan(a.precis, model, os.path.join(tmp, "c.plan"), "fp16", "input=1x3x224x224") for _ in range(3))
        fp32 = statistics.median(compile_plan(a.precis, model, os.path.join(tmp, "c.plan"), "fp32", "input=1x3x224x224") for _ in range(3))
        print(f"   {m:<10} fp16 {ms:8.1f} ms   (fp32 {fp32:8.1f} ms)")
    print("2. FP16 / FP32 planned bytes")
    for m, batch in [("resnet50", 32), ("vit_b_16", 1)]:
        model = os.path.join(EXPORTS, m + ".onnx")
        rep = os.path.join(tmp, m + ".json")
        compile_plan(a.precis, model, os.path.join(tmp, "b.plan"), "fp16", f"input={batch}x3x224x224", rep)
        s = json.load(open(rep))["summary"]
        act, w = s["activation_bytes"], s["weight_bytes"]
        print(f"   {m:<10} b{batch:<3} activations {act['plan'] / 2**20:8.1f} / {act['fp32'] / 2**20:8.1f} MiB = {act['plan'] / act['fp32']:.3f};"
              f" weights {w['plan'] / 2**20:7.1f} / {w['fp32'] / 2**20:7.1f} MiB = {w['plan'] / w['fp32']:.3f};"
              f" low-precision FLOPs {s['low_precision_flop_share']:.1%}")
    print(f"3. CPU latency, batch 1, {a.threads} threads, median of {a.iterations} (ms; ratio to onnxruntime FP32)")
    for m, shape in shapes.items():
        model = os.path.join(EXPORTS, m + ".onnx")
        row = {}
        for prec in ("fp32", "bf16", "fp16"):
            plan = os.path.join(tmp, f"{m}.{prec}.plan")
            compile_plan(a.precis, model, plan, prec, "input=1x3x224x224")
            row[prec] = precis_latency(a.precis, plan, a.threads, a.iterations)
        o = ort_latency(model, [1] + shape, a.threads, a.iterations)
        print(f"   {m:<10} ort fp32 {o:8.1f} | precis fp32 {row['fp32']:8.1f} ({row['fp32'] / o:.2f}) bf16 {row['bf16']:8.1f} "
              f"({row['bf16'] / o:.2f}) fp16 {row['fp16']:8.1f} ({row['fp16'] / o:.2f})")
    print("4. Cast nodes: precis fp16 plan vs onnxconverter-common float16 (keep_io_types=True)")
    for m in list(shapes) + ["encoder"]:
        model = os.path.join(EXPORTS, m + ".onnx")
        rep = os.path.join(tmp, m + ".casts.json")
        shape = "input=1x64x256" if m == "encoder" else "input=1x3x224x224"
        compile_plan(a.precis, model, os.path.join(tmp, "k.plan"), "fp16", shape, rep)
        ours = json.load(open(rep))["summary"]["casts"]
        print(f"   {m:<10} precis {ours:4d}   onnxconverter-common {converter_casts(model):4d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
