#!/usr/bin/env bash
# Creates benchmarks/.venv: the project (editable) plus rensa, which only the benchmark needs.
# Run from anywhere; the venv lands next to this script.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
python3 -m venv benchmarks/.venv
benchmarks/.venv/bin/pip install --quiet -e . rensa
benchmarks/.venv/bin/python -c "import rensa, datasketch, numba; print('bench env ready:', rensa.__name__)"
