#!/usr/bin/env bash
# One command: set up (first run) and launch the facestation web UI on http://127.0.0.1:7860
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
exec .venv/bin/facestation ui "$@"
