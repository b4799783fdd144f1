#!/usr/bin/env bash
# Install the Debian Ceph packages the test suite's single-node cluster needs (mon, osd, mgr, radosgw).
# Idempotent: does nothing when every binary is already present. Needs root (or sudo) and apt.
set -euo pipefail

PACKAGES=(ceph-mon ceph-osd ceph-mgr radosgw ceph-common)
BINARIES=(ceph-mon ceph-osd ceph-mgr radosgw ceph ceph-authtool monmaptool radosgw-admin)

missing=()
for bin in "${BINARIES[@]}"; do
    command -v "$bin" >/dev/null 2>&1 || missing+=("$bin")
done
if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-ceph: already installed ($(ceph --version 2>/dev/null || echo unknown version))"
    exit 0
fi
echo "install-ceph: missing ${missing[*]}; installing ${PACKAGES[*]}"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
echo "install-ceph: installed $(ceph --version)"
