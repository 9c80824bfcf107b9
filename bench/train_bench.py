#!/usr/bin/env python3
"""Train-step throughput of precis against PyTorch on the CPU, same run, same thread count.

usage: /usr/bin/python3 bench/train_bench.py [PRECIS] [--threads N] [--epochs N]

Models: the digits CNN of tests/train/digits_reference.py (batch 32, 8x8 images) and the MLP of
tests/train/torch_reference.py scaled up (batch 64, 256-512-512-10). Both sides run AdamW, FP32,
the same batches in order; precis is timed as `precis train` (one process: plan load, data
reading and the training loop), PyTorch as its training loop alone (not its import), so the
comparison is conservative for precis. Prints the CPU flags, samples/s of both and the ratio."""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def cpu_flags():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            name = line.split(":", 1)[1].strip()
        if line.startswith("flags"):
            flags = [f for f in line.split(":", 1)[1].split() if f.startswith(("avx", "amx", "f16c", "fma"))]
            return name + ": " + " ".join(sorted(flags))
    return "unknown CPU"


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(256, 512), torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def bench(name, model, example, data, labels, epochs, precis, threads, work):
    batch = example.shape[0]
    path = os.path.join(work, name + ".onnx")
    torch.onnx.export(model, example, path, input_names=["x"], output_names=["logits"], opset_version=17, do_constant_folding=False)
    np.savez(os.path.join(work, name + ".npz"), x=data, label=labels)
    plan = os.path.join(work, name + ".plan")
    subprocess.run([precis, "compile", path, "--train", "--loss", "cross-entropy", "--label", "label", "--optimizer", "adamw", "--lr", "0.001",
                    "-o", plan, "--quiet"], check=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    start = time.perf_counter()
    subprocess.run([precis, "train", plan, "--data", os.path.join(work, name + ".npz"), "--epochs", str(epochs), "--no-shuffle"], check=True,
                   env=env, stdout=subprocess.DEVNULL)
    precis_s = time.perf_counter() - start
    opt = torch.optim.AdamW(model.parameters(), lr=0.001)
    xt, yt = torch.from_numpy(data), torch.from_numpy(labels)
    steps = len(data) // batch
    start = time.perf_counter()
    for _ in range(epochs):
        for b in range(steps):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xt[b * batch:(b + 1) * batch]), yt[b * batch:(b + 1) * batch]).backward()
            opt.step()
    torch_s = time.perf_counter() - start
    samples = epochs * steps * batch
    print("%-12s precis %9.0f samples/s   torch %9.0f samples/s   precis/torch %.2fx" % (name, samples / precis_s, samples / torch_s, torch_s / precis_s))


def main():
    args = sys.argv[1:]
    precis = args[0] if args and not args[0].startswith("--") else os.path.join(ROOT, "build", "bin", "precis")
    threads = int(args[args.index("--threads") + 1]) if "--threads" in args else 2
    epochs = int(args[args.index("--epochs") + 1]) if "--epochs" in args else 5
    torch.set_num_threads(threads)
    print(cpu_flags())
    print("threads %d, epochs %d, torch %s" % (threads, epochs, torch.__version__))
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as work:
        sys.path.insert(0, os.path.join(ROOT, "tests", "train"))
        from digits_reference import SmallCnn
        torch.manual_seed(0)
        x = rng.random((1440, 1, 8, 8), dtype=np.float32)
        bench("digits_cnn", SmallCnn(), torch.zeros(32, 1, 8, 8), x, rng.integers(0, 10, 1440), epochs, precis, threads, work)
        x = rng.standard_normal((4096, 256), dtype=np.float32)
        bench("mlp_512", Mlp(), torch.zeros(64, 256), x, rng.integers(0, 10, 4096), epochs, precis, threads, work)


if __name__ == "__main__":
    main()
