#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in their own build tree and fuzzes each, for a bounded
# time: the ONNX importer (seeded with the small models of Debian's libonnx-testdata), the IR text
# parser, the plan loader and CPU kernels' Init (Session::FromBuffer, then every program run), the
# state file parser, the CLI's tensor readers and the loader of generated CPU code (seeded with
# tests/fuzz/*_seeds, regression
# inputs included). Prints one line per target (executions, exec/s, corpus) and exits non-zero on
# any crash, sanitizer report, leak, timeout or out-of-memory, printing the artifact and how to
# reproduce it.
#
#   tests/fuzz/run_fuzz.sh [BUILD_DIR]     (default: build-fuzz in the repository root)
#
# Environment: seconds per target FUZZ_SECONDS (importer, default 45), TEXT_FUZZ_SECONDS (15),
# PLAN_FUZZ_SECONDS (60), STATE_FUZZ_SECONDS (10), TENSOR_FUZZ_SECONDS (15), ELF_FUZZ_SECONDS (15);
# FUZZ_TARGETS (the
# targets to build and run, default all); FUZZ_BUILD_JOBS (default 2); FUZZ_SEED, libFuzzer's
# random seed (default 1: a CI gate explores the same inputs on every run, so a result does not
# depend on luck; offline campaigns pass FUZZ_SEED=0 for a fresh seed each run). Exit code 77
# (ctest: skipped) when clang++ is not installed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build-fuzz}"
mkdir -p "$build"
build="$(cd "$build" && pwd)"
importer_seconds="${FUZZ_SECONDS:-45}"
text_seconds="${TEXT_FUZZ_SECONDS:-15}"
plan_seconds="${PLAN_FUZZ_SECONDS:-60}"
state_seconds="${STATE_FUZZ_SECONDS:-10}"
tensor_seconds="${TENSOR_FUZZ_SECONDS:-15}"
elf_seconds="${ELF_FUZZ_SECONDS:-15}"
seed="${FUZZ_SEED:-1}"
read -r -a targets <<<"${FUZZ_TARGETS:-importer_fuzz text_parser_fuzz plan_fuzz state_fuzz tensor_fuzz elf_fuzz}"
fuzzes() { [[ " ${targets[*]} " == *" $1 "* ]]; }
testdata=/usr/share/libonnx-testdata/data

if ! command -v clang++ >/dev/null; then
  echo "run_fuzz: clang++ not found; libFuzzer needs clang (apt-get install clang)" >&2
  exit 77
fi

# --- build -------------------------------------------------------------------------------------
if [[ ! -f "$build/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja \
    -DPRECIS_FUZZ=ON -DPRECIS_TESTS=OFF >"$build/configure.log" 2>&1 ||
    { tail -n 20 "$build/configure.log"; echo "run_fuzz: configure failed" >&2; exit 1; }
fi
cmake --build "$build" --target "${targets[@]}" -j "${FUZZ_BUILD_JOBS:-2}" \
  >"$build/build.log" 2>&1 ||
  { tail -n 40 "$build/build.log"; echo "run_fuzz: build failed (log: $build/build.log)" >&2; exit 1; }

# --- seed corpora ------------------------------------------------------------------------------
# Small models only: libFuzzer mutates small inputs far more effectively, and -max_len caps them.
seeds="$build/corpus/importer-seeds"
if fuzzes importer_fuzz; then
  if [[ ! -d "$testdata/node" ]]; then
    echo "run_fuzz: no seed models under $testdata (apt-get install libonnx-testdata)" >&2
    exit 1
  fi
  rm -rf "$seeds" && mkdir -p "$seeds"
  for m in "$testdata"/node/*/model.onnx; do
    if (( $(stat -c %s "$m") < 4096 )); then cp "$m" "$seeds/$(basename "$(dirname "$m")").onnx"; fi
  done
  # A few exporter-made graphs (initializers, value_info, older IR versions).
  for t in test_Linear test_PReLU_2d test_GLU_dim test_ConstantPad2d test_Embedding test_softmax_lastdim; do
    m="$testdata/pytorch-converted/$t/model.onnx"
    if [[ -f "$m" ]]; then cp "$m" "$seeds/pyconv_$t.onnx"; fi
  done
  # Inputs that once broke the importer, kept so that every run re-checks them.
  cp "$root"/tests/fuzz/importer_seeds/*.onnx "$seeds/"
fi

# --- fuzz --------------------------------------------------------------------------------------
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1"

# fuzz NAME SECONDS SEED_DIR [EXTRA_FLAGS...]: one in-process libFuzzer run (a single job: this
# is meant for 2-core CI machines); its new inputs go to a fresh corpus folder next to the seeds.
fuzz() {
  local name="$1" seconds="$2" seed_dir="$3"
  shift 3
  local corpus="$build/corpus/$name" artifacts="$build/artifacts/$name" log="$build/$name.log"
  rm -rf "$corpus" "$artifacts" && mkdir -p "$corpus" "$artifacts"
  local rc=0
  "$build/bin/$name" "$corpus" "$seed_dir" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 -seed="$seed" "$@" >"$log" 2>&1 || rc=$?
  local found
  found="$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' \) | sort)"
  if (( rc != 0 )) || [[ -n "$found" ]]; then
    # The head of the report names the bug and its stack; the log's tail is mostly the ASan
    # shadow legend, so show 20 lines from the first error marker instead (tail if none).
    local start
    start="$(grep -n -m 1 -E '==ERROR|ERROR: libFuzzer|runtime error:|^[a-z_]+_fuzz: ' "$log" |
      cut -d: -f1 || true)"
    echo "run_fuzz: $name FAILED (exit $rc); full log: $log"
    if [[ -n "$start" ]]; then
      sed -n "${start},$((start + 19))p" "$log"
      grep -m 1 '^SUMMARY:' "$log" || true
    else
      tail -n 20 "$log"
    fi
    for a in $found; do
      echo "run_fuzz: artifact $a"
      echo "  reproduce: $build/bin/$name $a"
    done
    return 1
  fi
  local execs speed corp
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  speed="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)"
  corp="$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)"
  echo "run_fuzz: $name ok: ${execs:-?} executions in ${seconds}s (${speed:-?}/s), corpus ${corp:-?} (units/bytes)"
}

status=0
fuzzes importer_fuzz && { fuzz importer_fuzz "$importer_seconds" "$seeds" || status=1; }
fuzzes text_parser_fuzz && { fuzz text_parser_fuzz "$text_seconds" "$root/tests/fuzz/text_seeds" \
  -dict="$root/tests/fuzz/ir_text.dict" || status=1; }
# Plans: the target rewrites each input's size and checksum fields; the dictionary holds the
# kernel and attribute names a step may be rewritten to.
fuzzes plan_fuzz && { fuzz plan_fuzz "$plan_seconds" "$root/tests/fuzz/plan_seeds" \
  -dict="$root/tests/fuzz/plan.dict" || status=1; }
fuzzes state_fuzz && { fuzz state_fuzz "$state_seconds" "$root/tests/fuzz/state_seeds" || status=1; }
fuzzes tensor_fuzz && { fuzz tensor_fuzz "$tensor_seconds" "$root/tests/fuzz/tensor_seeds" || status=1; }
fuzzes elf_fuzz && { fuzz elf_fuzz "$elf_seconds" "$root/tests/fuzz/elf_seeds" || status=1; }
exit "$status"
