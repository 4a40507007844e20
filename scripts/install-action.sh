#!/usr/bin/env bash
# install-action.sh puts gpugate on the runner for action.yml and on PATH for
# the job's later steps. By default it downloads the release archive for the
# runner's OS and architecture from this action's repository on
# $GITHUB_SERVER_URL (github.com or a GitHub Enterprise Server) and checks it
# against the sha256 pinned in action/checksums.txt, which travels with the
# action at the tag the workflow pinned: a release asset replaced after the
# fact does not match. The release is GPUGATE_VERSION, else the tag the
# action was used at (uses: gpugate/gpugate@v0.2.0). With
# GPUGATE_BUILD_FROM_SOURCE=true it builds from the action's own source with
# the Go on PATH instead. It prints bin=PATH to GITHUB_OUTPUT.
set -euo pipefail
err() {
	# One annotation line; the message is ours, not the input's.
	echo "::error title=gpugate install::$*"
	exit 1
}
out=${RUNNER_TEMP:-/tmp}/gpugate-bin
mkdir -p "$out"
bin=$out/gpugate
if [ "${GPUGATE_BUILD_FROM_SOURCE:-false}" = true ]; then
	command -v go >/dev/null || err "build-from-source is true but there is no go on PATH (use actions/setup-go with go-version 1.26)"
	(cd "$GITHUB_ACTION_PATH" && CGO_ENABLED=0 go build -trimpath -o "$bin" ./cmd/gpugate)
	echo "gpugate: built from the action's source with $(go version)"
else
	version=${GPUGATE_VERSION:-}
	if [ -z "$version" ]; then
		case "${GPUGATE_ACTION_REF:-}" in
		v[0-9]*.*.*) version=$GPUGATE_ACTION_REF ;;
		esac
	fi
	[ -n "$version" ] || err "no release to install: set the version input (such as v0.2.0), use the action at a release tag, or set build-from-source: true"
	[[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$ ]] || err "version input is not a release tag such as v0.2.0"
	os=$(echo "${GPUGATE_RUNNER_OS:-Linux}" | tr '[:upper:]' '[:lower:]')
	case "${GPUGATE_RUNNER_ARCH:-X64}" in
	X64) arch=amd64 ;;
	ARM64) arch=arm64 ;;
	*) err "no gpugate release for runner architecture ${GPUGATE_RUNNER_ARCH:-?}: releases are linux amd64 and arm64; set build-from-source: true" ;;
	esac
	[ "$os" = linux ] || err "no gpugate release for $os: releases are for Linux; set build-from-source: true"
	asset="gpugate_${os}_${arch}.tar.gz"
	want=$(awk -v v="$version" -v a="$asset" '$2 == v && $3 == a {print $1}' "$GITHUB_ACTION_PATH/action/checksums.txt")
	[ -n "$want" ] || err "$version $asset is not pinned in this action's action/checksums.txt: use the action at that tag (uses: gpugate/gpugate@$version), or set build-from-source: true"
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
	echo "gpugate: installed $version ($asset, sha256 $got) from $server/$repo"
fi
"$bin" version
echo "bin=$bin" >>"$GITHUB_OUTPUT"
echo "$out" >>"$GITHUB_PATH"
