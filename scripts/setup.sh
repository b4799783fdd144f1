#!/usr/bin/env bash
# Install everything the project needs on a fresh Debian 12 machine (run as root):
# system packages that are missing, a virtualenv in .venv, and the project with pinned versions.
#   scripts/setup.sh           runtime (the demo)
#   scripts/setup.sh --tests   runtime + everything the test suite needs (PostgreSQL, Ceph, dev tools)
set -euo pipefail
cd "$(dirname "$0")/.."

with_tests=0
[[ "${1:-}" == "--tests" ]] && with_tests=1

packages=()
command -v java >/dev/null 2>&1 || packages+=(openjdk-17-jre-headless)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || packages+=(python3-venv)
if ((with_tests)); then
  for script in scripts/system-packages.d/*.sh; do
    [[ -e "$script" ]] || continue
    # each file prints the Debian packages one test dependency needs, if they are missing
    while read -r pkg; do [[ -n "$pkg" ]] && packages+=("$pkg"); done < <(bash "$script")
  done
fi
if ((${#packages[@]})); then
  echo "installing Debian packages: ${packages[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# the engines and the PostgreSQL driver are extras (pyproject.toml); torch is pinned below
extras="spark,ray,postgres,export,dev"
.venv/bin/python -m pip install -q -c constraints.txt -e ".[${extras}]"
if ((with_tests)); then
  # The MDS reader the tests check our shards with. Its declared cloud SDKs (boto3, whose botocore wants
  # python-dateutil<3) cannot resolve with our pins; the modules it imports for local shards are in [dev].
  .venv/bin/python -m pip install -q -c constraints.txt --no-deps streaming-community
fi
if ((with_tests)); then
  # The [torch] extra leaves the version to users; tests pin the CPU build this machine kind carries.
  .venv/bin/python -c 'import torch' >/dev/null 2>&1 || .venv/bin/python -m pip install -q torch==2.13.0
fi
# Bytecode for the project's own modules, written once here: with PYTHONDONTWRITEBYTECODE set (as on many
# CI and container images) every `lineage` process would otherwise compile ~460 modules from source,
# about 0.2 s of each command's start-up. Python still checks each file's mtime, so an edit is never
# served stale.
.venv/bin/python -m compileall -q -j 0 storage operators pipelines lineage api >/dev/null
echo "setup done: $(.venv/bin/python --version), project installed in .venv"
