#!/usr/bin/env bash
# One command: set up (first run, with test tools and chromium) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh --dev
exec .venv/bin/python -m pytest "$@"
