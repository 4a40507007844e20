#!/usr/bin/env bash
# setup-postgres.sh installs the PostgreSQL server binaries the baseline
# store's tests run against, on a fresh Debian 12 (bookworm) machine, as
# root: Debian's postgresql-15 (initdb and pg_ctl in /usr/lib/postgresql/15/bin,
# and the postgres user the tests' throwaway clusters run as). Debian's
# package starts a system cluster on install; the tests never use it (they
# start their own in a temporary folder, on a Unix socket there, see
# internal/pgtest), so it is stopped and left disabled. Idempotent.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

log() { printf 'setup-postgres: %s\n' "$*" >&2; }

have() { ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 && id postgres >/dev/null 2>&1; }

if have; then
	log "PostgreSQL server binaries already installed: $(ls -d /usr/lib/postgresql/*/bin | tr '\n' ' ')"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	log "must run as root (apt-get install)"; exit 2
fi
# policy-rc.d keeps the package from starting its own cluster.
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
chmod +x /usr/sbin/policy-rc.d
trap 'rm -f /usr/sbin/policy-rc.d' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null
have || { log "postgresql-15 installed, but pg_ctl or the postgres user is missing"; exit 2; }
log "installed $(ls -d /usr/lib/postgresql/*/bin)"
