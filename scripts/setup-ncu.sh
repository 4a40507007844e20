#!/usr/bin/env bash
# setup-ncu.sh installs the Nsight Compute CLI (ncu) that gpugate uses to
# read .ncu-rep reports, on a fresh Debian 12 (bookworm) machine, as root:
# Debian non-free's nsight-compute and nsight-compute-target 2022.3 are
# unpacked into $GPUGATE_NCU_ROOT (default /opt/gpugate/nsight-compute)
# rather than installed, as scripts/setup-profilers.sh does for nsys: the
# package's Depends pull in X11, OpenGL and the NVIDIA driver alternatives
# system-wide, and reading a report (ncu --import) needs none of them.
# ncu is then $GPUGATE_NCU_ROOT/usr/lib/nsight-compute/ncu.
#
# It is idempotent: a working ncu there is kept. It downloads about 350 MB
# (580 MB unpacked) the first time.
set -euo pipefail

ROOT=${GPUGATE_NCU_ROOT:-/opt/gpugate/nsight-compute}
NCU=$ROOT/usr/lib/nsight-compute/ncu
export DEBIAN_FRONTEND=noninteractive

log() { printf 'setup-ncu: %s\n' "$*" >&2; }

have_ncu() { [ -x "$NCU" ] && "$NCU" --version >/dev/null 2>&1; }

if have_ncu; then
	log "ncu already installed: $NCU"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	log "must run as root (apt-get, $ROOT)"; exit 2
fi

# Debian's non-free and contrib components, next to the main sources (the
# same file scripts/setup-profilers.sh writes).
src=/etc/apt/sources.list.d/gpugate-nonfree.sources
if [ ! -f "$src" ]; then
	cat >"$src" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	apt-get update -qq
fi
if ! apt-cache show nsight-compute >/dev/null 2>&1; then
	apt-get update -qq
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chown _apt "$tmp" 2>/dev/null || true
(cd "$tmp" && apt-get download -qq nsight-compute nsight-compute-target)
# Unpack into a fresh folder and move it into place, so that an interrupted
# run never leaves a half-unpacked tree that have_ncu would accept.
rm -rf "$ROOT.new"
mkdir -p "$ROOT.new"
for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$ROOT.new"; done
# The package's own symlinks are absolute (/usr/lib/...): make them point
# inside the unpacked tree.
while IFS= read -r l; do
	t=$(readlink "$l")
	case "$t" in /usr/lib/*nsight-compute*) ln -sfn "$ROOT$t" "$l" ;; esac
done < <(find "$ROOT.new" -type l)
rm -rf "$ROOT"
mv "$ROOT.new" "$ROOT"
"$NCU" --version >&2
log "ncu: $NCU"
