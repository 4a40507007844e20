#!/usr/bin/env bash
# install-action.sh puts gpugate on the runner for action.yml and on PATH for
# the job's later steps, whatever ref the workflow uses the action at, and
# says which way it took and why:
#
#   - the version input (such as v0.3.0), or the action used at a release
#     tag (uses: gpugate/gpugate@v0.3.0): the release archive for the
#     runner's OS and architecture, downloaded from this action's repository
#     on $GITHUB_SERVER_URL (github.com or a GitHub Enterprise Server) and
#     checked against the sha256 pinned in action/checksums.txt, which
#     travels with the action at the ref the workflow pinned: a release asset
#     replaced after the fact does not match;
#   - a moving major tag (uses: gpugate/gpugate@v0, or @v0.3): the newest
#     release pinned in that commit's action/checksums.txt, installed as
#     above;
#   - anything else (a commit SHA, a branch, uses: ./), a release tag whose
#     commit pins no archive, a runner with no release archive, or
#     build-from-source: true: built from the action's own source, with the
#     go on PATH when it is at least go.mod's go version, else with the Go
#     that actions/setup-go (pinned by commit in action.yml) installs.
#
# action.yml runs it twice. GPUGATE_INSTALL_STEP=plan decides and writes
# how, version and go-version to GITHUB_OUTPUT, and need-go=true when a
# source build lacks a new enough go (action.yml then runs setup-go);
# GPUGATE_INSTALL_STEP=install (the default) decides again, the same way,
# and installs; it prints bin=PATH to GITHUB_OUTPUT.
set -euo pipefail
err() {
	# One annotation line; the message is ours, not the input's.
	echo "::error title=gpugate install::$*"
	exit 1
}
say() { echo "gpugate: install: $*"; }
semver='^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$'
action_path=${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set: install-action.sh runs inside action.yml}
pins=$action_path/action/checksums.txt
step=${GPUGATE_INSTALL_STEP:-install}
out=${RUNNER_TEMP:-/tmp}/gpugate-bin
bin=$out/gpugate

os=$(echo "${GPUGATE_RUNNER_OS:-Linux}" | tr '[:upper:]' '[:lower:]')
case "${GPUGATE_RUNNER_ARCH:-X64}" in
X64) arch=amd64 ;;
ARM64) arch=arm64 ;;
*) arch=unknown ;;
esac
asset="gpugate_${os}_${arch}.tar.gz"
released=false
[ "$os" = linux ] && [ "$arch" != unknown ] && released=true

# pinned VERSION: the pinned sha256 of VERSION's archive for this runner.
pinned() { awk -v v="$1" -v a="$asset" '$2 == v && $3 == a {print $1}' "$pins" 2>/dev/null || true; }

# newest PREFIX: the newest release (no pre-release) whose tag is PREFIX or
# starts with PREFIX., pinned for this runner's archive.
newest() {
	awk -v a="$asset" '$1 !~ /^#/ && $3 == a {print $2}' "$pins" 2>/dev/null |
		grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' | grep -E "^$(echo "$1" | sed 's/\./\\./g')\." | sort -V | tail -n 1 || true
}

# Decide: how (release or source), version, why.
how="" version="" why=""
ref=${GPUGATE_ACTION_REF:-}
if [ "${GPUGATE_BUILD_FROM_SOURCE:-false}" = true ]; then
	how=source why="the build-from-source input is true"
elif [ -n "${GPUGATE_VERSION:-}" ]; then
	version=$GPUGATE_VERSION
	[[ "$version" =~ $semver ]] || err "version input is not a release tag such as v0.3.0"
	$released || err "no gpugate release for $os/${GPUGATE_RUNNER_ARCH:-?}: releases are for Linux amd64 and arm64; leave the version input empty (or set build-from-source: true) to build from source"
	[ -n "$(pinned "$version")" ] || err "$version $asset is not pinned in this action's action/checksums.txt: use the action at that tag (uses: gpugate/gpugate@$version), or leave the version input empty to build from source"
	how=release why="the version input is $version"
elif [ -z "$ref" ]; then
	how=source why="the action is used from a path (uses: ./ or a checkout), which names no release"
elif [[ "$ref" =~ $semver ]]; then
	if ! $released; then
		how=source why="the action is used at release $ref, which has no archive for $os/${GPUGATE_RUNNER_ARCH:-?}"
	elif [ -n "$(pinned "$ref")" ]; then
		how=release version=$ref why="the action is used at release tag $ref"
	else
		how=source why="the action is used at $ref, but its action/checksums.txt pins no $asset for it"
	fi
