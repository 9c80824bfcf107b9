#!/usr/bin/env bash
# precis compile --train and precis train end to end on the MLP of torch_reference.py: the
# per-step losses of 2 epochs without shuffling match torch.optim.AdamW on the same batches
# (rel 1e-3 per step: FP32 on both sides, summation orders differ, 20 steps of drift), the metrics
# log has one line per step and per evaluation, a checkpoint is written, and bad input (bad data
# files, a model with symbolic dims and no --shape) gives a clear error with exit status 1.
# usage: train_cli_test.sh PRECIS REF_DIR PYTHON
set -u
PRECIS=$1 REF=$2 PY=$3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_error STATUS TEXT -- COMMAND...: the command exits with STATUS and prints TEXT.
expect_error() {
  local want=$1 text=$2
  shift 3
  out=$("$@" 2>&1)
  rc=$?
  [ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want: $out"
  grep -qF -- "$text" <<<"$out" || fail "'$*' does not say '$text': $out"
}

"$PRECIS" compile "$REF/mlp.onnx" --train --loss cross-entropy --label label --optimizer adamw --lr 0.01 --weight-decay 0.01 \
  -o "$WORK/mlp.train.plan" || fail "compile --train"
"$PRECIS" train "$WORK/mlp.train.plan" --data "$REF/train.npz" --eval "$REF/eval.npz" --epochs 2 --no-shuffle \
  --log "$WORK/metrics.jsonl" --checkpoint "$WORK/ckpt" >"$WORK/train.out" 2>&1 || fail "train: $(cat "$WORK/train.out")"
cat "$WORK/train.out"
grep -q "dropped" "$WORK/train.out" || fail "the partial last batch is not reported"
grep -q "eval loss" "$WORK/train.out" || fail "no evaluation line"
[ -f "$WORK/ckpt/manifest.json" ] && [ -f "$WORK/ckpt/state-20.bin" ] || fail "no checkpoint"
"$PY" - "$WORK/metrics.jsonl" "$REF/train_losses.npy" <<'PYEOF' || fail "metrics log against torch"
import json, sys
import numpy as np
lines = [json.loads(l) for l in open(sys.argv[1])]
steps = [l for l in lines if "step" in l]
evals = [l for l in lines if "eval_loss" in l]
want = np.load(sys.argv[2])
assert len(steps) == len(want) == 20, (len(steps), len(want))
assert len(evals) == 2 and all(0 <= e["eval_accuracy"] <= 1 for e in evals), evals
for s in steps:
    assert set(s) == {"epoch", "step", "loss", "lr", "samples_per_s"}, s
got = np.array([s["loss"] for s in steps])
rel = np.abs(got - want) / np.abs(want)
print("per-step loss vs torch: max rel %.2e over %d steps; loss %.4f -> %.4f" % (rel.max(), len(got), got[0], got[-1]))
assert rel.max() <= 1e-3, rel
PYEOF

# Bad input: each a clear error, exit 1.
"$PY" -c "import numpy as np; np.savez('$WORK/nox.npz', label=np.zeros(12, dtype=np.int64))"
"$PY" -c "import numpy as np; np.savez('$WORK/badtype.npz', x=np.zeros((12, 8), dtype=np.float64), label=np.zeros(12, dtype=np.int64))"
"$PY" -c "import numpy as np; np.savez('$WORK/badshape.npz', x=np.zeros((12, 7), dtype=np.float32), label=np.zeros(12, dtype=np.int64))"
expect_error 1 "has no array 'x'" -- "$PRECIS" train "$WORK/mlp.train.plan" --data "$WORK/nox.npz"
expect_error 1 "is f64, the plan wants f32" -- "$PRECIS" train "$WORK/mlp.train.plan" --data "$WORK/badtype.npz"
expect_error 1 "has shape 12x7" -- "$PRECIS" train "$WORK/mlp.train.plan" --data "$WORK/badshape.npz"
# A model with a symbolic batch dim (the bundled example): a training plan needs static shapes,
# and the error says how to give them (it once aborted in the gradient builder).
EXAMPLE=$(dirname "$0")/../../examples/tiny_convnet.onnx
expect_error 1 "give them with --shape image=32x3x32x32" -- "$PRECIS" compile "$EXAMPLE" --train --loss cross-entropy --label label -o "$WORK/x.plan"
"$PY" - "$WORK" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
w = sys.argv[1]
x = np.ones((12, 8), np.float32)
np.savez(w + "/nolabel.npz", x=x)
np.savez(w + "/labeltype.npz", x=x, label=np.zeros(12, np.float32))
np.savez(w + "/labelshape.npz", x=x, label=np.zeros((12, 2), np.int64))
def save(nodes, inits, path):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 8])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
# No initializers at all; and a weight reaching the loss through ops without gradient rules.
save([helper.make_node("Relu", ["x"], ["y"])], [], w + "/noweights.onnx")
save([helper.make_node("Mul", ["x", "w"], ["h"]), helper.make_node("Sin", ["h"], ["s"]), helper.make_node("Cos", ["s"], ["y"])],
     [numpy_helper.from_array(np.full((6, 8), 0.5, np.float32), "w")], w + "/norule.onnx")
