#!/usr/bin/env bash
# The GPU benchmark (run by tests/cuda/gpu_check.sh on a GPU machine): every plan in BENCH_DIR
# (bench/gpu/make_bench_plans.sh) through precis_plan_bench, the PyTorch autocast baseline
# (bench/gpu/torch_bench.py) on the same GPU, and a table of throughput ratios and TFLOP/s
# against the measured cuBLAS GEMM peak.
#
# usage: bench/gpu/run_gpu_bench.sh PRECIS_PLAN_BENCH BENCH_DIR   (TORCH_COMPILE=1 adds torch.compile)
set -uo pipefail
BENCH_BIN=$1 DIR=$2
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d)
"$BENCH_BIN" --iterations 50 --warmup 10 "$DIR"/*.plan > "$OUT/precis.jsonl" || echo "precis_plan_bench failed (exit $?)"
python3 "$HERE/torch_bench.py" --iterations 50 --warmup 10 ${TORCH_COMPILE:+--compile} > "$OUT/torch.jsonl" || echo "torch_bench failed (exit $?)"
python3 "$HERE/gpu_table.py" "$OUT/precis.jsonl" "$OUT/torch.jsonl"
