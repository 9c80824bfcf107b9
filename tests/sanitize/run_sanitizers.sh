#!/usr/bin/env bash
# The sanitizer stage of CI: one clang build tree with AddressSanitizer and UndefinedBehaviorSanitizer
# (-DPRECIS_FUZZ=ON: every library instrumented, UB fatal) serves both
#   1. the unit tests, kernel tests, plan/state tests and hostile-input tests (gtest binaries),
#   2. a conformance subset: Debian's node, pytorch-converted, pytorch-operator and simple corpora
#      in FP32 and FP16 against their expected-pass lists,
#   3. the fuzz targets (tests/fuzz/run_fuzz.sh, on the same tree).
# Any sanitizer report, leak or failing check fails the stage. Prints the time of each part.
#
#   tests/sanitize/run_sanitizers.sh [BUILD_DIR]   (default: build-sanitize in the repository root)
#
# Environment: SANITIZE_BUILD_JOBS (default 2). Exit 77 (ctest: skipped) when clang++ is missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build-sanitize}"
mkdir -p "$build"
build="$(cd "$build" && pwd)"
jobs="${SANITIZE_BUILD_JOBS:-2}"
if ! command -v clang++ >/dev/null; then
  echo "sanitizers: clang++ not found; the sanitizer stage needs clang (apt-get install clang)" >&2
  exit 77
fi
now() { date +%s; }
t0=$(now)

# --- build --------------------------------------------------------------------------------------
tests=(ir_half_test ir_text_test ir_verifier_test ir_json_writer_test onnx_importer_test
       passes_precision_test passes_autodiff_test passes_pipeline_test emit_memory_planner_test
       runtime_plan_file_test runtime_plan_programs_test runtime_hostile_plan_test
       runtime_dnnl_kernels_test runtime_half_array_test runtime_cpu_features_test
       runtime_activation_kernels_test runtime_nn_kernels_test runtime_gpu_plans_test
       runtime_fast_kernels_test runtime_fast_conv_test runtime_hostile_input_test)
if [[ ! -f "$build/build.ninja" ]] || ! grep -q '^PRECIS_TESTS:BOOL=ON' "$build/CMakeCache.txt"; then
  # -O1 and line tables only: about half the compile time of -O2 -g, still symbolized reports.
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DPRECIS_FUZZ=ON -DPRECIS_TESTS=ON -DPRECIS_CUDA=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    >"$build/configure.log" 2>&1 ||
    { tail -n 20 "$build/configure.log"; echo "sanitizers: configure failed" >&2; exit 1; }
fi
cmake --build "$build" --target "${tests[@]}" precis conformance_runner -j "$jobs" >"$build/build.log" 2>&1 ||
  { grep -m 5 -E 'error|FAILED' "$build/build.log" || tail -n 40 "$build/build.log"
    echo "sanitizers: build failed (log: $build/build.log)" >&2; exit 1; }
t1=$(now)
echo "sanitizers: built ${#tests[@]} test binaries, precis and conformance_runner with ASan+UBSan in $((t1 - t0)) s"

# --- unit, kernel, plan and hostile-input tests ----------------------------------------------------
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:abort_on_error=0:allocator_may_return_null=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1"
status=0
mkdir -p "$build/unit"
# Two binaries at a time; each writes its own log. A binary fails on a failed check or on the
# first sanitizer report (halt_on_error; ASan aborts by default).
printf '%s\n' "${tests[@]}" | xargs -P "$jobs" -I{} sh -c \
  '"$1/bin/$2" --gtest_brief=1 >"$1/unit/$2.log" 2>&1 && echo ok >"$1/unit/$2.status" || echo "exit $?" >"$1/unit/$2.status"' \
  sh "$build" {}
failed=()
for t in "${tests[@]}"; do
  if [[ "$(cat "$build/unit/$t.status" 2>/dev/null)" != ok ]]; then failed+=("$t"); fi
done
echo "sanitizers: unit tests: $(( ${#tests[@]} - ${#failed[@]} ))/${#tests[@]} binaries pass"
for t in "${failed[@]}"; do
  status=1
  echo "sanitizers: $t FAILED ($(cat "$build/unit/$t.status" 2>/dev/null || echo 'no status')); log: $build/unit/$t.log"
  grep -m 5 -E 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer|SUMMARY|\[  FAILED  \]|Failure' "$build/unit/$t.log" || tail -n 10 "$build/unit/$t.log"
done
t2=$(now)
echo "sanitizers: unit tests took $((t2 - t1)) s"

# --- conformance subset -------------------------------------------------------------------------
data=/usr/share/libonnx-testdata/data
for precision in fp32 fp16; do
  if ! "$build/bin/conformance_runner" --precision "$precision" --expect "$root/tests/conformance/expected_pass_$precision.txt" \
        debian-node="$data/node" debian-pyconv="$data/pytorch-converted" debian-pyop="$data/pytorch-operator" \
        debian-simple="$data/simple" >"$build/conformance_$precision.log" 2>&1; then
    status=1
    echo "sanitizers: conformance $precision FAILED (log: $build/conformance_$precision.log)"
    grep -m 3 -E 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer|^  ' "$build/conformance_$precision.log" || true
  else
    echo "sanitizers: conformance $precision: $(tail -n 1 "$build/conformance_$precision.log")"
  fi
done
t3=$(now)
echo "sanitizers: conformance subset took $((t3 - t2)) s"

# --- fuzzing -------------------------------------------------------------------------------------
bash "$root/tests/fuzz/run_fuzz.sh" "$build" || status=1
t4=$(now)
echo "sanitizers: fuzzing (incremental build included) took $((t4 - t3)) s; stage total $((t4 - t0)) s"
exit "$status"
