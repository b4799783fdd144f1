#!/usr/bin/env bash
# Install the Debian Ceph packages the test suite's single-node cluster needs. Idempotent.
# (scripts/setup.sh --tests does this too; the package list lives in system-packages.d/ceph.sh.)
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t packages < <(bash scripts/system-packages.d/ceph.sh)
if ((${#packages[@]} == 0)); then
  echo "install-ceph: already installed ($(ceph --version 2>/dev/null || echo unknown version))"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${packages[@]}"
