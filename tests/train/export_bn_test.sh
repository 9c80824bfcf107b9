#!/usr/bin/env bash
# precis export of a model exported from PyTorch in training mode (torch_models.py's CNN with
# BatchNormalization training_mode=1): trained for 3 steps, exported, the result is in inference
# form (every BatchNormalization with training_mode 0 and one output), its running statistics
# and weights moved from the source's, and onnxruntime on it matches `precis run` of it
# (rel L2 <= 1e-5: FP32 on both sides, different summation orders). Then the same model with its
# weights in an external data file and conv1 frozen: the export is self-contained (the frozen
# weight's data inlined, the external file deleted before onnxruntime loads it) and conv1.weight
# equals the source's.
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

mkdir -p "$WORK/ext" "$WORK/out"
"$PY" -c "
import onnx
m = onnx.load('$REF/model.onnx')
onnx.save_model(m, '$WORK/ext/model.onnx', save_as_external_data=True, all_tensors_to_one_file=True, location='weights.bin', size_threshold=0)
" || fail "writing the external-data model"
"$PRECIS" compile "$WORK/ext/model.onnx" --train --loss cross-entropy --label label --freeze 'conv1\..*' --quiet -o "$WORK/ext.plan" ||
  fail "compile --train of the external-data model"
"$PRECIS" train "$WORK/ext.plan" --data "$REF/inputs.npz" --steps 2 --checkpoint "$WORK/ck2" >/dev/null || fail "train (external data)"
"$PRECIS" export "$WORK/ext.plan" --checkpoint "$WORK/ck2" -o "$WORK/out/trained.onnx" >/dev/null || fail "export (external data)"
rm "$WORK/ext/weights.bin"
"$PRECIS" run "$WORK/out/trained.onnx" --input x="$WORK/x.npy" --output-dir "$WORK/run2" >/dev/null || fail "precis run of the exported model"
"$PY" - "$REF/model.onnx" "$WORK/out/trained.onnx" "$WORK/x.npy" "$WORK/run2/logits.npy" <<'PYEOF' || fail "external-data export check"
import sys
import numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper
source, trained = onnx.load(sys.argv[1]), onnx.load(sys.argv[2])
assert not any(t.data_location == onnx.TensorProto.EXTERNAL for t in trained.graph.initializer), "the export points at external data"
s = {t.name: numpy_helper.to_array(t) for t in source.graph.initializer}
t = {t.name: numpy_helper.to_array(t) for t in trained.graph.initializer}
assert np.array_equal(s["conv1.weight"], t["conv1.weight"]), "the frozen weight changed"
assert not np.array_equal(s["fc.weight"], t["fc.weight"]), "fc.weight did not move"
x = np.load(sys.argv[3])
want = ort.InferenceSession(sys.argv[2], providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
err = float(np.linalg.norm(np.load(sys.argv[4]).astype(np.float64) - want) / np.linalg.norm(want))
print(f"external data, conv1 frozen: onnxruntime vs precis run on the exported model: rel L2 {err:.2g}")
assert err <= 1e-5, err
PYEOF
echo "export of an external-data model with a frozen weight: ok"
