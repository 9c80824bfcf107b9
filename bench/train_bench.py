#!/usr/bin/env python3
"""Train-step throughput and peak memory of precis against PyTorch on the CPU, same run, same
thread count.

usage: /usr/bin/python3 bench/train_bench.py [PRECIS] [--threads N] [--steps N] [--models a,b,...] [--mixed]
(--steps: train steps per model; default 400 for digits_cnn and mlp_512, whose steps take
milliseconds so that process start and plan load do not dominate, and 20 for the others)

Models (FP32, SGD with momentum 0.9, the same batches in order on both sides):
  digits_cnn  the digits CNN of tests/train/digits_reference.py, batch 32, 8x8 images
  mlp_512     an MLP 256-512-512-10, batch 64
  resnet18    torchvision's ResNet-18 (BatchNorm in training mode), batch 32, 112x112 images
  encoder     the two-layer BERT-style encoder of tests/train/torch_models.py scaled to d=128,
              4 heads, feed-forward 512, sequence 64, vocabulary 1000, batch 32
--mixed: also precis plans compiled with --precision bf16 and fp16 (FP32 master weights; fp16 with
dynamic loss scaling) and PyTorch under torch.autocast("cpu", bfloat16) (PyTorch's CPU autocast has
no float16); each line then gives precis's throughput against PyTorch FP32 and PyTorch autocast.
Each side runs in its own process: precis as `precis train`, PyTorch as a child of this script.
Train-step throughput (the ratio printed) times each side's training loop alone, first step
included: PyTorch's loop around its steps (not its import or model construction), precis's as
`precis train --log` reports it (the last line's samples_per_s: the loop from its start,
batches copied in included, plan load and data reading not). The whole `precis train` process
(start, plan load, data reading, loop) is printed too, as "process". Peak memory is
each process's maximum resident set size (wait4's ru_maxrss, the process forked from a small
launcher so that this script's own size does not count), which includes the data, the runtime
and for PyTorch the interpreter and libraries. Prints the CPU flags first."""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "train"))


