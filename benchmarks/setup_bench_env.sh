#!/usr/bin/env bash
# Create the benchmark venv with the reference implementations (datatrove, spaCy, rensa).
# Idempotent and additive: re-running only installs what is missing. Run from the repo root.
set -euo pipefail

VENV=benchmarks/.venv
PACKAGES=(datatrove spacy regex orjson rensa)  # regex, orjson: datatrove extras its text utils and JsonlReader need

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet -e . "${PACKAGES[@]}"
"$VENV/bin/python" -c "import datatrove, spacy; spacy.blank('en'); print('bench env ready:', datatrove.__name__, spacy.__version__)"
