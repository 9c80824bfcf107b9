#!/usr/bin/env bash
# The corpus checks must be able to fail: conformance_runner and import_corpus_test are run on a
# missing corpus, an empty corpus, an expected case that is not on disk and (FP16) an expected
# case that mismatches; each must exit 1 with a message naming the problem.
#
# usage: runner_self_test.sh CONFORMANCE_RUNNER IMPORT_CORPUS_TEST NODE_CORPUS_DIR SCRATCH_DIR
set -u
runner=$1
importer=$2
node=$3
tmp=$4
rm -rf "$tmp" && mkdir -p "$tmp/empty"
failures=0

# expect NAME PATTERN COMMAND...: the command exits 1 and its output matches PATTERN.
expect() {
  local name=$1 pattern=$2
  shift 2
  "$@" >"$tmp/$name.log" 2>&1
  local rc=$?
  if [ "$rc" -ne 1 ]; then
    echo "FAIL $name: exit $rc, expected 1"; tail -n 5 "$tmp/$name.log"; failures=$((failures + 1))
  elif ! grep -q -- "$pattern" "$tmp/$name.log"; then
    echo "FAIL $name: output lacks '$pattern'"; tail -n 5 "$tmp/$name.log"; failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}

printf 'debian-node/test_abs\n' >"$tmp/abs.txt"
printf 'debian-node/test_abs\ndebian-node/test_abs_renamed_away\n' >"$tmp/absent.txt"
printf 'debian-node/test_softmax_large_number\n' >"$tmp/softmax.txt"
: >"$tmp/unsupported.txt"

expect conformance_missing_corpus "is not a folder" "$runner" --expect "$tmp/abs.txt" c="$tmp/no-such-corpus"
expect conformance_empty_corpus "no cases under" "$runner" c="$tmp/empty"
expect conformance_absent_case "test_abs_renamed_away is expected to pass but is not in its corpus" \
  "$runner" --filter test_abs --expect "$tmp/absent.txt" debian-node="$node"
# FP16 rounds the inputs of this case (values near 10000) so that it mismatches: on the list, that fails.
expect conformance_fp16_expected_mismatch "test_softmax_large_number is expected to pass" \
  "$runner" --precision fp16 --filter test_softmax_large_number --expect "$tmp/softmax.txt" debian-node="$node"
expect import_missing_corpus "is missing" "$importer" "$tmp/unsupported.txt" c="$tmp/no-such-corpus"
expect import_empty_corpus "no cases" "$importer" "$tmp/unsupported.txt" c="$tmp/empty"

if [ "$failures" -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all passed"
