"""Joins precis_plan_bench and torch_bench.py results into the GPU benchmark table.

usage: gpu_table.py PRECIS.jsonl TORCH.jsonl
ratio = Precis throughput / PyTorch autocast eager throughput (>= 1: Precis is at least as fast);
TFLOP/s from the plan's FLOP count (the same architecture for both), and its share of the
measured cuBLAS GEMM peak in the same precision.
"""
import json
import os
import re
import sys


def load(path):
    rows = []
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            rows.append(json.loads(line))
    return rows


def main():
    precis, torch_rows = load(sys.argv[1]), load(sys.argv[2])
    peak = {r["precision"]: r["tflops_per_s"] for r in torch_rows if r.get("kind") == "gemm_peak"}
    base = {(r["model"], r["batch"], r["precision"], r["mode"]): r for r in torch_rows if r.get("kind") == "torch"}
    print(f"{'model':10} {'batch':>5} {'prec':>4} {'precis ms':>10} {'torch ms':>9} {'ratio':>6} {'compile ms':>10} "
          f"{'ratio':>6} {'TFLOP/s':>8} {'% peak':>7}")
    for r in precis:
        m = re.match(r"(\w+)\.b(\d+)\.(fp16|bf16)(\.baseline)?\.plan", os.path.basename(r["plan"]))
        if not m:
            continue
        model, batch, p = m.group(1), int(m.group(2)), m.group(3)
        label = model + (" (unfused, NCHW)" if m.group(4) else "")
        eager, comp = base.get((model, batch, p, "eager")), base.get((model, batch, p, "compile"))
        ratio = eager["median_ms"] / r["median_ms"] if eager else float("nan")
        cms = comp.get("median_ms") if comp else None
        cratio = cms / r["median_ms"] if cms else float("nan")
        share = 100 * r["tflops_per_s"] / peak[p] if p in peak else float("nan")
        print(f"{label:10} {batch:5d} {p:>4} {r['median_ms']:10.3f} {eager['median_ms'] if eager else float('nan'):9.3f} "
              f"{ratio:6.2f} {cms if cms else float('nan'):10.3f} {cratio:6.2f} {r['tflops_per_s']:8.1f} {share:6.1f}%")
    for p, t in peak.items():
        print(f"cuBLAS GEMM peak ({p}, 8192^3 via torch.matmul): {t:.1f} TFLOP/s")
    for r in torch_rows:
        if "error" in r:
            print(f"torch.compile {r['model']} b{r['batch']} {r['precision']}: n/a ({r['error'][:120]})")


if __name__ == "__main__":
    main()
