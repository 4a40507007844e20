#!/usr/bin/env bash
# setup-torch2.sh gives a Debian 12 machine a real PyTorch 2.x next to
# Debian 12's own 1.13, as root, so that gpugate's tests cover both:
#   - 1.13 (python3-torch in bookworm) is built without Kineto: its CPU
#     profiler writes the old autograd trace format, and gpugate's injection
#     takes its torch < 2.0 path;
#   - Debian 13 (trixie) ships python3-torch 2.6 built with Kineto: the
#     modern trace format and the public optimizer step hooks every user
#     has.
# trixie's torch needs trixie's Python 3.13 and libraries, so it lives in a
# chroot made by debootstrap from Debian's own packages:
#   $GPUGATE_TORCH2_ROOT   (default /opt/gpugate/trixie)    the chroot
#   $GPUGATE_TORCH2_BIN    (default /opt/gpugate/bin/python3-torch2)
# The wrapper runs the chroot's python3 and takes the place of
# /usr/bin/python3 in a workload's command (see its own comment for how the
# job's files stay visible inside). The script is idempotent: a finished
# chroot is kept, a half-made one (no marker) is made again.
set -euo pipefail

ROOT=${GPUGATE_TORCH2_ROOT:-/opt/gpugate/trixie}
BIN=${GPUGATE_TORCH2_BIN:-/opt/gpugate/bin/python3-torch2}
MIRROR=${GPUGATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=trixie
export DEBIAN_FRONTEND=noninteractive

log() { printf 'setup-torch2: %s\n' "$*" >&2; }

if [ "$(id -u)" != 0 ]; then
	log "must run as root (debootstrap, chroot, /opt)"; exit 2
fi
case "$ROOT" in /?*) ;; *) log "GPUGATE_TORCH2_ROOT must be an absolute path, not $ROOT"; exit 2 ;; esac

