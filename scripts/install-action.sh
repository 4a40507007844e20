#!/usr/bin/env bash
# install-action.sh puts gpugate on the runner for action.yml: built from the
# action's own source when Go is installed, else the release binary for the
# runner's OS and architecture, checked against the sha256 pinned in
# action/checksums.txt. It prints bin=PATH to GITHUB_OUTPUT.
set -euo pipefail
out=${RUNNER_TEMP:-/tmp}/gpugate-bin
mkdir -p "$out"
bin=$out/gpugate
go=$(command -v go || true)
[ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
if [ -n "$go" ]; then
	(cd "$GITHUB_ACTION_PATH" && CGO_ENABLED=0 "$go" build -o "$bin" ./cmd/gpugate)
	echo "gpugate: built from the action's source with $("$go" version)"
else
	os=$(echo "${GPUGATE_RUNNER_OS:-Linux}" | tr '[:upper:]' '[:lower:]')
	case "${GPUGATE_RUNNER_ARCH:-X64}" in X64) arch=amd64 ;; ARM64) arch=arm64 ;; *) arch=unsupported ;; esac
	asset="gpugate_${os}_${arch}.tar.gz"
	want=$(awk -v v="${GPUGATE_VERSION:-}" -v a="$asset" '$2 == v && $3 == a {print $1}' "$GITHUB_ACTION_PATH/action/checksums.txt" 2>/dev/null || true)
	if [ -z "${GPUGATE_VERSION:-}" ] || [ -z "$want" ]; then
		echo "::error title=gpugate::Go is not installed on this runner and no pinned release matches version '${GPUGATE_VERSION:-}' and $asset (action/checksums.txt). Install Go (actions/setup-go) or set the version input." >&2
		exit 1
	fi
	repo=${GITHUB_ACTION_REPOSITORY:-gpugate/gpugate}
	curl -fsSL -o "$out/$asset" "https://github.com/$repo/releases/download/$GPUGATE_VERSION/$asset"
	got=$(sha256sum "$out/$asset" | cut -d' ' -f1)
	if [ "$got" != "$want" ]; then
		echo "::error title=gpugate::checksum mismatch for $asset: got $got, pinned $want" >&2
		exit 1
	fi
	tar -xzf "$out/$asset" -C "$out" gpugate
fi
echo "bin=$bin" >> "$GITHUB_OUTPUT"
