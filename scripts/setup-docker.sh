#!/usr/bin/env bash
# setup-docker.sh installs what the container tests (internal/dockertest,
# docs/containers.md) need on a fresh Debian 12 (bookworm) machine, as
# root: Debian's docker.io (dockerd, containerd, runc; the tests start a
# daemon of their own, on a socket in a temporary folder, and never use a
# system one) and busybox-static (the shell of the test image, which the
# tests build from a local root filesystem: no registry); and AppArmor 4's
# parser, which checks examples/apparmor/'s profile: Debian 12's apparmor
# (3.0) does not know the userns rule, so Debian 13's package is unpacked
# into the Debian 13 chroot that setup-torch2.sh makes (run it first), and
# runs there. Debian's docker.io package
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

# The Debian 13 chroot, and where AppArmor 4 is unpacked in it.
chroot=/opt/gpugate/trixie
aa=/opt/apparmor4

have() { [ -s $profile ] && [ -x $chroot$aa/usr/sbin/apparmor_parser ] && command -v dockerd >/dev/null && command -v containerd >/dev/null && command -v runc >/dev/null && [ -x /bin/busybox ]; }

if have; then
	log "already installed: $(dockerd --version); AppArmor 4's parser in $chroot$aa"
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
apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends docker.io busybox-static >/dev/null
tmp=$(mktemp -d)
(cd "$tmp" && chown _apt "$tmp" 2>/dev/null; apt-get -o DPkg::Lock::Timeout=900 download -qq golang-github-docker-docker-dev >/dev/null)
dpkg-deb -x "$tmp"/golang-github-docker-docker-dev_*.deb "$tmp/x"
mkdir -p "$(dirname $profile)"
cp "$tmp/x/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json" $profile
rm -rf "$tmp"
if [ -d $chroot/usr ]; then
	rm -rf $chroot/tmp/apparmor4 && mkdir -p $chroot/tmp/apparmor4
	chroot $chroot sh -c 'cd /tmp/apparmor4 && apt-get download -qq apparmor' >/dev/null 2>&1 || chroot $chroot sh -c 'apt-get update -qq && cd /tmp/apparmor4 && apt-get download -qq apparmor' >/dev/null
	rm -rf $chroot$aa && dpkg-deb -x $chroot/tmp/apparmor4/apparmor_*.deb $chroot$aa
	rm -rf $chroot/tmp/apparmor4
else
	log "no Debian 13 chroot at $chroot (scripts/setup-torch2.sh makes it): AppArmor 4's parser not installed"
fi
have || { log "docker.io and busybox-static installed, but dockerd, containerd, runc, /bin/busybox, $profile or $chroot$aa/usr/sbin/apparmor_parser is missing"; exit 2; }
log "installed $(dockerd --version), $(runc --version | head -1), $(chroot $chroot $aa/usr/sbin/apparmor_parser --version | head -1) (in $chroot)"
