#!/usr/bin/env bash
# Start/stop a throw-away single-node Ceph cluster (mon + memstore OSD + radosgw) on loopback.
#   scripts/ceph-rgw.sh start DIR    # prints endpoint, ports, keys and PIDs as JSON
#   scripts/ceph-rgw.sh status DIR   # exit 0 if every daemon is alive and radosgw owns its port
#   scripts/ceph-rgw.sh stop DIR
# The work is done by tests/support/ceph_cluster.py; PYTHON picks the interpreter.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" -m tests.support.ceph_cluster "$@"
