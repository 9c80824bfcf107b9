#!/usr/bin/env bash
# Training plans for the CUDA backend: `precis compile --train --device cuda` of the four Training I
# models (CNN with BatchNorm, ResNet-18, encoder, GPT) in FP32, FP16 and BF16 must succeed, which
# needs a CUDA kernel for every step (the emitter lists the missing ones and fails otherwise).
# Where a GPU is usable, each plan (the GPT's excepted: per-token labels) then trains 3 steps on the CPU and on the GPU from the same
# state and data and the losses must agree (FP32 rel 1e-4: summation order; FP16/BF16 rel 2e-2:
# 16-bit roundings of values that differ by the summation order). Without a GPU that part is
# reported as not run, with the reason.
# usage: cuda_train_plans_test.sh PRECIS TORCH_MODELS_DIR
set -euo pipefail
precis=$1 models=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0 gpu_runs=0 gpu_reason=""
for m in cnn_bn resnet18 encoder gpt; do
  for p in fp32 fp16 bf16; do
    plan=$work/$m.$p.plan
    if ! "$precis" compile "$models/$m/model.onnx" --train --loss cross-entropy --label label --optimizer adamw --lr 0.001 \
         --precision "$p" --device cuda -o "$plan" > "$work/compile.log" 2>&1; then
      echo "FAIL $m $p: the CUDA training plan does not compile:"; cat "$work/compile.log"; fail=1; continue
    fi
    if ! grep -q "device cuda: every step has a CUDA kernel" "$work/compile.log"; then echo "FAIL $m $p: not compiled for the CUDA backend"; fail=1; continue; fi
    echo "ok   $m $p: CUDA training plan compiled"
    # CPU vs GPU: 3 steps each, the same data order. Not the GPT: its labels are per token
    # (batch x sequence, flattened), which precis train's sample batching does not take.
    [ "$m" = gpt ] && continue
    if ! "$precis" train "$plan" --data "$models/$m/inputs.npz" --steps 3 --no-shuffle --log "$work/cpu.jsonl" > "$work/cpu.log" 2>&1; then
      echo "FAIL $m $p: precis train on the CPU:"; cat "$work/cpu.log"; fail=1; continue
    fi
    if ! "$precis" train "$plan" --data "$models/$m/inputs.npz" --steps 3 --no-shuffle --log "$work/gpu.jsonl" --device cuda \
         > "$work/gpu.log" 2>&1; then
      if grep -q "no usable CUDA device\|CUDA backend is not built" "$work/gpu.log"; then
        gpu_reason=$(tail -1 "$work/gpu.log"); continue
      fi
      echo "FAIL $m $p: precis train --device cuda:"; cat "$work/gpu.log"; fail=1; continue
    fi
    tol=2e-2; [ "$p" = fp32 ] && tol=1e-4
    if python3 - "$work/cpu.jsonl" "$work/gpu.jsonl" "$tol" <<'PY'
import json, sys
cpu = [json.loads(l)["loss"] for l in open(sys.argv[1]) if '"loss"' in l]
gpu = [json.loads(l)["loss"] for l in open(sys.argv[2]) if '"loss"' in l]
tol = float(sys.argv[3])
bad = len(cpu) != 3 or len(gpu) != 3 or any(abs(a - b) > tol * max(abs(a), 1e-3) for a, b in zip(cpu, gpu))
print("   losses cpu", cpu, "gpu", gpu)
sys.exit(1 if bad else 0)
PY
    then gpu_runs=$((gpu_runs + 1)); echo "ok   $m $p: GPU losses match the CPU's"
    else echo "FAIL $m $p: GPU losses differ from the CPU's (tolerance $tol)"; fail=1; fi
  done
done
if [ -n "$gpu_reason" ]; then echo "GPU parity not run (no GPU here): $gpu_reason"; else echo "GPU parity: $gpu_runs plans"; fi
exit $fail
