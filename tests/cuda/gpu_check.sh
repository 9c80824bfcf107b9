#!/usr/bin/env bash
# All GPU tests and the GPU benchmark, on a machine with an NVIDIA GPU, in one script.
#
# usage: tests/cuda/gpu_check.sh BUNDLE_DIR [--no-bench] [--build DIR]
#
# BUNDLE_DIR is made on a development machine by tests/cuda/make_bundle.py (plans, inputs and the
# CPU backend's outputs, plus FlatBuffers headers) and bench/gpu/make_bench_plans.sh (weightless
# benchmark plans). Here only the runtime and the GPU test drivers are built (-DPRECIS_RUNTIME_ONLY:
# the CUDA toolkit, cuDNN (the toolkit's or PyTorch's wheel), CMake and ninja; no protobuf, ONNX or
# oneDNN). Then:
#   1. cuda_backend_test: registry vs kernel_list.h, device strings, one device found;
#   2. cuda_plan_check on every folder of the bundle with a cases.txt: each case on the GPU against
#      the CPU backend's outputs (tolerances in tests/cuda/plan_check.cc);
#   3. the benchmark (bench/gpu/run_gpu_bench.sh) when the bundle has bench plans.
# A summary table comes last. Exit status: non-zero if a test failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUNDLE=""
BUILD=build-gpu
BENCH=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-bench) BENCH=0; shift ;;
    --build) BUILD=$2; shift 2 ;;
    *) BUNDLE=$1; shift ;;
  esac
done
if [ -z "$BUNDLE" ] || [ ! -d "$BUNDLE/support" ]; then
  echo "usage: tests/cuda/gpu_check.sh BUNDLE_DIR [--no-bench] [--build DIR] (BUNDLE_DIR/support missing)" >&2
  exit 2
fi
BUNDLE=$(cd "$BUNDLE" && pwd)
start=$(date +%s)
log() { echo "[gpu_check $(( $(date +%s) - start ))s] $*"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || log "nvidia-smi not available"

# cuDNN and cuBLAS: the toolkit's, else the Python wheels' (PyTorch images ship them).
PY=$(command -v python3 || true)
wheel_dir() { [ -n "$PY" ] && "$PY" -c "import importlib, os; m = importlib.import_module('$1'); print(os.path.dirname(m.__file__) if m.__file__ else list(m.__path__)[0])" 2>/dev/null; }
CUDNN_ROOT=""
if [ ! -e /usr/local/cuda/include/cudnn.h ] && [ ! -e /usr/include/cudnn.h ]; then CUDNN_ROOT=$(wheel_dir nvidia.cudnn); fi
for lib in "$CUDNN_ROOT" "$(wheel_dir nvidia.cublas)"; do
  [ -n "$lib" ] && [ -d "$lib/lib" ] && export LD_LIBRARY_PATH="$lib/lib:${LD_LIBRARY_PATH:-}"
done

log "building the runtime and the GPU drivers in $BUILD"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPRECIS_RUNTIME_ONLY=ON -DPRECIS_CUDA=ON -DPRECIS_WERROR=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${PRECIS_CUDA_ARCHS:-90-real}" -DPRECIS_FLATBUFFERS_INCLUDE="$BUNDLE/support" \
  -DPRECIS_PLAN_HEADER="$BUNDLE/support/plan_generated.h" ${CUDNN_ROOT:+-DCUDNN_ROOT=$CUDNN_ROOT} > "$BUILD.configure.log" 2>&1 ||
  { tail -40 "$BUILD.configure.log"; log "configure failed"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" --target cuda_backend_test cuda_plan_check precis_plan_bench > "$BUILD.build.log" 2>&1 ||
  { grep -E "error|FAILED" "$BUILD.build.log" | head -40; log "build failed"; exit 1; }
log "built"

declare -a rows
status=0
"$BUILD/bin/cuda_backend_test"; rc=$?
rows+=("cuda_backend_test|$([ $rc = 0 ] && echo pass || ([ $rc = 77 ] && echo SKIPPED || echo FAIL))|exit $rc")
[ $rc = 0 ] || status=1

dirs=()
for d in "$BUNDLE"/*/; do [ -f "$d/cases.txt" ] && dirs+=("${d%/}"); done
if [ ${#dirs[@]} -gt 0 ]; then
  log "cuda_plan_check on ${#dirs[@]} bundle folders"
  PRECIS_CUDNN_GRAPH=report "$BUILD/bin/cuda_plan_check" "${dirs[@]}" > "$BUILD.plan_check.log" 2>&1; rc=$?
  grep -v "^precis: cuDNN fused convolution graph" "$BUILD.plan_check.log"
  rows+=("cuda_plan_check|$([ $rc = 0 ] && echo pass || echo FAIL)|$(grep -v "^precis: cuDNN fused" "$BUILD.plan_check.log" | tail -1)")
  [ $rc = 0 ] || status=1
  # Which convolution geometries cuDNN took as one conv + bias + Relu graph: a channels-last
  # FP16/BF16 geometry it refuses runs the slower legacy path (correct, but worth knowing).
  planned=$(grep -c "fused convolution graph planned" "$BUILD.plan_check.log")
  refused=$(grep -c "fused convolution graph refused" "$BUILD.plan_check.log")
  refused_nhwc=$(grep "fused convolution graph refused" "$BUILD.plan_check.log" | grep -c "/nhwc/")
  first=$(grep "fused convolution graph refused" "$BUILD.plan_check.log" | grep "/nhwc/" | head -1 | cut -c1-160)
  rows+=("cuDNN fused conv graphs|info|$planned geometries planned, $refused refused ($refused_nhwc NHWC)${first:+; first NHWC refusal: $first}")
  # The same cases without CUDA graphs and without the fused cuDNN convolution graphs (the legacy
  # convolution with separate bias and Relu passes): eager launches and that path must agree too.
  PRECIS_CUDNN_GRAPH=0 "$BUILD/bin/cuda_plan_check" --no-graphs "${dirs[@]}" > "$BUILD.plan_check_eager.log" 2>&1; rc=$?
  rows+=("cuda_plan_check --no-graphs, PRECIS_CUDNN_GRAPH=0|$([ $rc = 0 ] && echo pass || echo FAIL)|$(tail -1 "$BUILD.plan_check_eager.log")")
  [ $rc = 0 ] || status=1
else
  rows+=("cuda_plan_check|SKIPPED|no bundle folder with cases.txt in $BUNDLE")
fi

if [ $BENCH = 1 ] && [ -d "$BUNDLE/bench" ]; then
  log "benchmark"
  bash bench/gpu/run_gpu_bench.sh "$BUILD/bin/precis_plan_bench" "$BUNDLE/bench" | tee "$BUILD.bench.log"
  rows+=("benchmark|done|table above; $BUILD.bench.log")
fi

echo
echo "== gpu_check summary ($(( $(date +%s) - start )) s) =="
printf '%-30s %-8s %s\n' check result detail
for r in "${rows[@]}"; do IFS='|' read -r a b c <<< "$r"; printf '%-30s %-8s %s\n' "$a" "$b" "$c"; done
exit $status