elif [[ "$ref" =~ ^v[0-9]+(\.[0-9]+)?$ ]]; then
	if $released; then
		version=$(newest "$ref")
	fi
	if [ -n "$version" ]; then
		how=release why="the action is used at the moving tag $ref, whose action/checksums.txt pins $version as its newest release"
	else
		how=source why="the action is used at $ref, whose action/checksums.txt pins no $ref.x release for $asset"
	fi
elif [[ "$ref" =~ ^[0-9a-f]{40}$ ]]; then
	how=source why="the action is used at commit $ref, which names no release"
else
	how=source why="the action is used at ref $ref (a branch?), which names no release"
fi

# A source build needs go.mod's go version or newer.
need_go=false go_want="" go_have=""
if [ "$how" = source ]; then
	go_want=$(awk '$1 == "go" {print $2; exit}' "$action_path/go.mod")
	[ -n "$go_want" ] || err "no go line in the action's go.mod"
	if command -v go >/dev/null; then
		go_have=$(GOTOOLCHAIN=local go env GOVERSION 2>/dev/null | sed -n 's/^go\([0-9][0-9.]*\).*/\1/p')
	fi
	if [ -z "$go_have" ] || [ "$(printf '%s\n%s\n' "$go_want" "$go_have" | sort -V | head -n 1)" != "$go_want" ]; then
		need_go=true
	fi
fi

if [ "$step" = plan ]; then
	case "$how" in
	release) say "release $version ($asset), checked against action/checksums.txt: $why" ;;
	source) say "build from the action's source: $why" ;;
	esac
	if [ "$how" = source ]; then
		if $need_go; then
			say "the go on PATH (${go_have:-none}) is older than go.mod's go $go_want: actions/setup-go installs go $go_want first"
		else
			say "with the go on PATH (go $go_have; go.mod asks for $go_want or newer)"
		fi
	fi
	{
		echo "how=$how"
		echo "version=$version"
		echo "go-version=$go_want"
		echo "need-go=$need_go"
	} >>"${GITHUB_OUTPUT:-/dev/null}"
	exit 0
fi

# A folder left read-only by an earlier install in this job (the action
# used twice) is made writable for the new binary, then read-only again.
[ -d "$out" ] && chmod u+w "$out" && rm -f "$bin"
mkdir -p "$out"
if [ "$how" = source ]; then
	$need_go && err "cannot build gpugate from source: the go on PATH (${go_have:-none}) is older than go.mod's go $go_want"
	# GOTOOLCHAIN=local: the go that was checked builds; never a download.
	(cd "$action_path" && CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -o "$bin" ./cmd/gpugate) ||
		err "go build of the action's source failed"
	echo "gpugate: built from the action's source with $(GOTOOLCHAIN=local go version) because $why"
else
	want=$(pinned "$version")
	repo=${GPUGATE_ACTION_REPOSITORY:-}
	[ -n "$repo" ] || repo=gpugate/gpugate
	[[ "$repo" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] || err "action repository is not owner/name"
	server=${GITHUB_SERVER_URL:-https://github.com}
	url="$server/$repo/releases/download/$version/$asset"
	curl -fsSL --retry 3 -o "$out/$asset" "$url" || err "download of $url failed"
	got=$(sha256sum "$out/$asset" | cut -d' ' -f1)
	[ "$got" = "$want" ] || err "checksum mismatch for $url: got $got, pinned $want; not installed"
	tar -xzf "$out/$asset" -C "$out" gpugate
	rm -f "$out/$asset"
	echo "gpugate: installed $version ($asset, sha256 $got) from $server/$repo because $why"
fi
# Read-only, and its digest stated as this step's output: every later
# step of action.yml checks the binary against it before running it
# (GPUGATE_BIN_SHA256). A step's outputs are fixed when it ends, before the
# job runs; the job runs as this user and could replace the file, so the
# mode only keeps honest mistakes out, and the digest is what is trusted.
chmod 0555 "$bin" "$out"
sum=$( (sha256sum "$bin" 2>/dev/null || shasum -a 256 "$bin") | cut -d' ' -f1)
[[ "$sum" =~ ^[0-9a-f]{64}$ ]] || err "no sha256 of the installed binary"
"$bin" version
echo "gpugate: installed $bin, sha256 $sum; later steps run it only while it still has this digest"
echo "bin=$bin" >>"${GITHUB_OUTPUT:-/dev/null}"
echo "sha256=$sum" >>"${GITHUB_OUTPUT:-/dev/null}"
echo "$out" >>"${GITHUB_PATH:-/dev/null}"
