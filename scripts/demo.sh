#!/usr/bin/env bash
# Install everything, then run the end-to-end demo on the bundled Debian corpus (embedded defaults:
# in-process engine, local folder as the CFS tier, SQLite catalog, all under ./.lineage).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/lineage demo "$@"
