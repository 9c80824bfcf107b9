#!/usr/bin/env bash
# Import benchmark: time and peak RSS of importing torchvision vit_b_16 (opset 17, about 346 MB
# of float32 weights), once with its weights inline in the .onnx file and once with them in an
# external data file. Exports the models into .cache/models/ if missing, builds
# precis_import_bench, runs one warm-up import per variant (so the numbers are warm page cache),
# then RUNS imports per variant, each in a fresh process, and prints medians against the goals:
#   inline:   import < 1000 ms and peak RSS < 2.2x the weight bytes
#   external: import < 200 ms and no owned tensor of >= 1024 bytes (weights are mapped, not copied)
# Exits 1 when a goal is missed. Environment: BUILD (build folder, default build), RUNS (default 5),
# MODEL (torchvision architecture, default vit_b_16), CMAKE_FLAGS (when BUILD must be configured).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
MODEL=${MODEL:-vit_b_16}
CACHE=.cache/models
INLINE=$CACHE/$MODEL.onnx
EXTERNAL=$CACHE/${MODEL}_ext.onnx
TORCH_PY=/usr/bin/python3   # Debian's python3-torch lives with the system interpreter
ONNX_PY=.venv/bin/python    # onnx==1.22.0, from scripts/install-deps.sh
RESULTS=$BUILD/bench/import_bench.jsonl

mkdir -p "$CACHE"
if [ ! -f "$INLINE" ]; then
  if ! "$TORCH_PY" -c 'import torch, torchvision' 2>/dev/null; then
    echo "import_bench: $TORCH_PY lacks torch/torchvision; apt-get install python3-torchvision" >&2
    exit 2
  fi
  echo "import_bench: exporting $MODEL (opset 17) to $INLINE"
  "$TORCH_PY" -W ignore scripts/export_torchvision.py "$MODEL" "$INLINE" --opset 17
fi
if [ ! -f "$EXTERNAL" ] || [ ! -f "$EXTERNAL.data" ] || [ "$INLINE" -nt "$EXTERNAL" ]; then
  [ -x "$ONNX_PY" ] || { echo "import_bench: $ONNX_PY missing; run make deps" >&2; exit 2; }
  "$ONNX_PY" scripts/to_external_data.py "$INLINE" "$EXTERNAL"
fi

[ -f "$BUILD/build.ninja" ] || cmake -S . -B "$BUILD" -G Ninja ${CMAKE_FLAGS:-}
cmake --build "$BUILD" --target precis_import_bench
BENCH=$BUILD/bin/precis_import_bench

mkdir -p "$(dirname "$RESULTS")"
: > "$RESULTS"
run_variant() {  # run_variant NAME PATH
  echo "import_bench: $1: 1 warm-up import, then $RUNS measured (each a fresh process)"
  "$BENCH" "$2" > /dev/null
  for _ in $(seq "$RUNS"); do
    "$BENCH" "$2" | sed "s/^{/{\"variant\":\"$1\",/" >> "$RESULTS"
  done
}
run_variant inline "$INLINE"
run_variant external "$EXTERNAL"

"$TORCH_PY" - "$RESULTS" <<'EOF'
import json, statistics, sys

rows = [json.loads(line) for line in open(sys.argv[1])]
MB = 1e6
GOALS = {  # variant -> (max import ms, max peak RSS / weight bytes or None, must own no large tensor)
    "inline": (1000.0, 2.2, False),
    "external": (200.0, None, True),
}
print()
print("Warm page cache: every variant had one unmeasured import first; medians of", 
      sum(r["variant"] == "inline" for r in rows), "fresh processes each.")
header = ("variant", "weight MB", "import ms", "peak RSS MB", "RSS/weight", "anon RSS MB",
          "owned MB", "viewed MB", "owned>=1KiB MB", "result")
print("| " + " | ".join(header) + " |")
print("|" + "|".join("---" for _ in header) + "|")
failed = False
for variant, (max_ms, max_ratio, no_owned) in GOALS.items():
    runs = [r for r in rows if r["variant"] == variant]
    if not runs or not all(r["ok"] for r in runs):
        errors = {r.get("error", "no run") for r in runs} or {"no run"}
        print(f"| {variant} | import failed: {'; '.join(errors)} |")
        failed = True
        continue
    weight = runs[0]["constant_bytes"]
    ms = statistics.median(r["import_ms"] for r in runs)
    peak = statistics.median(r["peak_rss_bytes"] for r in runs)
    anon = statistics.median(r["rss_anon_after_bytes"] for r in runs)
    ratio = peak / weight if weight else float("inf")
    r0 = runs[0]
    why = []
    if ms >= max_ms:
        why.append(f"ms >= {max_ms:.0f}")
    if max_ratio is not None and ratio >= max_ratio:
        why.append(f"RSS >= {max_ratio}x")
    if no_owned and r0["owned_large_bytes"] > 0:
        why.append("owns large tensors")
    failed |= bool(why)
    result = "FAIL (" + ", ".join(why) + ")" if why else "PASS"
    print(f"| {variant} | {weight / MB:.1f} | {ms:.1f} | {peak / MB:.1f} | {ratio:.2f}x "
          f"| {anon / MB:.1f} | {r0['owned_bytes'] / MB:.2f} | {r0['viewed_bytes'] / MB:.1f} "
          f"| {r0['owned_large_bytes'] / MB:.2f} | {result} |")
print()
print("Goals: inline < 1000 ms and peak RSS < 2.2x weight bytes; external < 200 ms and no owned"
      " tensor of >= 1 KiB. Raw runs:", sys.argv[1])
sys.exit(1 if failed else 0)
EOF
