#!/usr/bin/env bash
# Convergence of mixed-precision training on a language model: a tiny GPT (2 layers, width 64,
# context 32) learns the characters of the license texts Debian's base-files ships
# (gpt_corpus.py) for 800 AdamW steps, compiled in FP32, FP16 (dynamic loss scaling) and BF16
# from the same initial weights, batches and order. Each mixed run must end within 3% of the FP32
# run: the mean training loss of the last 100 steps and the held-out loss after training; and the
# FP16 run may skip (Inf/NaN gradients) fewer than 0.5% of the steps after the first 100.
# usage: gpt_convergence_test.sh PRECIS PYTHON(with numpy) WORK_DIR
set -eu
PRECIS=$1 PY=$2 WORK=$3
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$WORK" && mkdir -p "$WORK"
/usr/bin/python3 "$HERE/gpt_corpus.py" "$WORK" 2>&1 | grep -v -i -e warn -e "torch.where" || true
test -s "$WORK/gpt.onnx"
for prec in fp32 fp16 bf16; do
  "$PRECIS" compile "$WORK/gpt.onnx" --train --loss cross-entropy --label label --optimizer adamw --lr 0.003 --precision $prec \
    -o "$WORK/gpt.$prec.plan" --quiet
  "$PRECIS" train "$WORK/gpt.$prec.plan" --data "$WORK/train.npz" --eval "$WORK/eval.npz" --steps 800 --seed 3 \
    --log "$WORK/metrics.$prec.jsonl" | tail -2
done
"$PY" - "$WORK" <<'PYEOF'
import json, sys
def read(prec):
    lines = [json.loads(l) for l in open(f"{sys.argv[1]}/metrics.{prec}.jsonl")]
    steps = [l for l in lines if "step" in l]
    return steps, sum(l["loss"] for l in steps[-100:]) / 100, [l["eval_loss"] for l in lines if "eval_loss" in l][-1]
ref_steps, ref_train, ref_eval = read("fp32")
print("fp32: last-100 train loss %.4f, held-out loss %.4f" % (ref_train, ref_eval))
assert len(ref_steps) == 800
for prec in ("fp16", "bf16"):
    steps, train, held = read(prec)
    skipped_late = sum(l.get("skipped", False) for l in steps[100:])
    print("%s: last-100 train loss %.4f (%+.2f%%), held-out loss %.4f (%+.2f%%), skipped %d in all, %d after step 100"
          % (prec, train, 100 * (train / ref_train - 1), held, 100 * (held / ref_eval - 1), sum(l.get("skipped", False) for l in steps), skipped_late))
    assert len(steps) == 800
    assert abs(train / ref_train - 1) <= 0.03 and abs(held / ref_eval - 1) <= 0.03, prec
    assert skipped_late < 0.005 * (len(steps) - 100), skipped_late
PYEOF