PYEOF
expect_error 1 "has no array 'label'" -- "$PRECIS" train "$WORK/mlp.train.plan" --data "$WORK/nolabel.npz"
expect_error 1 "array 'label' is f32, the plan wants i64" -- "$PRECIS" train "$WORK/mlp.train.plan" --data "$WORK/labeltype.npz"
expect_error 1 "array 'label' has shape 12x2" -- "$PRECIS" train "$WORK/mlp.train.plan" --data "$WORK/labelshape.npz"
expect_error 1 "no trainable weights" -- "$PRECIS" compile "$WORK/noweights.onnx" --train --loss mse --label target -o "$WORK/x.plan"
expect_error 1 "no gradient rule for" -- "$PRECIS" compile "$WORK/norule.onnx" --train --loss mse --label target -o "$WORK/x.plan"
expect_error 1 "Sin" -- "$PRECIS" compile "$WORK/norule.onnx" --train --loss mse --label target -o "$WORK/x.plan"
expect_error 1 "Cos" -- "$PRECIS" compile "$WORK/norule.onnx" --train --loss mse --label target -o "$WORK/x.plan"
expect_error 1 "unknown learning-rate schedule 'linear'" -- "$PRECIS" compile "$REF/mlp.onnx" --train --label label --lr-schedule linear -o "$WORK/x.plan"
"$PRECIS" compile "$REF/mlp.onnx" --train --label label --lr-schedule cosine --warmup-steps 30 --quiet -o "$WORK/cos.plan" || fail "cosine compile"
expect_error 1 "leaves none after its 30 warmup steps" -- "$PRECIS" train "$WORK/cos.plan" --data "$REF/train.npz" --epochs 2
expect_error 1 "needs --lr-step-size" -- "$PRECIS" compile "$REF/mlp.onnx" --train --label label --lr-schedule step -o "$WORK/x.plan"
expect_error 1 "unknown loss 'hinge'" -- "$PRECIS" compile "$REF/mlp.onnx" --train --loss hinge --label label -o "$WORK/x.plan"
expect_error 1 "unknown optimizer 'rmsprop'" -- "$PRECIS" compile "$REF/mlp.onnx" --train --optimizer rmsprop --label label -o "$WORK/x.plan"
expect_error 1 "not a scalar" -- "$PRECIS" compile "$REF/mlp.onnx" --train --loss output -o "$WORK/x.plan"
expect_error 1 "nothing to train" -- "$PRECIS" compile "$REF/mlp.onnx" --train --label label --freeze . -o "$WORK/x.plan"
"$PRECIS" compile "$REF/mlp.onnx" -o "$WORK/infer.plan" --quiet || fail "inference compile"
expect_error 1 "not a training plan" -- "$PRECIS" train "$WORK/infer.plan" --data "$REF/train.npz"
echo "train_cli: $failures failed"
[ "$failures" = 0 ]
