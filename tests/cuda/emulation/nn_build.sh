#!/bin/bash
# Builds and runs the nn family's host emulation check (nn_harness.cc): the CUDA nn kernels
# compiled with PRECIS_NN_HOST_EMULATION, cuBLASLt and cuDNN emulated on the host
# (nn_libs_emulation.cc), compared with the CPU reference kernels. Needs nvcc and a configured
# build folder for the plan header (BUILD, default build); no GPU. Objects newer than their
# source are reused.
# Usage: tests/cuda/emulation/nn_build.sh [OUT_DIR]
set -e
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=${1:-/tmp/nn_emulation}
BUILD=${BUILD:-$ROOT/build}
mkdir -p "$OUT"
source "$ROOT/tests/cuda/emulation/cpu_libs.sh"
export PATH=/usr/local/cuda/bin:$PATH
INC="-I$ROOT -I$ROOT/runtime/include -I$BUILD/generated -isystem /usr/local/cuda/include"
NVCC="nvcc -std=c++20 --extended-lambda --expt-relaxed-constexpr -diag-suppress=2810 -O1 -DPRECIS_NN_HOST_EMULATION $INC -gencode arch=compute_90,code=sm_90"
CXX="g++ -std=c++20 -O1 $INC"
# compile SOURCE OBJECT COMPILER...: skipped when OBJECT is newer than SOURCE and the nn headers.
compile() {
  local src=$ROOT/$1 obj=$OUT/$2
  shift 2
  if [ -f "$obj" ] && [ "$obj" -nt "$src" ] && [ "$obj" -nt "$ROOT/runtime/cuda/kernels/nn_common.h" ] &&
     [ "$obj" -nt "$ROOT/runtime/cuda/kernels/nn_device.cuh" ] && [ "$obj" -nt "$ROOT/tests/cuda/emulation/nn_build.sh" ]; then return; fi
  "$@" -c "$src" -o "$obj"
}
for f in nn nn_matmul nn_einsum nn_conv nn_pool; do compile runtime/cuda/kernels/$f.cu cuda_$f.o $NVCC; done
compile runtime/cuda/device_util.cu cuda_device_util.o $NVCC
for f in runtime/cuda/kernels/nn_lt.cc runtime/cuda/kernels/nn_cudnn.cc runtime/cuda/kernels/nn_cudnn_graph.cc; do compile $f cuda_$(basename $f .cc).o $CXX; done
for f in tests/cuda/emulation/nn_libs_emulation.cc tests/cuda/emulation/nn_harness.cc; do compile $f test_$(basename $f .cc).o $CXX; done
g++ -o "$OUT/nn_harness" "$OUT"/cuda_*.o "$OUT"/test_*.o $CPU_LIBS -L/usr/local/cuda/lib64 -lcudart
"$OUT/nn_harness"
