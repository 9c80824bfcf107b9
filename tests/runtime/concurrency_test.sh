#!/usr/bin/env bash
# Compiles the bundled example in FP32, FP16 and BF16 and runs concurrency_test on the three plans
# (8 threads, a session each, outputs bitwise equal to one thread's).
#
# usage: concurrency_test.sh PRECIS CONCURRENCY_TEST SCRATCH_DIR
set -euo pipefail
precis=$1
test_binary=$2
tmp=$3
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rm -rf "$tmp" && mkdir -p "$tmp"
plans=()
for p in fp32 fp16 bf16; do
  "$precis" compile "$root/examples/tiny_convnet.onnx" -o "$tmp/tiny_convnet.$p.plan" --shape image=1x3x32x32 \
    --precision "$p" --quiet
  plans+=("$tmp/tiny_convnet.$p.plan")
done
"$test_binary" "${plans[@]}"
