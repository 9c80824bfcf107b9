#!/usr/bin/env bash
# Checkpoints and export on the MLP of torch_reference.py (AdamW, cosine schedule, shuffled data):
# - resume is bitwise: 25 steps straight equal 13 steps + a resume mid-epoch to 25, and a resume
#   from a --checkpoint-every generation, byte for byte in the state file;
# - a save killed halfway (PRECIS_TEST_KILL_IN_CHECKPOINT) leaves the previous checkpoint loadable,
#   and resuming from it still ends bitwise equal;
# - corrupted, truncated, manifest-less and other-plan checkpoints are refused with a message;
# - precis export writes the source model with the trained state (export_check.py: structure
#   unchanged, initializers equal to the state bitwise, onnxruntime matches precis run);
#   inference plans and other plans' checkpoints are refused.
# usage: checkpoint_test.sh PRECIS REF_DIR VENV_PYTHON
set -u
PRECIS=$1 REF=$2 PY=$3
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_error() {  # expect_error TEXT -- COMMAND...: exit status 1 and TEXT in the output
  local text=$1
  shift 2
  out=$("$@" 2>&1)
  rc=$?
  [ "$rc" = 1 ] || fail "'$*' exited $rc, expected 1: $out"
  grep -qF -- "$text" <<<"$out" || fail "'$*' does not say '$text': $out"
}
state_of() { "$PY" -c "import sys; sys.path.insert(0, '$HERE'); from precis_state import checkpoint_state_path as p; print(p('$1'))"; }
same_state() {  # same_state A B WHAT: the state files of checkpoints A and B are byte-identical
  cmp -s "$(state_of "$1")" "$(state_of "$2")" || fail "$3: state differs from the uninterrupted run"
}

PLAN="$WORK/mlp.plan"
"$PRECIS" compile "$REF/mlp.onnx" --train --loss cross-entropy --label label --optimizer adamw --lr 0.01 --weight-decay 0.01 \
  --lr-schedule cosine --warmup-steps 3 --lr-total-steps 25 --quiet -o "$PLAN" || fail "compile --train"
T=("$PRECIS" train "$PLAN" --data "$REF/train.npz" --seed 5)

"${T[@]}" --steps 25 --checkpoint "$WORK/straight" >/dev/null || fail "straight run"
"${T[@]}" --steps 13 --checkpoint "$WORK/half" >/dev/null || fail "first half"
grep -q '"epoch": 2, "batch_in_epoch": 3' "$WORK/half/manifest.json" || fail "step 13 is not epoch 2, batch 3: $(cat "$WORK/half/manifest.json")"
"${T[@]}" --steps 25 --resume "$WORK/half" --checkpoint "$WORK/resumed" >"$WORK/out" 2>&1 || fail "resume: $(cat "$WORK/out")"
grep -q "resumed from .* step 13, epoch 2, batch 3 of 10" "$WORK/out" || fail "no resume line: $(cat "$WORK/out")"
same_state "$WORK/straight" "$WORK/resumed" "13 + resume mid-epoch"

# A save killed halfway through step 16's manifest: the step-8 generation stays current.
PRECIS_TEST_KILL_IN_CHECKPOINT=16 "${T[@]}" --steps 25 --checkpoint "$WORK/killed" --checkpoint-every 8 >/dev/null 2>&1
rc=$?
[ "$rc" = 137 ] || fail "the killed save exited $rc, expected 137 (SIGKILL)"
grep -q '"step": 8,' "$WORK/killed/manifest.json" || fail "after the killed save the manifest is not step 8's: $(cat "$WORK/killed/manifest.json")"
[ -f "$WORK/killed/state-16.bin" ] || fail "the killed save did not get as far as step 16's state file (the hook fired too early)"
"${T[@]}" --steps 25 --resume "$WORK/killed" --checkpoint "$WORK/killed_resumed" >/dev/null 2>&1 || fail "resume after a killed save"
same_state "$WORK/straight" "$WORK/killed_resumed" "resume from the generation before a killed save"
"${T[@]}" --steps 25 --checkpoint "$WORK/every" --checkpoint-every 10 >/dev/null || fail "--checkpoint-every"
same_state "$WORK/straight" "$WORK/every" "--checkpoint-every 10"
ls "$WORK/every" | grep -q "state-20.bin" && fail "an older generation was not removed"

# Bad checkpoints.
cp -r "$WORK/half" "$WORK/flipped"
S=$(state_of "$WORK/flipped")
printf '\x55' | dd of="$S" bs=1 seek=200 conv=notrunc status=none
expect_error "corrupted" -- "${T[@]}" --steps 25 --resume "$WORK/flipped"
cp -r "$WORK/half" "$WORK/truncated"
S=$(state_of "$WORK/truncated")
truncate -s 100 "$S"
expect_error "corrupted or truncated" -- "${T[@]}" --steps 25 --resume "$WORK/truncated"
expect_error "holds no checkpoint" -- "${T[@]}" --steps 25 --resume "$WORK/nothing"
"$PRECIS" compile "$REF/mlp.onnx" --train --loss cross-entropy --label label --optimizer sgd --lr 0.01 --quiet -o "$WORK/other.plan" || fail "compile other"
expect_error "written for another plan" -- "$PRECIS" train "$WORK/other.plan" --data "$REF/train.npz" --steps 25 --resume "$WORK/half"
expect_error "differ from the checkpoint's" -- "${T[@]}" --steps 25 --resume "$WORK/half" --seed 6
sed -i 's/"format": 1/"format": 9/' "$WORK/truncated/manifest.json"
expect_error "has format 9" -- "${T[@]}" --steps 25 --resume "$WORK/truncated"

# Export.
"$PRECIS" export "$PLAN" --checkpoint "$WORK/straight" -o "$WORK/trained.onnx" >/dev/null || fail "export"
"$PRECIS" export "$PLAN" -o "$WORK/initial.onnx" >/dev/null || fail "export of the initial state"
"$PRECIS" run "$WORK/trained.onnx" --input x="$REF/x.npy" --output-dir "$WORK/run" >/dev/null || fail "precis run of the exported model"
"$PY" "$HERE/export_check.py" "$REF/mlp.onnx" "$WORK/trained.onnx" "$WORK/initial.onnx" "$(state_of "$WORK/straight")" "$REF/x.npy" \
  "$WORK/run/logits.npy" || fail "export check"
"$PRECIS" compile "$REF/mlp.onnx" -o "$WORK/infer.plan" --quiet || fail "inference compile"
expect_error "holds no source model" -- "$PRECIS" export "$WORK/infer.plan" -o "$WORK/x.onnx"
expect_error "written for another plan" -- "$PRECIS" export "$WORK/other.plan" --checkpoint "$WORK/straight" -o "$WORK/x.onnx"
echo "checkpoint_test: $failures failed"
[ "$failures" = 0 ]
