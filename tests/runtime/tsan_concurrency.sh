#!/usr/bin/env bash
# ThreadSanitizer run of the concurrency test: builds the runtime and concurrency_test with
# -fsanitize=thread in a tree of their own (only those targets, at -O1 with line tables: a few
# minutes on 2 cores) and runs it on the plans the `concurrency` test compiled. Any data race
# reported is fatal.
#
# usage: tsan_concurrency.sh BUILD_DIR PLAN...
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build=$1
shift
mkdir -p "$build"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DPRECIS_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_C_FLAGS="-fsanitize=thread" -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >"$build/configure.log" 2>&1 ||
    { tail -n 20 "$build/configure.log"; echo "tsan: configure failed" >&2; exit 1; }
fi
cmake --build "$build" --target concurrency_test -j "${TSAN_BUILD_JOBS:-2}" >"$build/build.log" 2>&1 ||
  { tail -n 40 "$build/build.log"; echo "tsan: build failed (log: $build/build.log)" >&2; exit 1; }
# libgomp is not instrumented: the sessions run one thread each (no OpenMP workers), so the only
# threads are the test's own.
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}halt_on_error=1:second_deadlock_stack=1"
"$build/bin/concurrency_test" "$@"
echo "tsan: no data race reported"
