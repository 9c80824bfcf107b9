#!/bin/bash
# ctest entry for one host emulation check: run.sh FAMILY OUT_DIR BUILD_DIR.
# The elementwise, tensor and nn checks compile the kernels with nvcc; without it they are
# skipped (exit 77) with the reason. The reduce and training checks need only g++.
set -e
family=$1 out=$2
export BUILD=$3
export PATH=/usr/local/cuda/bin:$PATH
if [ "$family" != reduce ] && [ "$family" != training ] && ! command -v nvcc >/dev/null; then
  echo "skipped: nvcc not found (the $family emulation check compiles the CUDA kernels for the host)"
  exit 77
fi
rm -rf "$out"  # no objects reused from an earlier run: their headers may have changed
exec bash "$(dirname "$0")/${family}_build.sh" "$out"
