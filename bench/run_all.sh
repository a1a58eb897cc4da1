#!/usr/bin/env bash
# Runs every benchmark (see bench/bench.py). Results: bench/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .deps/venv/bin/python bench/bench.py "$@"
