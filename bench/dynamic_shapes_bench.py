"""A dynamic plan (compiled without --shape) against plans compiled static for each shape, in the
same run.

usage: .venv/bin/python bench/dynamic_shapes_bench.py PRECIS [--threads 2] [--iterations 20]
           [--model encoder] [--precisions fp32,fp16] [--shapes 1x16,2x64,4x128]

The model is an export in .cache/model-tests/exports/ with symbolic dims batch and seq
(scripts/make_model_tests.py makes it; the encoder: 4 layers, d_model 256, input [batch, seq, 256]).
Prints the CPU flags, then per precision and shape (batch x seq): the median latency of the one
dynamic plan (`precis bench --dim batch=B --dim seq=S`) and of a plan compiled static for that
shape (`--shape input=BxSx256`), their ratio (goal: within 5%), and the dynamic plan's first run
at that shape, which binds it (evaluates the dims, plans the arena, prepares every kernel): the
shape-change cost.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from codegen_bench import cpu_flags  # same folder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bench(precis, plan, threads, iterations, dims):
    args = [precis, "bench", plan, "--threads", str(threads), "--iterations", str(iterations), "--warmup", "3", "--json"]
    for name, value in dims.items():
        args += ["--dim", f"{name}={value}"]
    r = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("precis")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--model", default="encoder")
    ap.add_argument("--precisions", default="fp32,fp16")
    ap.add_argument("--shapes", default="1x16,2x64,4x128")
    a = ap.parse_args()
    model = os.path.join(ROOT, ".cache", "model-tests", "exports", a.model + ".onnx")
    if not os.path.exists(model):
        sys.exit(f"{model} is missing: run scripts/make_model_tests.py first")
    print(f"cpu: {cpu_flags()}")
    print(f"model {a.model}, threads {a.threads}, {a.iterations} iterations")
    print(f"{'precision':<9} {'shape':<8} {'dynamic ms':>10} {'static ms':>10} {'ratio':>6} {'first run ms':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for precision in a.precisions.split(","):
            dynamic = os.path.join(tmp, f"dynamic_{precision}.plan")
            subprocess.run([a.precis, "compile", model, "-o", dynamic, "--quiet", "--precision", precision], check=True)
            for shape in a.shapes.split(","):
                b, s = (int(x) for x in shape.split("x"))
                static = os.path.join(tmp, f"static_{precision}_{shape}.plan")
                subprocess.run([a.precis, "compile", model, "-o", static, "--quiet", "--precision", precision, "--shape", f"input={b}x{s}x256"],
                               check=True)
                d = bench(a.precis, dynamic, a.threads, a.iterations, {"batch": b, "seq": s})
                st = bench(a.precis, static, a.threads, a.iterations, {})
                print(f"{precision:<9} {shape:<8} {d['median_ms']:>10.3f} {st['median_ms']:>10.3f} {d['median_ms'] / st['median_ms']:>6.3f} "
                      f"{d['first_run_ms']:>12.2f}")


if __name__ == "__main__":
    main()
