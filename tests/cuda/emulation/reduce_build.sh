#!/bin/bash
# Builds and runs the reduce family's host emulation check (reduce_harness.cc): the CUDA reduce
# kernels as written (warp shuffles, shared memory, barriers), compiled by the host compiler
# against fiber_cuda.h, compared with the CPU reference kernels. No GPU and no nvcc needed; BUILD
# (default build) gives the plan header. SANITIZE=1 adds AddressSanitizer and UBSan.
# Usage: tests/cuda/emulation/reduce_build.sh [OUT_DIR [FILTER]]
set -e
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
HERE=$ROOT/tests/cuda/emulation
OUT=${1:-/tmp/reduce_emulation}
BUILD=${BUILD:-$ROOT/build}
mkdir -p "$OUT/include" "$OUT/obj"
source "$ROOT/tests/cuda/emulation/cpu_libs.sh"
# The CUDA headers the kernels include, forwarded to the emulator.
for h in cuda_runtime.h cuda_runtime_api.h cuda_fp16.h cuda_bf16.h cublasLt.h cudnn.h; do
  printf '#pragma once\n#include "%s/fiber_cuda.h"\n' "$HERE" > "$OUT/include/$h"
done
KERNELS=$(cd "$ROOT" && ls runtime/cuda/kernels/reduce*.cu runtime/cuda/kernels/reduce*.cuh)
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
for f in $KERNELS; do case $f in *.cu) compile "$OUT/src/$f";; esac; done
for f in runtime/cuda/device_util.cu runtime/cuda/cuda_kernel.cc; do
  compile "$ROOT/$f"
done
compile "$HERE/fiber_cuda.cc"
compile "$HERE/reduce_harness.cc"
wait
g++ $SAN -o "$OUT/reduce_harness" $objs $CPU_LIBS
ASAN_OPTIONS=detect_stack_use_after_return=0:detect_leaks=0 "$OUT/reduce_harness" "${2:-}"
