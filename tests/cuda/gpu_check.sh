#!/usr/bin/env bash
# All GPU tests and the GPU benchmark, on a machine with an NVIDIA GPU, in parts of under 8 minutes.
#
# usage: tests/cuda/gpu_check.sh BUNDLE_DIR [--part build|check|eager|bench|all] [--no-bench] [--build DIR]
#
# BUNDLE_DIR is made on a development machine by tests/cuda/make_bundle.py (plans, inputs and the
# CPU backend's outputs, plus FlatBuffers headers and cuda_backend_test's plan) and
# bench/gpu/make_bench_plans.sh (weightless benchmark plans). Here only the runtime and the GPU
# test drivers are built (-DPRECIS_RUNTIME_ONLY, for the present GPU's architecture only: the CUDA
# toolkit, cuDNN (the toolkit's or PyTorch's wheel), CMake and ninja; no protobuf, ONNX or oneDNN).
# Parts (each prints its own summary table; `all` runs them in order):
#   build  configure and build (about 3 minutes on 16 cores);
#   check  cuda_backend_test (registry, device strings, the example plan against the CPU, NaN
#          through fused Relu epilogues), then cuda_plan_check on every bundle folder, one process
#          per kernel family (cases-FAMILY.txt) or folder, so one device fault poisons nothing else;
#   eager  the same cases without CUDA graphs and without cuDNN's fused graphs, with
#          PRECIS_CUDA_SYNC=1 (a synchronization after every step: a fault names its step);
#   bench  the benchmark (bench/gpu/run_gpu_bench.sh) when the bundle has bench plans.
# Exit status: non-zero if a check failed. docs/cuda.md has the exact commands.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUNDLE=""
BUILD=build-gpu
BENCH=1
PART=all
while [ $# -gt 0 ]; do
  case "$1" in
    --no-bench) BENCH=0; shift ;;
    --build) BUILD=$2; shift 2 ;;
    --part) PART=$2; shift 2 ;;
    *) BUNDLE=$1; shift ;;
  esac
done
case "$PART" in build|check|eager|bench|all) ;; *) echo "gpu_check: --part must be build, check, eager, bench or all" >&2; exit 2 ;; esac
want() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }
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

