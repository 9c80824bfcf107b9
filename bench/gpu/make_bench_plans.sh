#!/usr/bin/env bash
# Prepares the GPU benchmark's plans on a development machine (no GPU needed): ResNet-50 at batch
# 1 and 256 and a BERT-base-shaped encoder (12 layers, hidden 768, 12 heads, sequence 128) at batch
# 1 and 64, each in FP16 and BF16, compiled for CUDA with --strip-weights: the plans carry no
# weights (a benchmark session fills them with pseudo-random values), so all of them travel in
# well under the 64 MiB a GPU machine takes at once. Weight values do not change the work done.
# The default plans use epilogue fusion and NHWC convolutions; two baseline plans without them
# measure what those rewrites bring.
#
# usage: bench/gpu/make_bench_plans.sh BUILD_DIR OUT_DIR   (OUT_DIR: usually BUNDLE/bench)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=$1 OUT=$2
PRECIS=$BUILD/bin/precis
EXPORTS=.cache/model-tests/exports
mkdir -p "$OUT" "$EXPORTS"
[ -f $EXPORTS/resnet50.onnx ] || /usr/bin/python3 scripts/export_torchvision.py resnet50 $EXPORTS/resnet50.onnx
[ -f $EXPORTS/bert_base.onnx ] || /usr/bin/python3 scripts/export_transformers.py bert_base $EXPORTS/bert_base.onnx
for p in fp16 bf16; do
  for b in 1 256; do
    $PRECIS compile $EXPORTS/resnet50.onnx -o "$OUT/resnet50.b$b.$p.plan" --shape input=${b}x3x224x224 --precision $p \
      --device cuda --strip-weights --quiet
  done
  for b in 1 64; do
    $PRECIS compile $EXPORTS/bert_base.onnx -o "$OUT/bert_base.b$b.$p.plan" --shape input=${b}x128x768 --precision $p \
      --device cuda --strip-weights --quiet
  done
done
# A/B: the same FP16 plans without epilogue fusion and with every convolution NCHW (gpu_table.py
# prints them as "<model> (unfused, NCHW)" rows next to the default plans).
$PRECIS compile $EXPORTS/resnet50.onnx -o "$OUT/resnet50.b256.fp16.baseline.plan" --shape input=256x3x224x224 --precision fp16 \
  --device cuda --strip-weights --quiet --layout nchw --no-epilogue-fusion
$PRECIS compile $EXPORTS/bert_base.onnx -o "$OUT/bert_base.b64.fp16.baseline.plan" --shape input=64x128x768 --precision fp16 \
  --device cuda --strip-weights --quiet --no-epilogue-fusion
ls -la "$OUT"
du -sh "$OUT"
