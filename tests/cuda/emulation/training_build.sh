#!/bin/bash
# Builds and runs the training family's host emulation check (training_harness.cc): the CUDA
# kernels of the training operators (runtime/cuda/kernels/training.cu) as written, compiled by the
# host compiler against fiber_cuda.h, compared with the CPU reference kernels. No GPU and no nvcc
# needed; BUILD (default build) gives the plan header. SANITIZE=1 adds AddressSanitizer and UBSan.
# Usage: tests/cuda/emulation/training_build.sh [OUT_DIR [FILTER]]
set -e
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
HERE=$ROOT/tests/cuda/emulation
OUT=${1:-/tmp/training_emulation}
BUILD=${BUILD:-$ROOT/build}
mkdir -p "$OUT/include" "$OUT/obj"
source "$ROOT/tests/cuda/emulation/cpu_libs.sh"
for h in cuda_runtime.h cuda_runtime_api.h cuda_fp16.h cuda_bf16.h cublasLt.h cudnn.h; do
  printf '#pragma once\n#include "%s/fiber_cuda.h"\n' "$HERE" > "$OUT/include/$h"
done
KERNELS="runtime/cuda/kernels/training.cu"
python3 "$HERE/fiber_rewrite.py" "$ROOT" "$OUT/src" runtime/cuda/device_util.cuh $KERNELS
SAN=""
if [ -n "$SANITIZE" ]; then SAN="-fsanitize=address,undefined -fno-sanitize=alignment"; fi
CXX="g++ -std=c++20 -O1 -g1 -w -fno-strict-aliasing $SAN -I$OUT/include -I$OUT/src -I$ROOT -I$ROOT/runtime/include -I$BUILD/generated"
objs=""
compile() {  # SOURCE: compiled as C++, two at a time
  local o=$OUT/obj/$(echo "$1" | tr / _).o
  $CXX -x c++ -c "$1" -o "$o" &
  objs="$objs $o"
  while [ "$(jobs -r | wc -l)" -ge 2 ]; do sleep 0.2; done
}
compile "$OUT/src/runtime/cuda/kernels/training.cu"
for f in runtime/cuda/device_util.cu runtime/cuda/cuda_kernel.cc; do
  compile "$ROOT/$f"
done
compile "$HERE/fiber_cuda.cc"
compile "$HERE/training_harness.cc"
wait
g++ $SAN -o "$OUT/training_harness" $objs $CPU_LIBS
ASAN_OPTIONS=detect_stack_use_after_return=0:detect_leaks=0 "$OUT/training_harness" "${2:-}"
