#!/usr/bin/env bash
# Install everything (including PostgreSQL and Ceph for the tests), lint, and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
.venv/bin/ruff check .
.venv/bin/lint-imports
export PYTHONUNBUFFERED=1
exec .venv/bin/python -m pytest -q --durations=30 "$@"  # the slowest tests, to keep the suite under 30 minutes