# The wrapper is rewritten every time (cheap), so a changed wrapper reaches
# machines that already have the chroot.
write_wrapper() {
	mkdir -p "$(dirname "$BIN")"
	local tmp
	tmp=$(mktemp "$(dirname "$BIN")/.python3-torch2.XXXXXX")
	sed "s#@ROOT@#$ROOT#" >"$tmp" <<'WRAPPER'
#!/usr/bin/env bash
# python3-torch2 [python3 args...]: runs Debian 13's python3 with PyTorch 2.x
# from the chroot @ROOT@ (made by gpugate's scripts/setup-torch2.sh), as a
# drop-in for /usr/bin/python3 in a workload's command.
#
# Paths are kept the same inside and outside, so that nothing gpugate hands
# the job has to be translated: in a private mount namespace (unshare -m, so
# nothing outlives the job and nothing leaks into the host's mount table)
# the wrapper bind-mounts into the chroot, at their own absolute paths,
#   - /proc, /sys and /dev (DataLoader workers share tensors through
#     /dev/shm; the step hook reads /proc/self/statm);
#   - /tmp and the working directory;
#   - every directory on PYTHONPATH (gpugate's injected sitecustomize lives
#     in <artifacts>/inject/...), and the folders of GPUGATE_TRACE_OUT and
#     GPUGATE_STEP_SAMPLES (the trace and the per-step samples);
#   - anything in GPUGATE_TORCH2_BIND (colon-separated).
# Each path is bound by its top-level directory (/work for
# /work/x/y), so the job also sees its neighbours (../data), unless that
# directory is the system's own (/usr, /etc, /var, /opt, ...): then only the exact
# path is bound, over the chroot's, never the host's whole /usr over the
# chroot's. Rejected: one bind of the host's / (the chroot's /usr would be
# hidden); copying files in and out (the job's outputs would be lost on a
# kill); persistent mounts made once by the setup script (they leak into
# every process and do not survive a reboot).
#
# Everything is exec'd, so gpugate's process-group kill reaches python
# itself. As root the namespace is a plain one; otherwise a user namespace
# maps the caller to root (kernels that allow unprivileged user namespaces).
#
# Where no mount namespace can be made (an unprivileged container), or with
# GPUGATE_TORCH2_MODE=loader, it runs the chroot's python3 in place instead:
# through the chroot's own dynamic loader, with its library folders and
# PYTHONHOME=<chroot>/usr, so every host path is visible as it is. The
# difference: sys.executable is <chroot>/usr/bin/python3, which cannot be
# exec'd directly on the host (multiprocessing's "spawn" start method; the
# default "fork", which DataLoader workers use, works), and PYTHONHOME
# reaches the job's own subprocesses.
set -euo pipefail
ch=@ROOT@
if [ ! -x "$ch/usr/bin/python3" ] || [ ! -e "$ch/.gpugate-torch2-ok" ]; then
	echo "python3-torch2: no finished chroot at $ch: run scripts/setup-torch2.sh" >&2
	exit 127
fi
self=$(readlink -f "${BASH_SOURCE[0]}")
if [ "${_GPUGATE_TORCH2_NS:-}" != "$$" ]; then
	userns=
	[ "$(id -u)" = 0 ] || userns="--user --map-root-user"
	mode=${GPUGATE_TORCH2_MODE:-auto}
	if [ "$mode" = auto ]; then
		mode=loader
		# shellcheck disable=SC2086
		unshare $userns --mount --propagation private true 2>/dev/null && mode=chroot
	fi
	if [ "$mode" = loader ]; then
		shopt -s nullglob
		loaders=("$ch"/lib64/ld-linux*.so.* "$ch"/lib/ld-linux*.so.*)
		libs=("$ch"/usr/lib/*-linux-gnu*)
		path=$(IFS=:; echo "${libs[*]}")
		export PYTHONHOME=$ch/usr
		exec "${loaders[0]}" --library-path "$path" "$ch/usr/bin/python3" "$@"
	fi
	# shellcheck disable=SC2086
	exec env _GPUGATE_TORCH2_NS=$$ unshare $userns --mount --propagation private -- "$self" "$@"
fi
unset _GPUGATE_TORCH2_NS
mount --rbind /proc "$ch/proc"
mount --rbind /sys "$ch/sys"
mount --rbind /dev "$ch/dev"

cwd=$(pwd -P)
paths=("$cwd" /tmp)
IFS=: read -ra more <<<"${PYTHONPATH:-}:${GPUGATE_TORCH2_BIND:-}"
paths+=("${more[@]}")
for v in "${GPUGATE_TRACE_OUT:-}" "${GPUGATE_STEP_SAMPLES:-}"; do
	[ -n "$v" ] && paths+=("$(dirname "$v")")
done
declare -A bound=()
for p in "${paths[@]}"; do
	case "$p" in /?*) ;; *) continue ;; esac
	[ -d "$p" ] || continue
	p=$(readlink -f "$p")
	[ "$p" = / ] && continue
	rest=${p#/}
	top=/${rest%%/*}
	case "$top" in
	/usr | /lib | /lib32 | /lib64 | /libx32 | /bin | /sbin | /etc | /var | /proc | /sys | /dev | /run | /boot | /opt)
		target=$p ;;
	*) target=$top ;;
	esac
	# A path under one already bound (or the chroot itself) needs nothing.
	skip=
	for b in "${!bound[@]}"; do
		case "$target/" in "$b"/*) skip=1 ;; esac
	done
	case "$target/" in "$ch"/*) skip=1 ;; esac
	[ -n "$skip" ] && continue
	mkdir -p "$ch$target"
	mount --rbind "$target" "$ch$target"
	bound[$target]=1
done
exec chroot "$ch" /bin/sh -c 'cd "$1" && shift && exec /usr/bin/python3 "$@"' python3-torch2 "$cwd" "$@"
WRAPPER
	chmod 755 "$tmp"
	mv -f "$tmp" "$BIN"
}

write_wrapper
if [ -e "$ROOT/.gpugate-torch2-ok" ] && v=$("$BIN" -c 'import torch; print(torch.__version__)' 2>/dev/null); then
	log "PyTorch $v already in $ROOT ($BIN)"
	exit 0
fi

# A chroot this script started but debootstrap did not finish is a
# half-made one: start over. Only a folder with this script's start marker
# is ever removed (GPUGATE_TORCH2_ROOT could name anything); the wrapper's
# mounts live in private namespaces, so nothing should be mounted below it,
# and if something is, it is not removed either.
if [ -d "$ROOT" ] && [ ! -e "$ROOT/.gpugate-debootstrap-ok" ]; then
	if [ ! -e "$ROOT/.gpugate-debootstrap-started" ]; then
		log "$ROOT exists and was not made by this script: not touching it"; exit 2
	fi
	if grep -q " $ROOT/" /proc/self/mountinfo; then
		log "something is mounted below $ROOT: not removing it"; exit 2
	fi
	log "removing the half-made chroot $ROOT"
	rm -rf --one-file-system "$ROOT"
fi
if [ ! -d "$ROOT" ]; then
	command -v debootstrap >/dev/null || apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
	mkdir -p "$ROOT"
	touch "$ROOT/.gpugate-debootstrap-started"
	t0=$(date +%s)
	# minbase: essential packages and apt only; the keyring of bookworm's
	# debian-archive-keyring already holds trixie's keys.
	debootstrap --variant=minbase \
		--keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
		"$SUITE" "$ROOT" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 || {
		log "debootstrap failed; last lines of $ROOT.debootstrap.log:"; tail -n 5 "$ROOT.debootstrap.log" >&2; exit 1
	}
	touch "$ROOT/.gpugate-debootstrap-ok"
	log "debootstrap $SUITE: $(($(date +%s) - t0)) s"
fi

# Inside the chroot, in a private mount namespace with /proc and /dev (apt
# logs through a pty), so that maintainer scripts work and no mount
# outlives apt.
t0=$(date +%s)
unshare --mount --propagation private -- /bin/sh -c '
	set -e
	mount --rbind /dev "$1/dev"
	mount -t proc proc "$1/proc"
	exec chroot "$1" /bin/sh -c "
		set -e
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends python3-torch python3-numpy >/dev/null
		apt-get clean"
' setup-torch2 "$ROOT" || { log "installing python3-torch in $ROOT failed"; exit 1; }
touch "$ROOT/.gpugate-torch2-ok"
log "python3-torch in the chroot: $(($(date +%s) - t0)) s"
"$BIN" -c 'import torch; print("torch", torch.__version__, "kineto", torch.autograd.kineto_available())' >&2
log "wrapper: $BIN"
