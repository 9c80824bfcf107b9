#!/bin/bash
# Builds and runs the elementwise family's host emulation check (elementwise_harness.cu): the CUDA
# elementwise kernels compiled with PRECIS_EW_HOST_EMULATION (launches become host loops), compared
# bitwise with the CPU reference kernels. No GPU needed; BUILD (default build) gives the plan header.
# Usage: tests/cuda/emulation/elementwise_build.sh [OUT_DIR]
set -e
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=${1:-/tmp/elementwise_emulation}
BUILD=${BUILD:-$ROOT/build}
mkdir -p "$OUT"
source "$ROOT/tests/cuda/emulation/cpu_libs.sh"
INC="-I$ROOT -I$ROOT/runtime/include -I$BUILD/generated -isystem /usr/local/cuda/include"
NV="nvcc -std=c++20 --extended-lambda --expt-relaxed-constexpr -diag-suppress=2810 -O1 -DPRECIS_EW_HOST_EMULATION -Xcompiler=-fno-strict-aliasing $INC -gencode arch=compute_90,code=sm_90"
for f in "$ROOT"/runtime/cuda/kernels/elementwise*.cu "$ROOT/runtime/cuda/device_util.cu"; do $NV -c "$f" -o "$OUT/gpu_$(basename $f).o"; done
g++ $INC -O1 -std=c++20 -c "$ROOT/runtime/cuda/cuda_kernel.cc" -o "$OUT/gpu_cuda_kernel.o"
$NV -c "$ROOT/tests/cuda/emulation/elementwise_harness.cu" -o "$OUT/harness.o"
g++ -o "$OUT/elementwise_harness" "$OUT"/*.o $CPU_LIBS -L/usr/local/cuda/lib64 -lcudart -lcublasLt -lcudnn
"$OUT/elementwise_harness"