declare -a rows
status=0
if want build || [ ! -x "$BUILD/bin/cuda_plan_check" ]; then
  # The present GPU's architecture only (compute capability 9.0 -> 90-real): a third of the build time.
  arch=${PRECIS_CUDA_ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')}
  arch=${arch:-90}
  [[ "$arch" == *-* ]] || arch="$arch-real"
  log "building the runtime and the GPU drivers in $BUILD for $arch"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPRECIS_RUNTIME_ONLY=ON -DPRECIS_CUDA=ON -DPRECIS_WERROR=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DPRECIS_FLATBUFFERS_INCLUDE="$BUNDLE/support" \
    -DPRECIS_PLAN_HEADER="$BUNDLE/support/plan_generated.h" ${CUDNN_ROOT:+-DCUDNN_ROOT=$CUDNN_ROOT} > "$BUILD.configure.log" 2>&1 ||
    { tail -40 "$BUILD.configure.log"; log "configure failed"; exit 1; }
  cmake --build "$BUILD" -j "$(nproc)" --target cuda_backend_test cuda_plan_check precis_plan_bench > "$BUILD.build.log" 2>&1 ||
    { grep -E "error|FAILED" "$BUILD.build.log" | head -40; log "build failed"; exit 1; }
  log "built"
  rows+=("build|done|$arch, $(( $(date +%s) - start )) s")
fi

dirs=()
for d in "$BUNDLE"/*/; do [ -f "$d/cases.txt" ] && dirs+=("${d%/}"); done
# plan_check_all MODE LOG_PREFIX [FLAGS...]: cuda_plan_check once per kernel family of each folder
# (cases-*.txt, else the folder's cases.txt), each in its own process; one summary row per run.
plan_check_all() {
  local mode=$1 prefix=$2
  shift 2
  for d in "${dirs[@]}"; do
    local lists=()
    for f in "$d"/cases-*.txt; do [ -f "$f" ] && lists+=("$(basename "$f")"); done
    [ ${#lists[@]} -gt 0 ] || lists=(cases.txt)
    for list in "${lists[@]}"; do
      local name; name="$(basename "$d")/${list#cases-}"; name=${name%.txt}
      local logf="$BUILD.$prefix.$(basename "$d").${list%.txt}.log"
      "$@" --cases "$list" "$d" > "$logf" 2>&1; local rc=$?
      rows+=("$mode $name|$([ $rc = 0 ] && echo pass || ([ $rc = 77 ] && echo SKIPPED || echo FAIL))|$(grep -v '^precis: cuDNN fused' "$logf" | tail -1 | cut -c1-120)")
      if [ $rc != 0 ]; then status=1; grep -E '^FAIL' "$logf" | head -5; fi
    done
  done
}

if want check; then
  plan=$BUNDLE/support/backend_test.plan
  "$BUILD/bin/cuda_backend_test" $([ -f "$plan" ] && echo "$plan") > "$BUILD.backend_test.log" 2>&1; rc=$?
  cat "$BUILD.backend_test.log"
  rows+=("cuda_backend_test|$([ $rc = 0 ] && echo pass || ([ $rc = 77 ] && echo SKIPPED || echo FAIL))|exit $rc; $(tail -1 "$BUILD.backend_test.log" | cut -c1-100)")
  [ $rc = 0 ] || status=1
  if [ ${#dirs[@]} -gt 0 ]; then
    log "cuda_plan_check on ${#dirs[@]} bundle folders"
    PRECIS_CUDNN_GRAPH=report plan_check_all graphs plan_check "$BUILD/bin/cuda_plan_check"
    # Which convolution geometries cuDNN took as one conv + bias + Relu graph: a channels-last
    # FP16/BF16 geometry it refuses runs the slower legacy path (correct, but worth knowing).
    planned=$(cat "$BUILD".plan_check.*.log | grep -c "fused convolution graph planned")
    refused=$(cat "$BUILD".plan_check.*.log | grep -c "fused convolution graph refused")
    refused_nhwc=$(cat "$BUILD".plan_check.*.log | grep "fused convolution graph refused" | grep -c "/nhwc/")
    rows+=("cuDNN fused conv graphs|info|$planned geometries planned, $refused refused ($refused_nhwc NHWC)")
  else
    rows+=("cuda_plan_check|SKIPPED|no bundle folder with cases.txt in $BUNDLE")
  fi
fi

if want eager && [ ${#dirs[@]} -gt 0 ]; then
  # The same cases without CUDA graphs and without the fused cuDNN convolution graphs (the legacy
  # convolution with separate bias and Relu passes), synchronizing after every step.
  log "cuda_plan_check --no-graphs, PRECIS_CUDNN_GRAPH=0, PRECIS_CUDA_SYNC=1"
  PRECIS_CUDNN_GRAPH=0 PRECIS_CUDA_SYNC=1 plan_check_all eager plan_check_eager "$BUILD/bin/cuda_plan_check" --no-graphs
fi

if want bench && [ $BENCH = 1 ] && [ -d "$BUNDLE/bench" ]; then
  log "benchmark"
  bash bench/gpu/run_gpu_bench.sh "$BUILD/bin/precis_plan_bench" "$BUNDLE/bench" | tee "$BUILD.bench.log"
  rows+=("benchmark|done|table above; $BUILD.bench.log")
fi

echo
echo "== gpu_check summary ($(( $(date +%s) - start )) s) =="
printf '%-30s %-8s %s\n' check result detail
for r in "${rows[@]}"; do IFS='|' read -r a b c <<< "$r"; printf '%-30s %-8s %s\n' "$a" "$b" "$c"; done
exit $status
