#!/usr/bin/env bash
# Golden IR tests: each tests/ir/passes/*.pir file holds cases separated by `// -----` lines. A case
# starts with `// RUN: ARGS` (arguments for `precis opt`, which reads the case as text IR) and
# carries FileCheck directives (CHECK, CHECK-NEXT, CHECK-NOT, CHECK-LABEL...) checked against the
# printed result. `// RUN-ERROR: ARGS` expects opt to fail and checks its error message instead.
set -euo pipefail
precis=$1
filecheck=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cases=0
failed=0
for file in "$@"; do
  # Split the file into numbered case files.
  awk -v dir="$tmp" -v base="$(basename "$file" .pir)" '
    BEGIN { n = 1; out = dir "/" base "." n ".pir" }
    /^\/\/ -----/ { n++; out = dir "/" base "." n ".pir"; next }
    { print > out }' "$file"
  for c in "$tmp/$(basename "$file" .pir)".*.pir; do
    cases=$((cases + 1))
    if args=$(grep -m1 '^// RUN: ' "$c" | sed 's|^// RUN: ||'); then
      if ! "$precis" opt "$c" $args 2>"$c.err" | "$filecheck" --dump-input=fail "$c" 2>"$c.fc"; then
        echo "FAIL $file case $(basename "$c"):"; cat "$c.err" "$c.fc"; failed=$((failed + 1))
      fi
    elif args=$(grep -m1 '^// RUN-ERROR: ' "$c" | sed 's|^// RUN-ERROR: ||'); then
      if "$precis" opt "$c" $args >/dev/null 2>"$c.err"; then
        echo "FAIL $file case $(basename "$c"): expected an error"; failed=$((failed + 1))
      elif ! "$filecheck" --dump-input=fail "$c" <"$c.err" 2>"$c.fc"; then
        echo "FAIL $file case $(basename "$c"):"; cat "$c.fc"; failed=$((failed + 1))
      fi
    else
      echo "FAIL $file case $(basename "$c"): no RUN line"; failed=$((failed + 1))
    fi
  done
done
echo "golden IR tests: $((cases - failed)) of $cases cases pass"
[ "$failed" -eq 0 ]
