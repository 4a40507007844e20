#!/usr/bin/env bash
# ab.sh: the demo's A/B mode, end to end. It makes a throwaway git
# repository with the demo's training loop (train.py, perf.yaml), adds a
# second commit that logs the loss with loss.item() on every step — a
# device-to-host sync per step, the classic slowdown — and runs
#
#   gpugate ab -config perf.yaml -base HEAD~1 -head HEAD
#
# which runs the two commits interleaved (base, head, base, head, …) on this
# machine and fails with host-sync. No baseline store is needed. Then the
# same commit on both sides passes.
#
#   bash examples/demo/ab.sh            # from the gpugate checkout
#   GPUGATE=/path/to/gpugate bash examples/demo/ab.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
gpugate=${GPUGATE:-}
if [ -z "$gpugate" ]; then
	export PATH=$PATH:/usr/local/go/bin
	(cd "$here/../.." && go build -o bin/gpugate ./cmd/gpugate)
	gpugate=$here/../../bin/gpugate
fi
repo=$(mktemp -d "${TMPDIR:-/tmp}/gpugate-ab-demo.XXXXXX")
trap 'rm -rf "$repo"' EXIT
cp "$here/train.py" "$here/perf.yaml" "$repo/"
cd "$repo"
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.com GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.com
git init -q -b main
git add train.py perf.yaml
git commit -q -m "demo training loop"

# The second commit: one line, a per-step host sync.
sed -i 's/^        opt.step()$/        opt.step()\n        loss.item()  # log the loss every step: a host sync per step/' train.py
git commit -q -am "log the loss every step"
git show --stat --format='== second commit: %s' HEAD | head -3
git diff HEAD~1 -U1 | sed -n '/^@@/,$p'

echo
echo "== gpugate ab: the second commit against the first (exit 1 expected)"
status=0
"$gpugate" ab -config perf.yaml -base HEAD~1 -head HEAD -pairs 3 || status=$?
echo "exit status $status"

echo
echo "== gpugate ab: the same commit on both sides (exit 0 expected)"
"$gpugate" ab -config perf.yaml -base HEAD -head HEAD -pairs 3
