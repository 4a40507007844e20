#!/usr/bin/env bash
# setup-docker.sh installs what the container tests (internal/dockertest,
# docs/containers.md) need on a fresh Debian 12 (bookworm) machine, as
# root: Debian's docker.io (dockerd, containerd, runc; the tests start a
# daemon of their own, on a socket in a temporary folder, and never use a
# system one), busybox-static (the shell of the test image, which the tests
# build from a local root filesystem: no registry) and apparmor (its
# apparmor_parser checks examples/apparmor/'s profile). Debian's package
# would start a system dockerd on install: policy-rc.d keeps it from doing
# so. Idempotent.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

log() { printf 'setup-docker: %s\n' "$*" >&2; }

# Docker's default seccomp profile, as Debian's docker.io 20.10 compiles it
# in (its source package's profiles/seccomp/default.json, shipped in
# golang-github-docker-docker-dev, of which only this file is kept): the
# container tests check that examples/containers/seccomp.json is exactly
# it plus gpugate's rules.
profile=/opt/gpugate/docker/seccomp-default.json

have() { [ -s $profile ] && command -v dockerd >/dev/null && command -v containerd >/dev/null && command -v runc >/dev/null && [ -x /bin/busybox ] && command -v apparmor_parser >/dev/null; }

if have; then
	log "already installed: $(dockerd --version)"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	log "must run as root (apt-get install)"; exit 2
fi
# Another install (the machine's own set-up) may hold dpkg's lock: wait
# for it rather than fail.
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
chmod +x /usr/sbin/policy-rc.d
trap 'rm -f /usr/sbin/policy-rc.d' EXIT
apt-get -o DPkg::Lock::Timeout=900 update -qq
apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends docker.io busybox-static apparmor >/dev/null
tmp=$(mktemp -d)
(cd "$tmp" && chown _apt "$tmp" 2>/dev/null; apt-get -o DPkg::Lock::Timeout=900 download -qq golang-github-docker-docker-dev >/dev/null)
dpkg-deb -x "$tmp"/golang-github-docker-docker-dev_*.deb "$tmp/x"
mkdir -p "$(dirname $profile)"
cp "$tmp/x/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json" $profile
rm -rf "$tmp"
have || { log "docker.io, busybox-static and apparmor installed, but dockerd, containerd, runc, /bin/busybox, apparmor_parser or $profile is missing"; exit 2; }
log "installed $(dockerd --version), $(runc --version | head -1), $(apparmor_parser --version | head -1)"
