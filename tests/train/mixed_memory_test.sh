#!/usr/bin/env bash
# Memory of a mixed-precision training plan: torchvision's ResNet-18 (batch 32, 224x224, BatchNorm in
# training mode) compiled with --precision fp16 must plan at most 0.6x the arena (activations and
# gradients, everything a train_step or eval_step holds besides the weights and the optimizer state)
# of the FP32 training plan. The FP32 arena is measured by the same compile (the report's
# activation_bytes.fp32), and the report must cover the backward graph: every node has a phase and a
# reason, and weight gradients come out of their products in FP32.
# usage: mixed_memory_test.sh PRECIS WORK_DIR
set -eu
PRECIS=$1 WORK=$2
rm -rf "$WORK" && mkdir -p "$WORK"
/usr/bin/python3 - "$WORK/resnet18.onnx" <<'PYEOF' 2>&1 | grep -v -i warn || true
import sys, torch, torchvision
torch.manual_seed(0)
m = torchvision.models.resnet18(num_classes=1000)
m.train()
torch.onnx.export(m, (torch.randn(32, 3, 224, 224),), sys.argv[1], input_names=["x"], output_names=["logits"], opset_version=17,
                  do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING)
PYEOF
test -s "$WORK/resnet18.onnx"
"$PRECIS" compile "$WORK/resnet18.onnx" --train --loss cross-entropy --label label --optimizer sgd --lr 0.1 --momentum 0.9 \
  --precision fp16 --report "$WORK/report.json" -o "$WORK/resnet18.fp16.plan"
/usr/bin/python3 - "$WORK/report.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
a = s["activation_bytes"]
ratio = a["plan"] / a["fp32"]
t = s["training"]
print("arena: fp16 plan %.1f MiB, fp32 plan %.1f MiB, ratio %.3f" % (a["plan"] / 2**20, a["fp32"] / 2**20, ratio))
print("gradients written by backward nodes: %.1f MiB (fp32 plan %.1f MiB); phases %s; loss scaling %s"
      % (t["gradient_bytes"]["plan"] / 2**20, t["gradient_bytes"]["fp32"] / 2**20, t["phase_nodes"], t["loss_scaling"]))
assert ratio <= 0.6, ratio
assert all(n.get("phase") in ("forward", "backward", "optimizer") and n["reason"] for n in r["nodes"]), "every node has a phase and a reason"
back = [n for n in r["nodes"] if n["phase"] == "backward"]
assert sum(n["precision"] == "f16" for n in back) > len(back) // 2, "most backward nodes run in FP16"
filt = [n for n in back if n["op"] == "ConvFilterGrad"]
assert len(filt) == 20 and all(n["outputs"][0]["dtype"] == "f32" for n in filt), "filter gradients written in FP32"
opt = [n for n in r["nodes"] if n["phase"] == "optimizer"]
assert all(n["precision"] in ("f32", "f64", "none") for n in opt), "the optimizer and the loss scaler never run in 16 bits"
assert sum(n["reason"] == "optimizer-fp32" for n in opt) >= 3 * 62, "the optimizer's tensor math is pinned to FP32"
PYEOF
