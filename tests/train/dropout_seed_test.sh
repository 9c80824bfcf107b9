#!/usr/bin/env bash
# `precis train --seed S` seeds the Dropout masks (state dropout.seed): on a small model with an
# active Dropout, two runs with seed 7 give bitwise the same trained state, seed 8 a different
# one, and the checkpoint's dropout.seed is 7 and its dropout.counter the number of steps.
# usage: dropout_seed_test.sh PRECIS VENV_PYTHON
set -u
PRECIS=$1 PY=$2
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$PY" - "$WORK" <<'PYEOF' || fail "model"
import sys
import numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
rng = np.random.default_rng(1)
w = numpy_helper.from_array(rng.standard_normal((8, 3)).astype(np.float32), "w")
ratio = numpy_helper.from_array(np.array(0.5, np.float32), "ratio")
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Dropout", ["h", "ratio"], ["logits"])], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                      [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 3])], [w, ratio])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d + "/m.onnx")
np.savez(d + "/data.npz", x=rng.standard_normal((16, 8)).astype(np.float32), label=rng.integers(0, 3, 16))
PYEOF
"$PRECIS" compile "$WORK/m.onnx" --train --loss cross-entropy --label label --lr 0.1 --quiet -o "$WORK/m.plan" || fail "compile --train"
for run in a:7 b:7 c:8; do
  "$PRECIS" train "$WORK/m.plan" --data "$WORK/data.npz" --steps 3 --no-shuffle --seed "${run#*:}" --checkpoint "$WORK/${run%:*}" >/dev/null ||
    fail "train ${run}"
done
state_of() { "$PY" -c "import sys; sys.path.insert(0, '$HERE'); from precis_state import checkpoint_state_path as p; print(p('$1'))"; }
cmp -s "$(state_of "$WORK/a")" "$(state_of "$WORK/b")" || fail "the same seed gave different states"
cmp -s "$(state_of "$WORK/a")" "$(state_of "$WORK/c")" && fail "seeds 7 and 8 gave the same state"
"$PY" - "$(state_of "$WORK/a")" <<PYEOF || fail "dropout state"
import sys
sys.path.insert(0, "$HERE")
from precis_state import read_state_file
s = read_state_file(sys.argv[1])
assert int(s["dropout.seed"]) == 7, s["dropout.seed"]
assert int(s["dropout.counter"]) == 3, s["dropout.counter"]
PYEOF
echo "dropout masks follow --seed: ok"
