#!/usr/bin/env bash
# The API auth tests put a server in a network namespace of their own (`ip netns`), so that it sees a
# peer that is not loopback: print the Debian package if missing.
command -v ip >/dev/null 2>&1 || echo iproute2
