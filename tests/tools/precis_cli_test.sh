#!/usr/bin/env bash
# The precis CLI on bad input: every case must exit non-zero with a status below 128 (no signal,
# no core dump), within a minute (no hang), print nothing on stdout, and explain itself on
# stderr. A bad model gets exactly one line, starting with "precis" and naming the file; a usage
# error gets a first line that names the problem, then the usage. Also checks that
# `precis inspect --json` prints valid JSON for a good model.
#
# usage: precis_cli_test.sh PATH/TO/precis SCRATCH_DIR
set -u
precis=$1
tmp=$2
relu=/usr/share/libonnx-testdata/data/node/test_relu/model.onnx
ulimit -c 0
rm -rf "$tmp"
mkdir -p "$tmp"
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# run NAME ARGS...: runs precis with a time limit; leaves $rc, $tmp/NAME.out and $tmp/NAME.err.
run() {
  local name=$1
  shift
  timeout 60 "$precis" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null
  rc=$?
}

# Checks shared by every bad case: a plain non-zero exit and nothing on stdout.
check_failed() {
  local name=$1
  if [ "$rc" -eq 0 ]; then fail "$name: exit status 0"; fi
  if [ "$rc" -eq 124 ]; then fail "$name: timed out"; fi
  if [ "$rc" -ge 128 ]; then fail "$name: killed by signal $((rc - 128))"; fi
  if [ -s "$tmp/$name.out" ]; then fail "$name: wrote to stdout: $(head -c 200 "$tmp/$name.out")"; fi
}

# expect_model_error NAME MODEL [EXTRA ARGS...]: `precis inspect MODEL` fails with one line.
expect_model_error() {
  local name=$1 model=$2
  shift 2
  run "$name" inspect "$model" "$@"
  check_failed "$name"
  local err="$tmp/$name.err"
  local lines
  lines=$(wc -l <"$err")
  if [ "$lines" -ne 1 ]; then fail "$name: $lines lines on stderr, expected 1: $(cat "$err")"; fi
  if [ "$(head -c 6 "$err")" != "precis" ]; then fail "$name: stderr does not start with 'precis': $(cat "$err")"; fi
  if ! grep -qF -- "$model" "$err"; then fail "$name: message does not name '$model': $(cat "$err")"; fi
  echo "ok   $name (exit $rc): $(head -n 1 "$err")"
}

# expect_usage_error NAME NEEDLE ARGS...: fails, and stderr's first line mentions NEEDLE.
expect_usage_error() {
  local name=$1 needle=$2
  shift 2
  run "$name" "$@"
  check_failed "$name"
  local first
  first=$(head -n 1 "$tmp/$name.err")
  case "$first" in
    *precis*) ;;
    *) fail "$name: first stderr line does not mention precis: '$first'" ;;
  esac
  if ! grep -qF -- "$needle" <<<"$first"; then fail "$name: first stderr line does not mention '$needle': '$first'"; fi
  echo "ok   $name (exit $rc): $first"
}

if [ ! -x "$precis" ]; then
  echo "FAIL: '$precis' is not an executable"
  exit 1
fi
if [ ! -f "$relu" ]; then
  echo "FAIL: $relu is missing (install libonnx-testdata)"
  exit 1
fi

# Bad models.
expect_model_error missing "$tmp/does_not_exist.onnx"
printf 'ir_version: 8\ngraph { name: "not binary" }\n' >"$tmp/text.onnx"
expect_model_error text "$tmp/text.onnx"
: >"$tmp/empty.onnx"
expect_model_error empty "$tmp/empty.onnx"
size=$(stat -c %s "$relu")
for cut in $((size / 2)) $((size - 1)) 1; do
  head -c "$cut" "$relu" >"$tmp/truncated_$cut.onnx"
  expect_model_error "truncated_$cut" "$tmp/truncated_$cut.onnx"
done
expect_model_error directory "$tmp"
expect_model_error truncated_json "$tmp/truncated_$((size / 2)).onnx" --json

# Usage errors.
expect_usage_error no_arguments "usage"
expect_usage_error unknown_option "--bogus" inspect "$relu" --bogus
expect_usage_error unknown_command "frobnicate" frobnicate "$relu"
expect_usage_error no_model "usage" inspect
expect_usage_error two_models "more than one" inspect "$relu" "$relu"

