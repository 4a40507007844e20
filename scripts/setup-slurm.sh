#!/usr/bin/env bash
# setup-slurm.sh installs Debian 12's Slurm (slurm-wlm 22.05: slurmctld,
# slurmd, the client commands srun/sbatch/salloc/squeue/scancel) and MUNGE,
# which the Slurm tests (internal/slurmtest) start as a throwaway two-node
# cluster of their own under a temp dir. The packages' own system services
# are stopped and disabled: the tests never use them. Idempotent; as root.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

log() { printf 'setup-slurm: %s\n' "$*" >&2; }

have() {
	command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 &&
		command -v srun >/dev/null 2>&1 && command -v munged >/dev/null 2>&1
}

if have; then
	log "already installed: $(slurmctld -V 2>/dev/null || echo unknown version), $(munged -V 2>/dev/null | head -1 || echo munge)"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	log "must run as root (apt-get install)"; exit 2
fi
# policy-rc.d: keep apt from starting the packages' own slurmctld, slurmd
# and munged (there is no init on a CI container anyway; where there is,
# the tests' cluster must not meet a system one).
policy=/usr/sbin/policy-rc.d
made_policy=
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=1
fi
trap 'if [ -n "$made_policy" ]; then rm -f "$policy"; fi' EXIT
# The lock timeout lets it wait for another apt-get (the other setup scripts)
# rather than fail.
apt-get -o DPkg::Lock::Timeout=900 update -qq
apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends \
	slurm-wlm slurmctld slurmd slurm-client munge >/dev/null
have || { log "slurm-wlm installed, but slurmctld/slurmd/srun/munged are not all on PATH"; exit 2; }
log "installed $(slurmctld -V 2>/dev/null), $(munged -V 2>/dev/null | head -1)"
