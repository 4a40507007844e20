#!/usr/bin/env bash
# setup-chromium.sh installs Debian's chromium, which the dashboard's browser
# tests (package dashboard, chromedp) drive headless: every page must load
# with no console errors and no network requests. Idempotent; as root.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

log() { printf 'setup-chromium: %s\n' "$*" >&2; }

if command -v chromium >/dev/null 2>&1; then
	log "chromium already installed: $(chromium --version 2>/dev/null || echo unknown version)"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	log "must run as root (apt-get install)"; exit 2
fi
# The lock timeout lets it wait for another apt-get (the other setup scripts)
# rather than fail.
apt-get -o DPkg::Lock::Timeout=900 update -qq
apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null || { log "chromium installed, but not on PATH"; exit 2; }
log "installed $(chromium --version 2>/dev/null)"
