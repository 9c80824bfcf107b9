#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine (with the CUDA toolkit) lacks to build and test Precis:
# Debian development packages (python3-torch and python3-torchvision, run by /usr/bin/python3,
# export real architectures) and a Python virtual environment (.venv/) with the onnx, onnxruntime
# and numpy versions the tests use for test data and reference results. Quick when all is present.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES=(
  cmake ninja-build g++ clang libclang-rt-14-dev
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libflatbuffers-dev flatbuffers-compiler
  llvm-16-dev llvm-16-tools
  libgtest-dev libgmock-dev libdnnl-dev
  python3-venv
  python3-torch python3-torchvision
)
PY_PACKAGES=(onnx==1.22.0 onnxruntime numpy)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The venv uses the system interpreter so that Debian's python3-torch is not mixed in by accident
# (export scripts call /usr/bin/python3 directly); any python3 >= 3.9 works for the venv itself.
PY=${PRECIS_PYTHON:-python3}
stamp=.venv/.precis-deps
want="${PY_PACKAGES[*]}"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "install-deps: creating Python environment .venv with: $want"
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check "${PY_PACKAGES[@]}"
  echo "$want" > "$stamp"
fi