def cpu_flags():
    name = "unknown CPU"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            name = line.split(":", 1)[1].strip()
        if line.startswith("flags"):
            flags = [f for f in line.split(":", 1)[1].split() if f.startswith(("avx", "amx", "f16c", "fma"))]
            return name + ": " + " ".join(sorted(flags))
    return name


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(256, 512), torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def make(name, steps):
    """(model, example inputs (dict), data arrays (dict, with label))."""
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    if name == "digits_cnn":
        from digits_reference import SmallCnn
        b, n = 32, 32 * steps
        return SmallCnn(), {"x": rng.random((n, 1, 8, 8), dtype=np.float32)}, rng.integers(0, 10, n), b
    if name == "mlp_512":
        b, n = 64, 64 * steps
        return Mlp(), {"x": rng.standard_normal((n, 256), dtype=np.float32)}, rng.integers(0, 10, n), b
    if name == "resnet18":
        import torchvision
        b, n = 32, 32 * steps
        return torchvision.models.resnet18(num_classes=10), {"x": rng.standard_normal((n, 3, 112, 112), dtype=np.float32)}, rng.integers(0, 10, n), b
    if name == "encoder":
        from torch_models import Encoder
        b, n, seq = 32, 32 * steps, 64
        mask = np.ones((n, seq), np.int64)
        mask[:, seq // 2:] = rng.integers(0, 2, (n, seq - seq // 2))
        model = Encoder(vocab=1000, seq=seq, d=128, heads=4, ff=512, layers=2, classes=3)
        return model, {"ids": rng.integers(0, 1000, (n, seq)), "mask": mask}, rng.integers(0, 3, n), b
    sys.exit(f"unknown model {name}")


# Forks the measured command from a small process: a child's peak RSS (ru_maxrss) includes its
# parent's resident size at fork time, which for this script holds the data and torch.
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write("maxrss_kib=%d\\n" % usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(args, env=None):
    """Runs a process; returns (its stdout, wall seconds, peak RSS in MiB)."""
    start = time.perf_counter()
    p = subprocess.run([sys.executable, "-S", "-c", LAUNCHER] + args, capture_output=True, env=env, text=True)
    seconds = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"{args[0]} failed ({p.returncode}): {p.stderr[-2000:]}")
    rss = [line for line in p.stderr.splitlines() if line.startswith("maxrss_kib=")]
    return p.stdout, seconds, int(rss[-1].split("=")[1]) / 1024


def torch_child(name, npz, steps, threads, autocast=False):
    """The PyTorch side, in its own process: prints the seconds of its training loop."""
    torch.set_num_threads(threads)
    model, _, _, batch = make(name, 1)
    model.train()
    data = np.load(npz)
    inputs = [torch.from_numpy(data[k]) for k in data.files if k != "label"]
    label = torch.from_numpy(data["label"])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    start = time.perf_counter()
    for s in range(steps):
        sl = slice(s * batch, (s + 1) * batch)
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = torch.nn.functional.cross_entropy(model(*[t[sl] for t in inputs]), label[sl])
        loss.backward()
        opt.step()
    print(time.perf_counter() - start)


def bench(name, steps, precis, threads, work, mixed=False):
    model, data, labels, batch = make(name, steps)
    model.train()
    onnx_path = os.path.join(work, name + ".onnx")
    example = tuple(torch.from_numpy(v[:batch]) for v in data.values())
    torch.onnx.export(model, example, onnx_path, input_names=list(data), output_names=["logits"], opset_version=17,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING)
    npz = os.path.join(work, name + ".npz")
    np.savez(npz, label=labels, **data)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    samples = steps * batch
    torch_rates = {}
    for autocast in ([False, True] if mixed else [False]):
        out, _, torch_mib = run_measured([sys.executable, os.path.abspath(__file__), "--torch-child", name, npz, str(steps), str(threads)] +
                                         (["--autocast"] if autocast else []), env)
        torch_rates[autocast] = samples / float(out.strip().splitlines()[-1])
        print("%-11s %4d steps  torch %-13s %8.1f samples/s %6.0f MiB" % (name, steps, "autocast-bf16" if autocast else "fp32",
                                                                          torch_rates[autocast], torch_mib))
    for precision in (["fp32", "bf16", "fp16"] if mixed else ["fp32"]):
        plan = os.path.join(work, name + "." + precision + ".plan")
        subprocess.run([precis, "compile", onnx_path, "--train", "--loss", "cross-entropy", "--label", "label", "--optimizer", "sgd", "--lr", "0.01",
                        "--momentum", "0.9", "--precision", precision, "-o", plan, "--quiet"], check=True)
        log = os.path.join(work, name + "." + precision + ".jsonl")
        _, process_s, precis_mib = run_measured([precis, "train", plan, "--data", npz, "--steps", str(steps), "--no-shuffle", "--log", log], env)
        with open(log) as f:
            precis_rate = json.loads(f.read().splitlines()[-1])["samples_per_s"]
        line = ("%-11s %4d steps  precis %-6s %8.1f samples/s (process %8.1f) %6.0f MiB   train-step throughput precis/torch-fp32 %.2fx"
                % (name, steps, precision, precis_rate, samples / process_s, precis_mib, precis_rate / torch_rates[False]))
        if mixed:
            line += ", precis/torch-autocast-bf16 %.2fx" % (precis_rate / torch_rates[True])
        print(line)


def main():
    args = sys.argv[1:]
    if args and args[0] == "--torch-child":
        return torch_child(args[1], args[2], int(args[3]), int(args[4]), "--autocast" in args)
    precis = args[0] if args and not args[0].startswith("--") else os.path.join(ROOT, "build", "bin", "precis")
    threads = int(args[args.index("--threads") + 1]) if "--threads" in args else 2
    steps = int(args[args.index("--steps") + 1]) if "--steps" in args else None
    models = args[args.index("--models") + 1].split(",") if "--models" in args else ["digits_cnn", "mlp_512", "resnet18", "encoder"]
    torch.set_num_threads(threads)
    print(cpu_flags())
    print("threads %d, torch %s" % (threads, torch.__version__))
    with tempfile.TemporaryDirectory() as work:
        for m in models:
            bench(m, steps or (400 if m in ("digits_cnn", "mlp_512") else 20), precis, threads, work, "--mixed" in args)


if __name__ == "__main__":
    main()
