#!/usr/bin/env bash
# release.sh TAG [OUTDIR]: build gpugate's release archives for TAG (vX.Y.Z):
# static (CGO_ENABLED=0) binaries for linux/amd64 and linux/arm64 (override
# with PLATFORMS="linux/amd64"), each in gpugate_OS_ARCH.tar.gz with LICENSE
# and README.md, and checksums.txt in sha256sum's format. It prints the
# lines to pin in action/checksums.txt ("SHA256  TAG  ASSET").
#   PIN=1    replaces TAG's pins in action/checksums.txt with these, and a
#            line "# TAG built with goX.Y.Z" naming the Go that built them
#            (the release workflow builds with that Go);
#   CHECK=1  fails unless action/checksums.txt pins exactly these archives
#            for TAG (.github/workflows/release.yml runs it before it
#            publishes anything).
#
# The build is reproducible: -trimpath, no VCS stamp (-buildvcs=false; the
# version comes from the TAG argument through -ldflags -X main.Version),
# archives with fixed owners, order and times, gzip without a name or time.
# So the archives depend on the source and the Go version, not on the
# commit, and the pin commit (which changes only action/checksums.txt, in
# neither archive) does not change them. The release steps:
#   PIN=1 scripts/release.sh v0.2.0
#   git commit -m "Release v0.2.0" action/checksums.txt CHANGELOG.md && git tag v0.2.0
#   git push origin v0.2.0   # release.yml: CHECK=1, publish, move v0
set -euo pipefail
tag=${1:?usage: scripts/release.sh vX.Y.Z [OUTDIR]}
[[ "$tag" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$ ]] || { echo "release.sh: $tag is not a semver tag such as v0.2.0" >&2; exit 2; }
cd "$(dirname "$0")/.."
outdir=$(mkdir -p "${2:-dist}" && cd "${2:-dist}" && pwd)
go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: >"$outdir/checksums.txt"
for p in ${PLATFORMS:-linux/amd64 linux/arm64}; do
	os=${p%/*} arch=${p#*/}
	dir=$work/$os-$arch
	mkdir -p "$dir"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$go" build -trimpath -buildvcs=false -ldflags "-s -w -X main.Version=$tag" -o "$dir/gpugate" ./cmd/gpugate
	cp LICENSE README.md "$dir/"
	touch -d @0 "$dir"/*
	asset=gpugate_${os}_${arch}.tar.gz
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$dir" -cf - gpugate LICENSE README.md | gzip -n -9 >"$outdir/$asset"
	(cd "$outdir" && sha256sum "$asset" >>checksums.txt)
done
echo "release.sh: $tag archives and checksums.txt in $outdir" >&2
pins=$(awk -v t="$tag" '{print $1 "  " t "  " $2}' "$outdir/checksums.txt")
echo "$pins"
if [ "${PIN:-0}" = 1 ]; then
	goversion=$("$go" env GOVERSION)
	grep -v -e "  $tag  " -e "^# $tag built with " action/checksums.txt >"$work/pins" || true
	echo "# $tag built with $goversion" >>"$work/pins"
	echo "$pins" >>"$work/pins"
	cp "$work/pins" action/checksums.txt
	echo "release.sh: pinned in action/checksums.txt (built with $goversion)" >&2
fi
if [ "${CHECK:-0}" = 1 ]; then
	have=$(awk -v t="$tag" '$1 !~ /^#/ && $2 == t' action/checksums.txt | sort)
	if [ "$have" != "$(echo "$pins" | sort)" ]; then
		echo "release.sh: the archives built for $tag are not the ones action/checksums.txt pins:" >&2
		echo "built:" >&2
		echo "$pins" >&2
		echo "pinned:" >&2
		echo "${have:-(none)}" >&2
		exit 1
	fi
	echo "release.sh: the archives match the pins in action/checksums.txt" >&2
fi
