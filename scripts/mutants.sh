#!/usr/bin/env bash
# mutants.sh: issue 19's and 27's mutation test. Each mutant changes one
# line of the verdict rule, as issue 19 lists them (adapted to the t-interval
# code of stats.Compare), or of the stopping rules of repeat: auto and ab
# (issue 27), runs the package tests that guard it, and must make them
# fail. A mutant that survives is a test that cannot fail: exit 1.
#
#   bash scripts/mutants.sh          # a few minutes; not part of scripts/test.sh
#
# The file is restored after each mutant (and on exit), from a copy.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

backup=$(mktemp -d)
cur=
restore() { if [ -n "$cur" ]; then cp "$backup/file" "$cur"; fi; cur=; }
trap 'restore; rm -rf "$backup"' EXIT
survived=0

# mutant FILE PACKAGE TESTS FROM TO WHAT: replace FROM (which may span
# lines: $'…\n…') by TO in FILE (once),
# run TESTS of PACKAGE, and require a failure.
mutant() {
	local file=$1 pkg=$2 tests=$3 from=$4 to=$5 what=$6
	if ! python3 -c 'import sys; sys.exit(sys.argv[2] not in open(sys.argv[1]).read())' "$file" "$from"; then
		echo "MISSING  $what: '$from' not in $file (the code moved: update the mutant)"
		survived=1
		return
	fi
	cp "$file" "$backup/file"
	cur=$file
	python3 - "$file" "$from" "$to" <<'PY'
import sys
p, a, b = sys.argv[1:4]
s = open(p).read()
open(p, "w").write(s.replace(a, b, 1))
PY
	if ! go vet "$pkg" >/dev/null 2>&1; then
		echo "INVALID  $what: the mutant does not compile"
		survived=1
	elif go test "$pkg" -short -count=1 -run "^(${tests})\$" >"$backup/log" 2>&1; then
		echo "SURVIVED $what ($file; $pkg -run $tests)"
		survived=1
	else
		echo "killed   $what ($pkg -run $tests: $(grep -m1 -E '_test.go:[0-9]+:' "$backup/log" | sed 's/^ *//' | cut -c1-110))"
	fi
	restore
}

mutant stats/stats.go ./stats TestDecide 'case bounded && lo > 0 && w > limit:' 'case bounded && lo >= 0 && w > limit:' \
	'lo > 0 -> lo >= 0 in the regression test'
mutant gate/gate.go ./gate TestCombineRanks 'return s / float64(len(values))' 'return s' \
	'ratio metrics combined across ranks by sum instead of mean'
mutant stats/stats.go ./stats TestCompare 'j.sign = -1' 'j.sign = 1' \
	'the sign for higher-is-better metrics removed'
mutant stats/stats.go ./stats TestInterval 'paired := th.Paired && len(bm) == len(cm)' 'paired := th.Paired || len(bm) == len(cm)' \
	'the unit (pairs or runs) chosen with || instead of &&'
mutant stats/stats.go ./stats TestInterval 't := TQuantile(1-alpha/2, float64(df))' 't := TQuantile(1-alpha/4, float64(df))' \
	'the quantile at 1-alpha/4 (was: normal approximation at z(alpha/4))'
mutant stats/stats.go ./stats TestInterval 'df := k + m - 2' 'df := k + m - 1' \
	'degrees of freedom off by one (was: order-statistic bisection off by one)'
mutant stats/stats.go ./stats TestTQuantile 'if dist.CDF(mid) < p {' 'if dist.CDF(mid) > p {' \
	"the t quantile's bisection keeps the wrong half"

# The stopping rules (issue 27), tested through sampleRuns and ab's loop
# with a simulated job (pipeline/sequential_test.go).
auto='TestAutoStops|TestAutoAdvice|TestSequentialRuns'
mutant pipeline/auto.go ./pipeline "$auto" 'if n >= w.MaxRuns {' 'if n > w.MaxRuns {' \
	'repeat: auto makes one run more than max_runs'
mutant pipeline/auto.go ./pipeline "$auto" 'if rep.Verdict != stats.Inconclusive {' 'if rep.Verdict != stats.Inconclusive && rep.Verdict != stats.Pass {' \
	'repeat: auto samples on after a pass'
mutant pipeline/auto.go ./pipeline "$auto" 'if base := cannotSettle(rep); base != "" {' 'if base := cannotSettle(rep); base == "-" {' \
	'the early stop for "needs baseline runs" removed'
mutant pipeline/auto.go ./pipeline "$auto" 'stats.Thresholds{Alpha: lookAlpha, AutoAlpha: AutoAlpha, AutoMaxRuns: w.MaxRuns}' 'stats.Thresholds{Alpha: lookAlpha}' \
	"advice computed at the looks' fixed α instead of the level each look would have"
mutant pipeline/auto.go ./pipeline "$auto" 'lookAlpha := AutoAlpha / float64(w.MaxRuns)' 'lookAlpha := AutoAlpha' \
	'every look of repeat: auto at the whole AutoAlpha (no Bonferroni)'
