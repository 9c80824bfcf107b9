#!/bin/bash
# Builds and runs the tensor family's host emulation check (tensor_harness.cc): the CUDA tensor
# kernels compiled with PRECIS_TENSOR_HOST_EMULATION (launches become host loops), compared bitwise
# with the CPU reference kernels. No GPU needed. Needs a CPU-only runtime build for the reference
# kernels: cmake -S . -B build-nocuda -G Ninja -DPRECIS_CUDA=OFF && ninja -C build-nocuda precis_runtime
# Usage: tests/cuda/emulation/tensor_build.sh [OUT_DIR]   (CPU_BUILD=build-nocuda, BUILD=build for the plan header)
set -e
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=${1:-/tmp/tensor_emulation}
BUILD=${BUILD:-$ROOT/build}
CPU_BUILD=${CPU_BUILD:-$ROOT/build-nocuda}
mkdir -p "$OUT"
FL="-std=c++20 --extended-lambda --expt-relaxed-constexpr -diag-suppress=2810 -Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror
    -I$ROOT -I$ROOT/runtime/include -I$BUILD/generated -gencode arch=compute_90,code=compute_90 -DPRECIS_TENSOR_HOST_EMULATION -g -O1"
for f in tensor tensor_index tensor_scatter tensor_fill tensor_resize; do nvcc $FL -c "$ROOT/runtime/cuda/kernels/$f.cu" -o "$OUT/$f.o"; done
nvcc $FL -c "$ROOT/runtime/cuda/device_util.cu" -o "$OUT/device_util.o"
nvcc $FL -x cu -c "$ROOT/tests/cuda/emulation/tensor_harness.cc" -o "$OUT/harness.o"
g++ -std=c++20 -I"$ROOT" -I"$ROOT/runtime/include" -I"$BUILD/generated" -isystem /usr/local/cuda/include -c "$ROOT/tests/cuda/emulation/shim.cc" -o "$OUT/shim.o"
g++ -o "$OUT/tensor_harness" "$OUT/harness.o" "$OUT/shim.o" "$OUT/device_util.o" "$OUT"/tensor*.o "$CPU_BUILD/libprecis_runtime.a" \
  "$CPU_BUILD/libprecis_base.a" -L/usr/local/cuda/lib64 -lcudart -ldnnl -lgomp -lpthread
"$OUT/tensor_harness"
