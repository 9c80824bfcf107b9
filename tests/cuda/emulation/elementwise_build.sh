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
INC="-I$ROOT -I$ROOT/runtime/include -I$BUILD/generated -isystem /usr/local/cuda/include"
for f in runtime/cpu/kernels/elementwise.cc runtime/cpu/kernels/activation.cc runtime/cpu/kernels/activation_binary.cc \
         runtime/cpu/kernels/activation_cast.cc runtime/cpu/kernels/common.cc runtime/cpu/kernels/shape_checks.cc runtime/cpu/kernel.cc runtime/exec/attributes.cc runtime/cpu/widen_kernel.cc \
         runtime/kernels/index_util.cc \
         runtime/base/status.cc runtime/base/types.cc runtime/base/small_types.cc runtime/base/half_array.cc runtime/base/cpu_features.cc; do
  g++ $INC -O2 -std=c++20 -c "$ROOT/$f" -o "$OUT/cpu_$(basename $f).o"
done
# WidenKernel converts through the parallel block conversions (OpenMP, as in the CMake build).
g++ $INC -O2 -std=c++20 -fopenmp -c "$ROOT/runtime/cpu/kernels/fast_convert.cc" -o "$OUT/cpu_fast_convert.cc.o"
NV="nvcc -std=c++20 --extended-lambda --expt-relaxed-constexpr -diag-suppress=2810 -O2 -DPRECIS_EW_HOST_EMULATION -Xcompiler=-fno-strict-aliasing $INC -gencode arch=compute_90,code=sm_90"
for f in "$ROOT"/runtime/cuda/kernels/elementwise*.cu "$ROOT/runtime/cuda/device_util.cu"; do $NV -c "$f" -o "$OUT/gpu_$(basename $f).o"; done
g++ $INC -O2 -std=c++20 -c "$ROOT/runtime/cuda/cuda_kernel.cc" -o "$OUT/gpu_cuda_kernel.o"
$NV -c "$ROOT/tests/cuda/emulation/elementwise_harness.cu" -o "$OUT/harness.o"
nvcc -o "$OUT/elementwise_harness" "$OUT"/*.o -L/usr/local/cuda/lib64 -lcudart -lcublasLt -lcudnn -lgomp
"$OUT/elementwise_harness"
