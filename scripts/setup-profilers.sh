#!/usr/bin/env bash
# setup-profilers.sh installs the real profilers gpugate drives, on a fresh
# Debian 12 (bookworm) machine, as root:
#   - python3-torch (CPU PyTorch 1.13 from Debian main) for torch.profiler runs;
#   - Nsight Systems 2022.4 (nsight-systems + nsight-systems-target from
#     Debian non-free), unpacked into $GPUGATE_NSYS_ROOT (default
#     /opt/gpugate/nsight-systems) rather than installed, because the package's
#     Depends pull in the NVIDIA driver alternatives system-wide. nsys is then
#     $GPUGATE_NSYS_ROOT/usr/lib/nsight-systems/bin/nsys.
# It is idempotent: what is already there is kept. See
# ../shared/research/local-profiling-cpu.md for why each step is needed.
set -euo pipefail

ROOT=${GPUGATE_NSYS_ROOT:-/opt/gpugate/nsight-systems}
NSYS=$ROOT/usr/lib/nsight-systems/bin/nsys
export DEBIAN_FRONTEND=noninteractive

log() { printf 'setup-profilers: %s\n' "$*" >&2; }

if [ "$(id -u)" != 0 ]; then
	log "must run as root (apt-get install, /opt)"; exit 2
fi

have_torch() { /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; }
have_nsys() { [ -x "$NSYS" ] && "$NSYS" --version >/dev/null 2>&1; }

if have_torch && have_nsys && [ -e /usr/lib/x86_64-linux-gnu/libnvToolsExt.so.1 ]; then
	log "python3-torch and nsys ($NSYS) already installed"
	exit 0
fi

# Debian's non-free and contrib components, next to the main sources.
src=/etc/apt/sources.list.d/gpugate-nonfree.sources
if [ ! -f "$src" ]; then
	cat >"$src" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
apt-get update -qq

# libssh-4: QdstrmImporter links it; libnvtoolsext1: NVTX ranges from Python
# through ctypes on a torch built without CUDA.
apt-get install -y -qq --no-install-recommends python3-torch python3-numpy libssh-4 libnvtoolsext1 >/dev/null
log "python3-torch: $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"

if ! have_nsys; then
	tmp=$(mktemp -d)
	chown _apt "$tmp" 2>/dev/null || true
	(cd "$tmp" && apt-get download -qq nsight-systems nsight-systems-target)
	mkdir -p "$ROOT"
	for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$ROOT"; done
	rm -rf "$tmp"
	# nsys looks for QdstrmImporter in <its real dir>/../host-linux-x64, which
	# Debian ships elsewhere; without the link every profile ends in a huge
	# .qdstrm and "The importer binary and its dependencies were not found".
	ln -sfn ../../nsight-systems/host-linux-x64 "$ROOT/usr/lib/x86_64-linux-gnu/nsight-systems/host-linux-x64"
	ln -sfn /usr/lib/x86_64-linux-gnu/libssh.so.4 "$ROOT/usr/lib/x86_64-linux-gnu/libssh.so.4"
	# The package's own symlinks are absolute (/usr/lib/...): make the
	# wrapper chain point inside the unpacked tree.
	for l in $(find "$ROOT" -type l); do
		t=$(readlink "$l")
		case "$t" in /usr/lib/*nsight-systems*) ln -sfn "$ROOT$t" "$l" ;; esac
	done
fi
"$NSYS" --version >&2
log "nsys: $NSYS"
