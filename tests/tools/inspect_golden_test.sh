#!/usr/bin/env bash
# Golden tests of `precis inspect`: the text summary of the bundled example and the text IR of a
# Loop model (subgraph, outer scope, constants) must match the reviewed files in golden/.
# To update after an intended change: rerun the commands below and review the diff by hand.
set -u
precis=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
fail=0
check() {  # check NAME GOLDEN COMMAND...
  local name=$1 golden=$2; shift 2
  if diff -u "$golden" <("$@" 2>&1) > /tmp/precis_golden_diff.$$; then
    echo "ok   $name"
  else
    echo "FAIL $name: output differs from $golden"; cat /tmp/precis_golden_diff.$$; fail=$((fail + 1))
  fi
  rm -f /tmp/precis_golden_diff.$$
}
check "inspect tiny_convnet" "$here/golden/tiny_convnet.inspect.txt" "$precis" inspect "$root/examples/tiny_convnet.onnx"
check "inspect --ir test_loop11" "$here/golden/test_loop11.pir" "$precis" inspect --ir /usr/share/libonnx-testdata/data/node/test_loop11/model.onnx
echo "$((2 - fail)) passed, $fail failed"
exit $((fail > 0))
