#!/usr/bin/env bash
# Create benchmarks/.venv: the project (editable, pinned) plus the reference implementations the
# benchmarks compare against (datatrove + spaCy for quality, rensa and datasketch for MinHash). These
# are never base dependencies (datasketch and rensa are in the [dev] extra). Idempotent and
# additive; run from anywhere.
set -euo pipefail
cd "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

VENV=benchmarks/.venv
PACKAGES=(datatrove spacy regex orjson rensa datasketch)  # regex, orjson: datatrove extras its text utils and JsonlReader need
PACKAGES+=(tokenizers megatron-core torch==2.13.0)  # export.py's baseline: encode_batch + IndexedDatasetBuilder (CPU torch)
PACKAGES+=("xxhash<4")  # datatrove 0.10 hashes str shingles with xxhash, which refuses str from 4.0 on

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet -e . "${PACKAGES[@]}"
"$VENV/bin/python" -c "import datatrove, spacy, rensa, datasketch, tokenizers, megatron.core; spacy.blank('en'); print('bench env ready')"
