#!/usr/bin/env bash
# Take one Debian source package's samples down from debian-clean@demo, as a user would after an opt-out
# request: record the request, plan it (nothing changes), apply it (a successor release without them, the
# old one withdrawn) and purge the bytes, then read the successor. Run `lineage demo` first (same
# LINEAGE_HOME). The README's "Takedown" section walks through it; tests/lineage/cli/test_takedown_example.py
# runs this script on a slice of the corpus.
#
#   bash examples/takedown.sh [SOURCE_PACKAGE]      # default: abiword (its English and Chinese descriptions)
# The package must have a sample in the release: the demo's merge stage mixes its sources 0.7/0.3 by words,
# which leaves most English descriptions out (abiword's are in, on the whole corpus and on the test's slice).
set -euo pipefail
PACKAGE="${1:-abiword}"
LINEAGE="${LINEAGE:-lineage}"

echo "== 1. record the request: every sample whose Debian source package is $PACKAGE"
ID=$($LINEAGE takedown request --where meta.meta.source_package --value "$PACKAGE" \
    --kind opt_out --reason "the maintainers of $PACKAGE asked us to stop using their descriptions" --json \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
$LINEAGE takedown show "$ID"

echo "== 2. the plan: which releases hold them, in which files, on which tiers, read by which jobs"
$LINEAGE takedown plan "$ID"

echo "== 3. apply and purge: successor releases without the samples, then their bytes deleted everywhere"
$LINEAGE takedown apply "$ID" --purge
$LINEAGE release list

echo "== 4. read the successor (the withdrawn release is a tombstone: reading it fails, naming the successor)"
python3 - "$ID" <<'PY'
import sys

from lineage import Client, errors
from lineage.reader import open_release

with Client() as client:
    old = client.get_release("debian-clean@demo")
    print(f"debian-clean@demo: {old.state}, successor {old.successor}")
    if old.successor is None:
        sys.exit("debian-clean@demo held none of the package's samples, so it has no successor: pick another package")
    rows = list(open_release(old.successor, as_dicts=True, columns=["sample_id", "meta"]))
    print(f"{old.successor}: {len(rows):,} samples read, {client.get_release(old.successor).row_count:,} released")
    try:
        open_release("debian-clean@demo", override_reason="an audit")
    except errors.DataPurged as exc:
        print(f"reading debian-clean@demo: {exc}")
PY