# Mixed-precision options and the report/opt commands.
expect_usage_error bad_precision "fp8" compile "$relu" -o "$tmp/x.plan" --precision fp8 --shape x=3x4x5
expect_usage_error budget_needs_low "--error-budget" compile "$relu" -o "$tmp/x.plan" --error-budget 0.01 --shape x=3x4x5
expect_usage_error negative_budget "--error-budget" compile "$relu" -o "$tmp/x.plan" --precision fp16 --error-budget -1 --shape x=3x4x5
expect_usage_error calibrate_needs_low "--calibrate" compile "$relu" -o "$tmp/x.plan" --calibrate random:2 --shape x=3x4x5
expect_usage_error bad_calibrate "random:N" compile "$relu" -o "$tmp/x.plan" --precision fp16 --calibrate bogus --shape x=3x4x5
expect_usage_error calibrate_zero "random:N" compile "$relu" -o "$tmp/x.plan" --precision fp16 --calibrate random:0 --shape x=3x4x5
expect_usage_error unknown_keep_op "NotAnOp" compile "$relu" -o "$tmp/x.plan" --precision fp16 --keep-fp32 NotAnOp --shape x=3x4x5
expect_usage_error bad_regex "regular expression" compile "$relu" -o "$tmp/x.plan" --precision fp16 --force-low "([" --shape x=3x4x5
expect_usage_error report_missing "does_not_exist" report "$tmp/does_not_exist.plan"
expect_usage_error report_not_plan "magic" report "$relu"
expect_usage_error opt_missing "does_not_exist" opt "$tmp/does_not_exist.pir" --passes precision
printf 'graph "x" {\n' >"$tmp/bad.pir"
expect_usage_error opt_bad_text "bad.pir" opt "$tmp/bad.pir" --passes precision
expect_usage_error opt_unknown_pass "nopass" opt "$tmp/bad.pir" --passes nopass

# opt's passes come from the registry: an unknown one is refused with the list of known ones, and
# --print-after-all prints one "// after NAME" block per pass, in order.
expect_usage_error opt_nosuchpass "nosuchpass" opt "$tmp/bad.pir" --passes nosuchpass
for known in dce fold-batchnorm fold-casts fuse-casts fuse-epilogues infer inline-if layout patterns precision specialize-inputs; do
  if ! grep -qw -- "$known" <(head -n 1 "$tmp/opt_nosuchpass.err"); then fail "opt_nosuchpass: does not list '$known': $(head -n 1 "$tmp/opt_nosuchpass.err")"; fi
