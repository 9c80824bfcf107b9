"""CPU plans with and without generated fused kernels, and onnxruntime FP32, in the same run.

usage: .venv/bin/python bench/codegen_bench.py PRECIS [--threads 2] [--iterations 20]
           [--models resnet50,mobilenet_v2,vit_b_16,encoder] [--precisions fp32,fp16,bf16] [--batch 1]
           [--baseline "--no-codegen"]

Models are the exports in .cache/model-tests/exports/ (scripts/make_model_tests.py makes them).
Prints the CPU flags, then per model and precision: steps per inference with code generation
(the default) and with --no-codegen, the fused kernels and the nodes they replaced, code
generation time (both targets), arena bytes, precis median latency of both plans (`precis
bench`), and onnxruntime's FP32 median on the same input shape (intra-op threads = --threads);
ratios against the --no-codegen plan and against onnxruntime (lower is better). For FP16 rows
also onnxruntime on the model converted to FP16 (onnxconverter-common's float16 converter,
keep_io_types=True, installed into the venv on first use) and the ratio against it.
--baseline sets the compile flags of the "off" plan (default --no-codegen); e.g. --baseline
"--layout nchw --no-epilogue-fusion" measures the channels-last convolutions and fused post-ops
(docs/cpu.md) instead.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import warnings

import onnx

from latency_bench import ort_median  # same folder: onnxruntime's median latency, same settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = {"resnet50": ("input", [3, 224, 224]), "mobilenet_v2": ("input", [3, 224, 224]), "vit_b_16": ("input", [3, 224, 224]),
          "encoder": ("input", [64, 256])}


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        text = f.read()
    model = re.search(r"model name\s*:\s*(.*)", text)
    flags = set(re.search(r"flags\s*:\s*(.*)", text).group(1).split())
    keep = [k for k in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile") if k in flags]
    return f"{model.group(1) if model else '?'}; {' '.join(keep)}"


def compile_plan(precis, model, plan, shape_arg, precision, extra):
    r = subprocess.run([precis, "compile", model, "-o", plan, "--shape", shape_arg, "--precision", precision] + extra,
                       capture_output=True, text=True, check=True)
    out = r.stdout
    steps = int(re.search(r"steps\s+(\d+)", out).group(1))
    arena = re.search(r"arena\s+(\S+ \S+)", out).group(1)
    m = re.search(r"codegen\s+(\d+) fused elementwise kernels \((\d+) nodes[^)]*\)(.*)", out)
    kernels, nodes, gen_ms = (int(m.group(1)), int(m.group(2)), sum(float(x) for x in re.findall(r"in ([\d.]+) ms", m.group(3)))) if m else (0, 0, 0.0)
    return steps, arena, kernels, nodes, gen_ms


def bench(precis, plan, threads, iterations):
    r = subprocess.run([precis, "bench", plan, "--threads", str(threads), "--iterations", str(iterations), "--warmup", "3"],
                       capture_output=True, text=True, check=True)
    return float(re.search(r"median ([\d.]+) ms", r.stdout).group(1)), ("fallbacks" in r.stdout)


def float16_model(model):
    """The model converted to FP16 by onnxconverter-common (keep_io_types=True; installed into the
    venv on first use)."""
    try:
        from onnxconverter_common import float16
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "onnxconverter-common"], check=True)
        from onnxconverter_common import float16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one warning per truncated small weight
        return float16.convert_float_to_float16(onnx.load(model), keep_io_types=True)


def ort_fp16_median(model, input_name, shape, threads, iterations, tmp):
    """onnxruntime's median on the model converted to FP16 (inputs and outputs kept FP32)."""
    path = os.path.join(tmp, "ort_fp16.onnx")
    onnx.save(float16_model(model), path)
    return ort_median(path, input_name, shape, threads, iterations)


def exported_models(names):
    """(name, path, input name, input dims without the batch) of each model export that exists
    (.cache/model-tests/exports/), saying which are missing."""
    exports = os.path.join(ROOT, ".cache", "model-tests", "exports")
    for name in names.split(","):
        model = os.path.join(exports, name + ".onnx")
        if not os.path.exists(model):
            print(f"{name}: missing {model} (run the model tests first)")
            continue
        yield name, model, SHAPES[name][0], SHAPES[name][1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("precis")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--models", default="resnet50,mobilenet_v2,vit_b_16,encoder")
    p.add_argument("--precisions", default="fp32,fp16,bf16")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--baseline", default="--no-codegen", help="compile flags of the 'off' plan")
    a = p.parse_args()
    print(f"cpu: {cpu_flags()}")
    print(f"'off' plans: {a.baseline}")
    print(f"threads {a.threads}, batch {a.batch}, {a.iterations} iterations, median ms")
    print(f"{'model':14} {'prec':5} {'steps gen/off':>13} {'fused':>11} {'gen ms':>7} {'arena gen / off':>22} "
          f"{'gen ms/run':>10} {'off ms/run':>10} {'gen/off':>7} {'ort fp32':>8} {'gen/ort':>7} {'ort fp16':>8} {'gen/o16':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, input_name, dims in exported_models(a.models):
            shape = [a.batch] + dims
            shape_arg = f"{input_name}={'x'.join(map(str, shape))}"
            ort_ms = ort_median(model, input_name, shape, a.threads, a.iterations)
            ort16_ms = ort_fp16_median(model, input_name, shape, a.threads, a.iterations, tmp) if "fp16" in a.precisions else None
            for prec in a.precisions.split(","):
                gen_plan, off_plan = os.path.join(tmp, "gen.plan"), os.path.join(tmp, "off.plan")
                g = compile_plan(a.precis, model, gen_plan, shape_arg, prec, [])
                o = compile_plan(a.precis, model, off_plan, shape_arg, prec, a.baseline.split())
                gen_ms, gen_fb = bench(a.precis, gen_plan, a.threads, a.iterations)
                off_ms, _ = bench(a.precis, off_plan, a.threads, a.iterations)
                print(f"{name:14} {prec:5} {g[0]:>6}/{o[0]:<6} {g[2]:>4} ({g[3]:>3}) {g[4]:>7.0f} {g[1]:>10} / {o[1]:<9} "
                      f"{gen_ms:>10.2f} {off_ms:>10.2f} {gen_ms / off_ms:>7.3f} {ort_ms:>8.2f} {gen_ms / ort_ms:>7.2f}"
                      + (f" {ort16_ms:>8.2f} {gen_ms / ort16_ms:>7.2f}" if prec == "fp16" and ort16_ms else "")
                      + f"{'  (fallbacks!)' if gen_fb else ''}")


if __name__ == "__main__":
    main()
