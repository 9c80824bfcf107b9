#!/bin/bash
# Builds and runs the tensor family's host emulation check (tensor_harness.cc): the CUDA tensor
# kernels compiled with PRECIS_TENSOR_HOST_EMULATION (launches become host loops), compared bitwise
# with the CPU reference kernels (compiled here from their sources). Needs nvcc and a configured
# build folder for the plan header (BUILD, default build); no GPU.
# Usage: tests/cuda/emulation/tensor_build.sh [OUT_DIR]
set -e
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=${1:-/tmp/tensor_emulation}
BUILD=${BUILD:-$ROOT/build}
mkdir -p "$OUT"
source "$ROOT/tests/cuda/emulation/cpu_libs.sh"
export PATH=/usr/local/cuda/bin:$PATH
INC="-I$ROOT -I$ROOT/runtime/include -I$BUILD/generated"
FL="-std=c++20 --extended-lambda --expt-relaxed-constexpr -diag-suppress=2810 -Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror
    $INC -gencode arch=compute_90,code=compute_90 -DPRECIS_TENSOR_HOST_EMULATION -g -O1"
for f in tensor tensor_index tensor_scatter tensor_fill tensor_resize; do nvcc $FL -c "$ROOT/runtime/cuda/kernels/$f.cu" -o "$OUT/gpu_$f.o"; done
nvcc $FL -c "$ROOT/runtime/cuda/device_util.cu" -o "$OUT/gpu_device_util.o"
nvcc $FL -x cu -c "$ROOT/tests/cuda/emulation/tensor_harness.cc" -o "$OUT/harness.o"
g++ -std=c++20 $INC -isystem /usr/local/cuda/include -c "$ROOT/tests/cuda/emulation/shim.cc" -o "$OUT/shim.o"
g++ -o "$OUT/tensor_harness" "$OUT/harness.o" "$OUT/shim.o" "$OUT"/gpu_*.o $CPU_LIBS -L/usr/local/cuda/lib64 -lcudart
"$OUT/tensor_harness"
