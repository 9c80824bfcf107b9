#!/usr/bin/env bash
# GPU test bundles end to end on a development machine: conformance_runner --export compiles a set
# of ONNX node tests for CUDA (every operator needs a CUDA kernel) in FP32, FP16 and BF16 and stores
# the CPU backend's outputs; then
#   replay: cuda_plan_check --device cpu runs the bundle on the CPU backend again: it checks the
#           bundle format, that CUDA-target plans load and run on the CPU (the reference), and that
#           the CPU results are reproducible. It says nothing about the GPU.
#   gpu:    cuda_plan_check on the GPU: exits 77 (skipped, with the reason) where there is none.
#
# usage: bundle_test.sh replay|gpu CONFORMANCE_RUNNER CUDA_PLAN_CHECK NODE_TEST_DIR SCRATCH_DIR
set -u
mode=$1 runner=$2 check=$3 node=$4 dir=$5
if [ "$mode" = replay ]; then
  rm -rf "$dir"
  # Operators from every kernel family: elementwise, data movement, reductions/softmax/norms, products and pools.
  for f in test_add_bcast test_gelu test_cast_FLOAT_to_FLOAT16 test_transpose test_gather_ test_slice test_resize_upsample \
           test_softmax_axis test_layer_normalization_2d test_reduce_mean test_top_k test_matmul_ test_gemm_ test_conv_with \
           test_maxpool_2d_pads test_averagepool_2d_pads; do
    for p in fp32 fp16 bf16; do
      "$runner" --precision "$p" --filter "$f" --export "$dir/$p-$f" wheel-node="$node" > "$dir.log" 2>&1
      rc=$?
      if [ ! -s "$dir/$p-$f/cases.txt" ]; then
        echo "FAIL: no case exported for $p $f (conformance_runner exit $rc):"
        tail -20 "$dir.log"
        exit 1
      fi
    done
  done
  "$check" --device cpu "$dir"/*/
  exit $?
fi
[ -d "$dir" ] || { echo "no bundle in $dir: the replay test makes it"; exit 1; }
"$check" "$dir"/*/