mutant pipeline/ab.go ./pipeline TestSequentialAB 'if rep.Verdict != stats.Inconclusive {' 'if rep.Verdict == stats.Regression {' \
	'ab samples on after a pass'
mutant pipeline/ab.go ./pipeline TestSequentialAB 'if plan.Fixed || i < plan.MinPairs {' 'if plan.Fixed || i <= plan.MinPairs {' \
	'ab looks first one pair late'
mutant pipeline/ab.go ./pipeline TestSequentialAB 'func (p ABPlan) LookAlpha() float64 { return p.Alpha / float64(p.Looks()) }' 'func (p ABPlan) LookAlpha() float64 { return p.Alpha }' \
	'every look of ab at the whole DefaultABAlpha (no Bonferroni)'

# Timing runs (issue 27, docs/verdicts.md §5d).
mutant gate/select.go ./gate 'TestCompareTimed$' 'useTiming := tim != nil && len(tim.Base) > 0 && len(tim.Cand) > 0' 'useTiming := false && tim != nil' \
	'step time judged on the profiled runs although both sides have timing runs'
mutant gate/timing.go ./gate TestTimedClocksDiffer $'case bc != cc:\n' $'case bc != cc && false:\n' \
	'sides timed by different clocks compared'
mutant gate/conditions.go ./gate TestTimingConditions 'if r.Conditions == nil || r.Timing == nil || len(r.Timing.Metrics) == 0 {' 'if true {' \
	"the timing runs' run conditions ignored"
mutant pipeline/auto.go ./pipeline TestAutoTimingRuns 'if !p.timingOn(ex) || needsProfiles(rep) {' 'if true {' \
	'repeat: auto profiles every run although only step time is undecided'
mutant pipeline/timing.go ./pipeline TestTimingOfStoresOnce 'return ex.Timing[from:to]' 'return ex.Timing[0:to]' \
	'a timing run stored with every later profiled run'
# Issue 37: the 12 mutants an independent review found surviving, and the
# early stop projected from the estimate alone (what issue 37 replaced).
mutant gate/rejudge.go ./gate TestRejudge 'th.Paired = false' 'th.Paired = true' \
	'Rejudge pairing unrelated runs'
mutant gate/timing.go ./gate TestTimedClocksMixed $'slices.Sort(cs)\n\treturn strings.Join(cs, ", ")' 'return strings.Join(cs, ", ")' \
	'clocks compared unsorted'
mutant gate/host.go ./gate TestCompareDisturbed 'm.Name == "gpu_util" || m.Name == "short_kernels"' 'm.Name == "short_kernels"' \
	'gpu_util kept from disturbed runs'
mutant gate/host.go ./gate TestReapplyHostTimed $'s := in.metric(m)\n' $'s := selectIn{nb: in.nb, nc: in.nc, host: in.host, paired: in.paired}.metric(m)\n' \
	'ReapplyHost voiding a timed step_time'
mutant stats/stats.go ./stats 'TestDecide|TestCompare' 'case bounded && hi < 0 && -w > limit:' 'case bounded && hi < 0:' \
	'an improvement declared without the allowance'
mutant stats/stats.go ./stats TestAutoAdviceBelowMaxRuns 'return j.autoA / float64(max(n, j.autoMax))' 'return j.autoA / float64(n)' \
	"alphaAt's divisor n instead of max(n, max_runs)"
mutant pipeline/auto.go ./pipeline TestAutoBudgetCountsNextRun 'elapsed+mean > budget' 'elapsed > budget' \
	"repeat: auto's budget check ignoring the next run"
mutant pipeline/ab.go ./pipeline TestABBudgetCountsNextPair 'time.Since(start)+mean > plan.Budget' 'time.Since(start) > plan.Budget' \
	"ab's budget check ignoring the next pair"
mutant pipeline/timing.go ./pipeline TestAutoTimingFallsBack 'return p.timing() && ex.TimingWhy == ""' 'return p.timing()' \
	'timingOn ignoring TimingWhy'
mutant pipeline/ab.go ./pipeline TestABTimingPairs '(i > 0 && (plan.Fixed || i <= plan.MinPairs || needsProfiles(rep)))' '(i > 1 && (plan.Fixed || i <= plan.MinPairs || needsProfiles(rep)))' \
	'ab making one profiled pair too few'
mutant pipeline/ab.go ./pipeline TestABTimingPairs $'if i == 0 {\n\t\t\t\t\tcontinue\n\t\t\t\t}\n\t\t\t\tif s.Name == "base" {\n\t\t\t\t\tbaseTiming' $'if s.Name == "base" {\n\t\t\t\t\tbaseTiming' \
	'ab keeping the warm-up timing pair'
mutant action/judge.go ./action TestJudgeDisturbedRuns $'rep.ReapplyHost()\n\trederive(rep)' 'rederive(rep)' \
	"the trusted phase's ReapplyHost removed"
mutant pipeline/auto.go ./pipeline TestAutoPowerManyRuns 'm.NeedBaseRuns > 0 && m.CannotSettle' 'm.NeedBaseRuns > 0' \
	'repeat: auto stopping early on the estimate alone ("needs baseline runs" at the estimate so far)'
exit $survived
