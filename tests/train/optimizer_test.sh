#!/usr/bin/env bash
# Optimizers and lr schedules against torch.optim: 100 steps on fixed gradients (a loss whose
# gradient is a constant, optimizer_check.py) for SGD (plain, momentum with weight decay, nesterov)
# and AdamW (weight decay, bias correction, eps 1e-8) under the constant, step and cosine
# schedules with and without warmup (optim_reference.py); weights, optimizer state and the lr of
# every step within rel 1e-6 of torch's.
# usage: optimizer_test.sh PRECIS VENV_PYTHON
set -u
PRECIS=$1 PY=$2
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
"$PY" "$HERE/optimizer_check.py" model "$WORK" || exit 1
/usr/bin/python3 "$HERE/optim_reference.py" "$WORK" 2>"$WORK/torch.err" || { cat "$WORK/torch.err"; exit 1; }
while IFS=$'\t' read -r name flags; do
  # shellcheck disable=SC2086  # flags are words
  if ! "$PRECIS" compile "$WORK/model.onnx" --train --loss output --freeze '^grad_' $flags --quiet -o "$WORK/$name.plan" >"$WORK/out" 2>&1 ||
     ! "$PRECIS" train "$WORK/$name.plan" --data "$WORK/data.npz" --steps 100 --no-shuffle --checkpoint "$WORK/ck_$name" \
       --log "$WORK/$name.jsonl" >"$WORK/out" 2>&1; then
    echo "FAIL: $name: $(cat "$WORK/out")"
    failures=$((failures + 1))
    continue
  fi
done <"$WORK/configs.tsv"
"$PY" "$HERE/optimizer_check.py" compare "$WORK" || failures=$((failures + 1))
echo "optimizer_test: $failures failed"
[ "$failures" = 0 ]
