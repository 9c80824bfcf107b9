#!/usr/bin/env bash
# Convergence: a small CNN (two convolutions, Relu, a linear layer) trained by precis on the 8x8
# digits (tests/train/data) for 10 epochs reaches >= 97% test accuracy, and its mean training loss
# per epoch is within 5% of PyTorch's with the same initial weights, batches and order
# (digits_reference.py). The 5% leaves room for FP32 drift over 440 steps; measured drift is
# about 0.2%, while a wrong gradient or optimizer formula moves the losses by far more.
# Mixed precision: the same training compiled with --precision fp16 (dynamic loss scaling) and
# bf16 reaches a test accuracy within 1 point of the FP32 plan's.
# usage: digits_convergence_test.sh PRECIS PYTHON(with numpy) WORK_DIR
set -eu
PRECIS=$1 PY=$2 WORK=$3
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$WORK" && mkdir -p "$WORK"
/usr/bin/python3 "$HERE/digits_reference.py" "$WORK" 10
"$PRECIS" compile "$WORK/cnn.onnx" --train --loss cross-entropy --label label --optimizer adamw --lr 0.003 --weight-decay 0.01 \
  -o "$WORK/cnn.train.plan"
"$PRECIS" train "$WORK/cnn.train.plan" --data "$WORK/train.npz" --eval "$WORK/test.npz" --epochs 10 --no-shuffle --log "$WORK/metrics.jsonl"
"$PY" - "$WORK/metrics.jsonl" "$WORK/epoch_losses.npy" <<'PYEOF'
import json, sys
import numpy as np
lines = [json.loads(l) for l in open(sys.argv[1])]
by_epoch = {}
for l in lines:
    if "step" in l:
        by_epoch.setdefault(l["epoch"], []).append(l["loss"])
got = np.array([np.mean(by_epoch[e]) for e in sorted(by_epoch)])
want = np.load(sys.argv[2])
rel = np.abs(got - want) / want
acc = [l["eval_accuracy"] for l in lines if "eval_accuracy" in l]
print("epoch losses precis:", " ".join("%.4f" % g for g in got))
print("epoch losses torch: ", " ".join("%.4f" % w for w in want))
print("max relative difference %.4f; test accuracy after 10 epochs %.4f" % (rel.max(), acc[-1]))
assert len(got) == len(want) == 10, (len(got), len(want))
assert rel.max() <= 0.05, rel
assert acc[-1] >= 0.97, acc
PYEOF

for prec in fp16 bf16; do
  "$PRECIS" compile "$WORK/cnn.onnx" --train --loss cross-entropy --label label --optimizer adamw --lr 0.003 --weight-decay 0.01 \
    --precision $prec -o "$WORK/cnn.$prec.plan"
  "$PRECIS" train "$WORK/cnn.$prec.plan" --data "$WORK/train.npz" --eval "$WORK/test.npz" --epochs 10 --no-shuffle \
    --log "$WORK/metrics.$prec.jsonl" | tail -3
done
"$PY" - "$WORK/metrics.jsonl" "$WORK/metrics.fp16.jsonl" "$WORK/metrics.bf16.jsonl" <<'PYEOF'
import json, sys
def read(path):
    lines = [json.loads(l) for l in open(path)]
    return lines, [l["eval_accuracy"] for l in lines if "eval_accuracy" in l][-1]
_, fp32 = read(sys.argv[1])
for name, path in (("fp16", sys.argv[2]), ("bf16", sys.argv[3])):
    lines, acc = read(path)
    steps = [l for l in lines if "step" in l]
    skipped = sum(l.get("skipped", False) for l in steps)
    print("%s: test accuracy %.4f (fp32 %.4f), %d of %d steps skipped" % (name, acc, fp32, skipped, len(steps)))
    assert acc >= fp32 - 0.01, (name, acc, fp32)
    assert ("loss_scale" in steps[0]) == (name == "fp16"), "fp16 logs its loss scale; bf16 has no scaling by default"
PYEOF