done
cat >"$tmp/good.pir" <<'PIR'
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "g" {
  input %x: f32[2,3]
  const %w: f32[3,3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
  %h = MatMul(%x, %w)
  %r = Relu(%h)
  output %r
}
PIR
run opt_print_after_all opt "$tmp/good.pir" --passes infer,patterns,precision,fold-casts,dce --print-after-all
blocks=$(grep '^// after ' "$tmp/opt_print_after_all.out" | tr '\n' ' ')
if [ "$rc" -ne 0 ]; then
  fail "opt_print_after_all: exit $rc: $(head -c 300 "$tmp/opt_print_after_all.err")"
elif [ "$blocks" != "// after infer // after patterns // after precision // after fold-casts // after dce " ]; then
  fail "opt_print_after_all: expected one block per pass, got '$blocks'"
elif [ "$(grep -c '^graph "g"' "$tmp/opt_print_after_all.out")" -ne 5 ]; then
  fail "opt_print_after_all: expected the IR after each of the 5 passes"
else
  echo "ok   opt_print_after_all"
fi
run compile_verify_passes compile "$relu" -o "$tmp/verify.plan" --precision fp16 --verify-passes --shape x=3x4x5 --quiet
if [ "$rc" -ne 0 ]; then fail "compile_verify_passes: exit $rc: $(head -c 300 "$tmp/compile_verify_passes.err")"; else echo "ok   compile_verify_passes"; fi

expect_usage_error bad_device "unknown device" run "$relu" --device gpu --random --shape x=3x4x5
expect_usage_error bad_device_id "cuda:N" run "$relu" --device cuda:x --random --shape x=3x4x5
expect_usage_error compile_bad_device "--device" compile "$relu" -o "$tmp/x.plan" --device tpu --shape x=3x4x5
expect_usage_error compile_bad_batch "--batch" compile "$relu" -o "$tmp/x.plan" --batch 0

# --device cuda where no GPU can run it: a clear error naming the reason, never a CPU fallback.
if ! nvidia-smi >/dev/null 2>&1; then
  run cuda_no_gpu run "$relu" --device cuda --random --shape x=3x4x5
  check_failed cuda_no_gpu
  if grep -q -E "no usable CUDA device|no CUDA backend" "$tmp/cuda_no_gpu.err"; then echo "ok   cuda_no_gpu"
  else fail "cuda_no_gpu: stderr does not give the reason: $(head -c 300 "$tmp/cuda_no_gpu.err")"; fi
else
  echo "skip cuda_no_gpu: this machine has a GPU"
fi

# A stripped (benchmark) plan refuses to run without synthetic weights, and runs under bench.
example=$(cd "$(dirname "$0")/../.." && pwd)/examples/tiny_convnet.onnx
run strip compile "$example" -o "$tmp/strip.plan" --shape image=1x3x32x32 --strip-weights --quiet
if [ "$rc" -ne 0 ]; then fail "strip: compile failed: $(cat "$tmp/strip.err")"; fi
run strip_run run "$tmp/strip.plan" --random
check_failed strip_run
if grep -q "strip-weights" "$tmp/strip_run.err"; then echo "ok   strip_run"; else fail "strip_run: $(head -c 300 "$tmp/strip_run.err")"; fi
run strip_bench bench "$tmp/strip.plan" --iterations 2 --warmup 0
if [ "$rc" -ne 0 ]; then fail "strip_bench: exit $rc: $(head -c 300 "$tmp/strip_bench.err")"; else echo "ok   strip_bench"; fi

# An FP16 plan's bench on the CPU says why it is not faster than FP32 and names --fp32-weights.
run fp16_compile compile "$example" -o "$tmp/fp16.plan" --shape image=1x3x32x32 --precision fp16 --quiet
run fp16_bench bench "$tmp/fp16.plan" --iterations 2 --warmup 0
if [ "$rc" -ne 0 ] || ! grep -q "compute in FP32 on the CPU.*--fp32-weights" "$tmp/fp16_bench.err"; then
  fail "fp16_bench: exit $rc, no note on FP16 products: $(head -c 300 "$tmp/fp16_bench.err")"
else
  echo "ok   fp16_bench"
fi

# Progress written to a file (not a terminal) comes one update per line, never run together, and
# every compile phase gets a time: sub-millisecond phases print their digits, not "0".
run progress compile "$example" -o "$tmp/progress.plan" --shape image=1x3x32x32 --precision fp16 \
  --calibrate random:3 --error-budget 0.5
if [ "$rc" -ne 0 ]; then
  fail "progress: compile failed: $(head -c 300 "$tmp/progress.err")"
elif [ "$(grep -c -E '^(calibrating|error budget): sample [0-9]+/3$' "$tmp/progress.err")" -ne 6 ] ||
     grep -q $'\r' "$tmp/progress.err"; then
  fail "progress: expected 6 progress lines of their own: $(head -c 400 "$tmp/progress.err" | tr '\r' '|')"
elif ! times=$(grep -E '^  time ' "$tmp/progress.out") || echo "$times" | grep -q -E '[a-z] 0(,|\))'; then
  fail "progress: a phase time prints as 0 or is missing: $times"
else
  echo "ok   progress"
fi

# A good model: --json must print one valid JSON document.
run inspect_json inspect --json "$relu"
if [ "$rc" -ne 0 ]; then
  fail "inspect_json: exit status $rc: $(cat "$tmp/inspect_json.err")"
elif ! python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["inputs"] and d["outputs"], d' \
    <"$tmp/inspect_json.out"; then
  fail "inspect_json: stdout is not the expected JSON: $(head -c 300 "$tmp/inspect_json.out")"
else
  echo "ok   inspect_json"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all passed"
