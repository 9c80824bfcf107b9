"""PyTorch baseline for the GPU benchmark: the same architectures as bench/gpu/make_bench_plans.sh
(torchvision ResNet-50; torch.nn.TransformerEncoder at BERT-base size, as
scripts/export_transformers.py builds it), random weights, under torch.autocast (FP16 or BF16),
eager and (with --compile) torch.compile; plus the measured cuBLAS GEMM peak (8192^3 products).
Timing: CUDA events around each forward, median of --iterations after --warmup runs.

usage: python3 bench/gpu/torch_bench.py [--iterations N] [--warmup N] [--compile]
Prints one JSON object per line.
"""
import json
import sys
import time

import torch
from torch import nn


def median_ms(fn, warmup, iterations):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def build(name):
    torch.manual_seed(0)
    if name == "resnet50":
        import torchvision
        return torchvision.models.resnet50().cuda().eval(), lambda b: torch.randn(b, 3, 224, 224, device="cuda")
    layer = nn.TransformerEncoderLayer(d_model=768, nhead=12, dim_feedforward=3072, dropout=0.0, activation="gelu",
                                       batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=12, enable_nested_tensor=False).cuda().eval()
    return model, lambda b: torch.randn(b, 128, 768, device="cuda")


def main():
    args = sys.argv[1:]
    iterations = int(args[args.index("--iterations") + 1]) if "--iterations" in args else 50
    warmup = int(args[args.index("--warmup") + 1]) if "--warmup" in args else 10
    compile_too = "--compile" in args
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    for p, dt in dtypes.items():
        a = torch.randn(8192, 8192, device="cuda", dtype=dt)
        b = torch.randn(8192, 8192, device="cuda", dtype=dt)
        ms = median_ms(lambda: torch.matmul(a, b), 3, 10)
        print(json.dumps({"kind": "gemm_peak", "precision": p, "median_ms": ms, "tflops_per_s": 2 * 8192**3 / (ms * 1e-3) / 1e12}),
              flush=True)
        del a, b
    for name, batches in (("resnet50", (1, 256)), ("bert_base", (1, 64))):
        model, make = build(name)
        for p, dt in dtypes.items():
            for batch in batches:
                x = make(batch)
                with torch.no_grad(), torch.autocast("cuda", dtype=dt):
                    ms = median_ms(lambda: model(x), warmup, iterations)
                print(json.dumps({"kind": "torch", "model": name, "batch": batch, "precision": p, "mode": "eager",
                                  "median_ms": ms, "throughput_per_s": 1000.0 * batch / ms}), flush=True)
                if compile_too:
                    try:
                        start = time.monotonic()
                        compiled = torch.compile(model)
                        with torch.no_grad(), torch.autocast("cuda", dtype=dt):
                            compiled(x)
                            ms = median_ms(lambda: compiled(x), warmup, iterations)
                        print(json.dumps({"kind": "torch", "model": name, "batch": batch, "precision": p, "mode": "compile",
                                          "median_ms": ms, "throughput_per_s": 1000.0 * batch / ms,
                                          "compile_s": time.monotonic() - start}), flush=True)
                    except Exception as e:  # report, do not hide: the table shows n/a with the reason
                        print(json.dumps({"kind": "torch", "model": name, "batch": batch, "precision": p, "mode": "compile",
                                          "error": str(e)[:300]}), flush=True)
                del x
        del model
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
