"""Peak memory of running a plan against the plan's size, per precision, in the same run.

usage: .venv/bin/python bench/memory_bench.py PRECIS [--models vit_b_16,resnet50] [--precisions fp32,fp16,bf16]
           [--threads 2] [--iterations 3]

Models are the exports in .cache/model-tests/exports/ (scripts/make_model_tests.py makes them),
batch 1. For each model and precision: compiles the plan, then runs `precis bench PLAN` in a
child process and reads the child's peak resident memory (ru_maxrss from wait4: the process's
high-water mark, program and libraries included). Prints the plan's size, the constant bytes
the plan holds (the compiler's `constants` line), the peak, the peak above the program's own (the
same binary run without a plan, about 265 MiB: libraries) and that over the plan size, and the
median latency. The CPU's flags come first (whether BF16 runs natively changes what the kernels
keep). 16-bit plans run twice: as they are, and with `--fp32-weights` (row "+f32w": FP32
copies of the MatMul/Gemm weights made at load, the faster choice at batch 1). oneDNN keeps weights it reorders into its own layout, so an FP32 plan's ratio is near 2;
an FP32 copy of 16-bit weights adds about 2 to a 16-bit plan's ratio.
"""
import argparse
import os
import re
import subprocess
import tempfile

from codegen_bench import cpu_flags, exported_models  # same folder



def peak_rss(cmd, check=True):
    """Runs cmd; returns (stdout, peak RSS bytes of the child)."""
    with tempfile.TemporaryFile(mode="w+") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if check and p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{text}")
    return text, usage.ru_maxrss * 1024


def main():
    p = argparse.ArgumentParser()
    p.add_argument("precis")
    p.add_argument("--models", default="vit_b_16,resnet50")
    p.add_argument("--precisions", default="fp32,fp16,bf16")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iterations", type=int, default=3)
    a = p.parse_args()
    mib = 1 << 20
    print(f"cpu: {cpu_flags()}")
    print(f"threads {a.threads}, batch 1, {a.iterations} iterations")
    # The program alone (libraries, oneDNN, LLVM for the compiler commands): `precis bench` with
    # no plan, which loads everything and exits with its usage.
    _, base = peak_rss([a.precis, "bench"], check=False)
    print(f"program alone (precis bench without a plan): peak {base / mib:.1f} MiB; 'above' = peak - that")
    print(f"{'model':12} {'prec':10} {'plan MiB':>9} {'constants':>12} {'peak MiB':>9} {'above':>9} {'above/plan':>10} {'median ms':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, input_name, dims in exported_models(a.models):
            shape_arg = f"{input_name}={'x'.join(map(str, [1] + dims))}"
            for prec in a.precisions.split(","):
                plan = os.path.join(tmp, f"{name}_{prec}.plan")
                r = subprocess.run([a.precis, "compile", model, "-o", plan, "--shape", shape_arg, "--precision", prec],
                                   capture_output=True, text=True, check=True)
                w = re.search(r"constants\s+(\S+ \S+)", r.stdout)
                # 16-bit plans also with --fp32-weights (FP32 copies of MatMul/Gemm weights at load).
                for extra in ([[]] if prec == "fp32" else [[], ["--fp32-weights"]]):
                    text, peak = peak_rss([a.precis, "bench", plan, "--threads", str(a.threads), "--iterations", str(a.iterations),
                                           "--warmup", "1"] + extra)
                    ms = float(re.search(r"median ([\d.]+) ms", text).group(1))
                    size = os.path.getsize(plan)
                    label = prec + ("+f32w" if extra else "")
                    print(f"{name:12} {label:10} {size / mib:>9.1f} {w.group(1) if w else '?':>12} {peak / mib:>9.1f} "
                          f"{(peak - base) / mib:>9.1f} {(peak - base) / size:>10.2f} {ms:>10.2f}")


if __name__ == "__main__":
    main()
