#!/usr/bin/env bash
# precis export of a model exported from PyTorch in training mode (torch_models.py's CNN with
# BatchNormalization training_mode=1): trained for 3 steps, exported, the result is in inference
# form (every BatchNormalization with training_mode 0 and one output), its running statistics
# and weights moved from the source's, and onnxruntime on it matches `precis run` of it
# (rel L2 <= 1e-5: FP32 on both sides, different summation orders).
# usage: export_bn_test.sh PRECIS TORCH_MODELS_DIR VENV_PYTHON
set -u
PRECIS=$1 REF=$2/cnn_bn PY=$3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$PRECIS" compile "$REF/model.onnx" --train --loss cross-entropy --label label --optimizer sgd --lr 0.05 --momentum 0.9 \
  --quiet -o "$WORK/cnn.plan" || fail "compile --train"
"$PRECIS" train "$WORK/cnn.plan" --data "$REF/inputs.npz" --steps 3 --checkpoint "$WORK/ck" >/dev/null || fail "train"
out=$("$PRECIS" export "$WORK/cnn.plan" --checkpoint "$WORK/ck" -o "$WORK/trained.onnx") || fail "export: $out"
grep -q "2 training-mode node(s)" <<<"$out" || fail "export did not report the two BatchNormalizations it converted: $out"
"$PY" -c "import numpy as np; np.save('$WORK/x.npy', np.load('$REF/inputs.npz')['x'])"
"$PRECIS" run "$WORK/trained.onnx" --input x="$WORK/x.npy" --output-dir "$WORK/run" >/dev/null || fail "precis run of the exported model"
"$PY" - "$REF/model.onnx" "$WORK/trained.onnx" "$WORK/x.npy" "$WORK/run/logits.npy" <<'PYEOF' || fail "export check"
import sys
import numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper
source, trained = onnx.load(sys.argv[1]), onnx.load(sys.argv[2])
bns = [n for n in trained.graph.node if n.op_type == "BatchNormalization"]
assert len(bns) == 2, len(bns)
for n in bns:
    mode = [a.i for a in n.attribute if a.name == "training_mode"]
    assert mode in ([], [0]) and len(n.output) == 1, f"{n.name} is not in inference form: {n}"
s = {t.name: numpy_helper.to_array(t) for t in source.graph.initializer}
t = {t.name: numpy_helper.to_array(t) for t in trained.graph.initializer}
for name in ("bn1.running_mean", "bn1.running_var", "bn2.running_var", "conv1.weight", "fc.weight"):
    assert not np.array_equal(s[name], t[name]), f"{name} did not move"
x = np.load(sys.argv[3])
want = ort.InferenceSession(trained.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
got = np.load(sys.argv[4])
err = float(np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want))
print(f"onnxruntime vs precis run on the exported model: rel L2 {err:.2g}")
assert err <= 1e-5, err
PYEOF
echo "export of a training-mode BatchNorm model: ok"
