#!/usr/bin/env bash
# Prepares (once; cached in .cache/model-tests) and runs the model tests against onnxruntime.
set -euo pipefail
precis=$1
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${PRECIS_MODEL_CACHE:-$root/.cache/model-tests}
"$root/.venv/bin/python" "$root/scripts/make_model_tests.py" "$cache"
exec "$root/.venv/bin/python" "$root/tests/models/run_model_tests.py" "$precis" "$cache" "$@"
