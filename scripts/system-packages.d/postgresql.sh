#!/usr/bin/env bash
# The API tests start a real PostgreSQL server (initdb + pg_ctl): print the Debian package if missing.
shopt -s nullglob
for dir in /usr/lib/postgresql/*/bin; do
  [[ -x "$dir/initdb" && -x "$dir/pg_ctl" && -x "$dir/postgres" ]] && exit 0
done
echo postgresql
