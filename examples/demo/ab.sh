#!/usr/bin/env bash
# ab.sh: the demo's A/B mode, end to end, with ab's defaults. It makes a
# throwaway git repository with the demo's training loop (train.py,
# perf.yaml) and two more commits, and runs
#
#   gpugate ab -config perf.yaml -base REF -head REF
#
# three times. ab runs base and head on this machine in pairs whose order
# alternates (B1 H1 H2 B2 B3 H3 ...), judges each pair's log-ratio
# head/base with a paired interval, and samples until decided: from the 3rd
# pair it looks after every pair (each look at 2%/8) and stops when the
# verdict is settled, at 10 pairs, or when the next pair would pass the
# 10-minute budget. No baseline store is needed.
#
#   1. a commit that logs the loss with loss.item() every step (a host sync
#      per step): regression on sync_calls, exit 1, after 3 pairs;
#   2. a commit whose steps take about 50% longer (a sleep of half the
#      step's own time): regression on step_time (the demo's allowance is
#      40%), exit 1, usually after 3 or 4 pairs;
#   3. the same commit on both sides: pass, exit 0, once every gate metric's
#      interval fits in its allowance (step time ±40% here; peak memory
#      ±5% or 64 MiB). Where the pairs' spread keeps it open until the
#      budget, it says inconclusive (exit 3) and how many more pairs and
#      minutes would settle it.
#
# What happened when it was run twice on 2026-12-03, on the 2-core VM with
# nothing else running (figures in that day's session note):
#   12:00 UTC: 1. exit 1 after 3 pairs (sync_calls); 2. exit 1 after 3
#   pairs (step time, pairs of about 6 s); 3. exit 0 after 10 pairs, the
#   most planned: the step-time interval [-21.9%, +36.8%] fitted the ±40%
#   allowance only at the last look, the demo's 2 loader workers on 2
#   cores spreading the runs' mean step times by 77% (CV 23%). 1 min 37 s.
#   13:11 UTC: 1. exit 1 after 3 pairs; 2. exit 1 after 5 pairs (step time
#   +60.3% [+6.3, +141.6]); 3. exit 0 after 5 pairs ([-33.2%, +26.5%]).
#   1 min 25 s.
# So the same-commit pass is within the default budget, once at its edge
# on this machine; on a GPU runner with a steadier step it settles sooner. Earlier, under other
# jobs' load (steps of one run from 16 to 175 ms), the testscript's
# same-commit case (cmd/gpugate/testdata/script/ab_demo_hostsync.txtar)
# passed after 9 pairs, 4.5 minutes.
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
git tag base

# The second commit: one line, a per-step host sync.
sed -i 's/^        opt.step()$/        opt.step()\n        loss.item()  # log the loss every step: a host sync per step/' train.py
git commit -q -am "log the loss every step"
git show --stat --format='== second commit: %s' HEAD | head -3
git diff HEAD~1 -U1 | sed -n '/^@@/,$p'
git tag sync

# The third commit, on the first: steps about 50% longer.
git checkout -q base
sed -i 's/^        opt.step()$/        opt.step()\n        time.sleep(0.5 * (time.perf_counter() - last))  # about 50% longer steps/' train.py
git commit -q -am "sleep half a step"
git tag slow

run() {
	local want=$1
	shift
	echo
	echo "== gpugate ab $* (exit $want expected)"
	status=0
	"$gpugate" ab -config perf.yaml "$@" || status=$?
	echo "exit status $status (expected $want)"
}
run 1 -base base -head sync
run 1 -base base -head slow
run 0 -base base -head base
