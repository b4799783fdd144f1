#!/usr/bin/env bash
# Debian packages the test suite's single-node Ceph cluster (mon + memstore osd + radosgw) needs,
# printed one per line, only if one of their binaries is missing.
for bin in ceph-mon ceph-osd ceph-mgr radosgw ceph ceph-authtool monmaptool radosgw-admin; do
  if ! command -v "$bin" >/dev/null 2>&1; then
    printf '%s\n' ceph-mon ceph-osd ceph-mgr radosgw ceph-common
    exit 0
  fi
done
