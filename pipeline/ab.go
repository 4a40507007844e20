package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/stats"
)

// ABOptions configure an A/B comparison: the base and the head commit of
// one repository run interleaved on this machine, and are compared with
// each other. No stored baseline takes part.
type ABOptions struct {
	// Config is the head's perf.yaml: its workload definition runs on
	// both sides, so that both run the same command.
	Config   *config.Config
	Workload *config.Workload
	// Base is the git revision of the base side (a branch, tag or commit).
	Base string
	// Head is the git revision of the head side; "" runs the working tree
	// as it is, uncommitted changes included.
	Head string
	// Pairs, when set (or ab.pairs of perf.yaml), is a fixed number of
	// base/head pairs, judged once at the end. Unset, ab samples until
	// decided: it adds pairs until the paired interval settles the verdict,
	// MaxPairs pairs are measured or Budget is spent (ABPlan).
	Pairs int
	// MaxPairs bounds the pairs of sequential sampling (default: ab.max_pairs
	// of perf.yaml, else DefaultMaxPairs).
	MaxPairs int
	// Budget bounds its wall time (default: ab.budget, else DefaultBudget):
	// no pair is started that the mean pair so far says would end past it.
	Budget time.Duration
	// Warmup runs one more pair first and discards it.
	Warmup bool
	// Out is the artifacts folder; default .gpugate/runs/WORKLOAD/ab-TIME.
	Out  string
	Nsys string
	// NCU is the ncu binary for perf.yaml's deep_dive ("" finds it).
	NCU string
	// Stdout and Log as in Options.
	Stdout, Log io.Writer
}

// Side is one side of an A/B comparison.
type Side struct {
	Name   string // "base" or "head"
	Ref    string // what was asked for
	Commit string // what it resolved to
	Dir    string // the checkout the side ran in
}

func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := gitCommand(ctx, dir, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, msg)
	}
	return strings.TrimSpace(string(out)), nil
}

// resolve turns a revision into a commit; a revision that starts with '-'
// is never passed to git as an option, and one that names no single
// commit is refused before use: rev-parse --verify resolves '^HEAD' (a
// range's excluded end) to '^SHA', which git worktree add then refuses.
func resolve(ctx context.Context, dir, ref string) (string, error) {
	if ref == "" || strings.HasPrefix(ref, "-") || strings.HasPrefix(ref, "^") {
		return "", fmt.Errorf("revision %q: not a commit, branch or tag", ref)
	}
	out, err := gitOut(ctx, dir, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil {
		return "", err
	}
	if !isObjectID(out) {
		return "", fmt.Errorf("revision %q: not a commit, branch or tag (git resolves it to %q)", ref, out)
	}
	return out, nil
}

// isObjectID reports whether s is one full git object id: 40 (SHA-1) or
// 64 (SHA-256) lowercase hex digits.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// AB runs base and head interleaved in alternating order — BH HB BH …,
// one warm-up pair first when asked — on this machine in the same minutes,
// and compares them pair by pair: the interval is over the per-pair
// log-ratios head/base (stats.Thresholds.Paired). Unless a fixed number of
// pairs is asked for, it adds pairs until the verdict is decided or the
// plan's pairs or budget are spent (ABPlan). The base side (and a head
// given as a revision) runs in a git worktree that is removed afterwards.
func AB(ctx context.Context, o ABOptions) (oc *Outcome, err error) {
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	c, w := o.Config, o.Workload
	if w.Profiler == runner.None {
		return nil, fmt.Errorf("workload %s: ab compares traces; profiler none has none", w.Name)
	}
	cfgDir, err := filepath.Abs(filepath.Dir(c.File))
	if err != nil {
		return nil, err
	}
	root, err := gitOut(ctx, cfgDir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("ab: %s is not in a git repository: %v", c.File, err)
	}
	rel, err := filepath.Rel(root, cfgDir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("ab: %s is outside the repository %s", c.File, root)
	}
	plan := NewABPlan(o.Pairs, o.MaxPairs, o.Budget, c)
	if o.Out == "" {
		if o.Out, err = runner.NewRunDir(filepath.Join(".gpugate", "runs"), w.Name, time.Now()); err != nil {
			return nil, err
		}
	}
	if o.Out, err = filepath.Abs(o.Out); err != nil {
		return nil, err
	}

	base := Side{Name: "base", Ref: o.Base}
	head := Side{Name: "head", Ref: o.Head}
	if base.Commit, err = resolve(ctx, root, o.Base); err != nil {
		return nil, fmt.Errorf("ab -base: %v", err)
	}
	wts, err := newCheckouts(ctx, root, o.Log)
	if err != nil {
		return nil, err
	}
	defer wts.close()
	if err := wts.add(ctx, &base); err != nil {
		return nil, err
	}
	if o.Head != "" {
		if head.Commit, err = resolve(ctx, root, o.Head); err != nil {
			return nil, fmt.Errorf("ab -head: %v", err)
		}
		if err := wts.add(ctx, &head); err != nil {
			return nil, err
		}
	} else {
		head.Ref, head.Dir = "working tree", root
		head.Commit, _ = gitOut(ctx, root, "rev-parse", "HEAD")
		if st, _ := gitOut(ctx, root, "status", "--porcelain", "--untracked-files=no"); st != "" {
			head.Ref = "working tree (uncommitted changes)"
		}
	}
	fmt.Fprintf(o.Log, "gpugate: ab %s: base %s (%s) vs head %s (%s), %s%s, interleaved on this machine in alternating order (BH HB BH ...)\n", w.Name,
		o.Base, Short(base.Commit), head.Ref, Short(head.Commit), plan, map[bool]string{true: " after a warm-up pair", false: ""}[o.Warmup])

	plans := map[string]*Plan{}
	for _, s := range []*Side{&base, &head} {
		dir := filepath.Join(s.Dir, rel)
		setup := c.AB.Setup.Base
		if s.Name == "head" {
			setup = c.AB.Setup.Head
		}
		if len(setup.Args()) > 0 {
			if err := runSetup(ctx, s.Name, dir, setup, w, o.Out, o.Log); err != nil {
				return nil, err
			}
		}
		p, err := Prepare(ctx, Options{Config: c, Workload: w, Dir: dir, Nsys: o.Nsys, Out: o.Out, Stdout: o.Stdout, Log: o.Log})
		if err != nil {
			return nil, err
		}
		p.name = w.Name + " " + s.Name
		plans[s.Name] = p
	}
	if plans["base"].FP.Hash() != plans["head"].FP.Hash() {
		return nil, fmt.Errorf("ab: base and head see different machines (%s); both sides must run on one", strings.Join(plans["base"].FP.Diff(plans["head"].FP), "; "))
	}

	return o.sample(ctx, plan, plans, base, head)
}

// sample is ab's loop, once both sides are ready: it runs the pairs of
// plan, looks after each from plan.MinPairs on, and stops as plan says.
func (o ABOptions) sample(ctx context.Context, plan ABPlan, plans map[string]*Plan, base, head Side) (*Outcome, error) {
	c, w := o.Config, o.Workload
	pairs := plan.MaxPairs
	allow, err := Allowances(c)
	if err != nil {
		return nil, err
	}
	var baseRuns, headRuns []gate.Run
	var baseConds, headConds []*runcond.Conditions
	var order []string
	var iso Execution // the jobs' isolation, for the report
	var rep *gate.Report
	// Timing runs (timing.go): each pair is a timing run of each side,
	// and also a profiled run of each while the profiled runs' metrics
	// need them (the first MinPairs pairs, then while one of them is
	// undecided; every pair of a fixed plan).
	timing := &Execution{Timed: plans["base"].timing()}
	var baseTiming, headTiming []gate.TimingRun
	timingOn := func() bool { return timing.Timed && timing.TimingWhy == "" }
	pairsMade := func() int {
		if timingOn() {
			return len(baseTiming)
		}
		return len(baseRuns)
	}
	judge := func() *gate.Report {
		var t *gate.TimingRuns
		if timing.Timed {
			t = &gate.TimingRuns{Base: baseTiming, Cand: headTiming, Margins: HostMargins(c), Why: timing.TimingWhy}
		}
		r := gate.Compare(baseRuns, headRuns, gate.Options{Allowances: allow, Gate: c.Gate, MinAbs: MinAbs(c),
			Thresholds: stats.Thresholds{Alpha: plan.LookAlpha(), Paired: true}, Disturbed: disturbed(c, baseConds, headConds), Timing: t})
		applyConditions(r, baseConds, headConds)
		gate.ApplyTimingConditions(r, baseTiming, headTiming, gate.DefaultConditionMargins, notRecordedWhy)
		return r
	}
	first := 1
	if o.Warmup {
		first = 0
	}
	start := time.Now()
	var spent Tally            // every run, the warm-up pair's too: the cost
	var measured time.Duration // wall time of the measured pairs
	stopped := ""
	for i := first; i <= pairs; i++ {
		if n := pairsMade(); n > 0 && !plan.Fixed && plan.Budget > 0 {
			if mean := measured / time.Duration(n); time.Since(start)+mean > plan.Budget {
				stopped = fmt.Sprintf("budget spent: %d pair(s) in %s, and another (about %s) would pass the %s budget", n, time.Since(start).Round(time.Second), mean.Round(time.Second), plan.Budget)
				break
			}
		}
		pairStart := time.Now()
		if timingOn() {
			for _, s := range pairOrder(i, &base, &head) {
				tag := strings.ToUpper(s.Name[:1]) + fmt.Sprint(i)
				if i == 0 {
					tag += "*"
				}
				runStart := time.Now()
				once, err := plans[s.Name].RunTiming(ctx, filepath.Join(o.Out, fmt.Sprintf("%s%d-timing", s.Name, i)))
				if err != nil {
					return nil, fmt.Errorf("ab %s timing run %d: %w", s.Name, i, err)
				}
				spent.Add(time.Since(runStart))
				order = append(order, tag)
				iso.noteIsolation(once)
				if once.Timing == nil {
					timing.TimingWhy, baseTiming, headTiming = once.TimingWhy, nil, nil
					fmt.Fprintf(o.Log, "gpugate: warning: ab %s: %s; step time is judged on the profiled runs\n", s.Name, once.TimingWhy)
					break
				}
				fmt.Fprintf(o.Log, "gpugate: ab %s %s %s: timing run, %d steps, median %.2f ms (no profiler, timed by %s) in %.1fs\n", tag, s.Name, Short(s.Commit),
					len(once.Timing.StepMs), analysis.Summarize(once.Timing.StepMs).Median, escape.Terminal(once.Timing.Clock), once.Duration.Seconds())
				if i == 0 {
					continue
				}
				if s.Name == "base" {
					baseTiming = append(baseTiming, *once.Timing)
				} else {
					headTiming = append(headTiming, *once.Timing)
				}
			}
		}
		profile := !timingOn() || (i > 0 && (plan.Fixed || i <= plan.MinPairs || needsProfiles(rep)))
		for _, s := range pairOrder(i, &base, &head) {
			if !profile {
				break
			}
			tag := strings.ToUpper(s.Name[:1]) + fmt.Sprint(i)
			if timingOn() {
				tag += "p"
			}
			label := fmt.Sprintf("%s (pair %d, %s first)", tag, i, pairOrder(i, &base, &head)[0].Name)
			if i == 0 {
				tag, label = tag+"*", tag+" (warm-up, discarded)"
			}
			runStart := time.Now()
			once, err := plans[s.Name].RunOnce(ctx, filepath.Join(o.Out, fmt.Sprintf("%s%d", s.Name, i)))
			if err != nil {
				return nil, fmt.Errorf("ab %s run %d: %w", s.Name, i, err)
			}
			spent.Add(time.Since(runStart))
			order = append(order, tag)
			iso.noteIsolation(once)
			fmt.Fprintf(o.Log, "gpugate: ab %s %s %s: %d steps in %.1fs\n", label, s.Name, Short(s.Commit), len(once.Run[0].Steps), once.Duration.Seconds())
			if i == 0 {
				continue
			}
			if s.Name == "base" {
				baseRuns = append(baseRuns, once.Run)
				baseConds = append(baseConds, once.Conditions)
			} else {
				headRuns = append(headRuns, once.Run)
				headConds = append(headConds, once.Conditions)
			}
		}
		if i == 0 {
			continue
		}
		measured += time.Since(pairStart)
		if plan.Fixed || i < plan.MinPairs {
			continue
		}
		rep = judge()
		fmt.Fprintf(o.Log, "gpugate: ab look after %d pair(s) (α=%.3g): %s\n", pairsMade(), plan.LookAlpha(), rep.Verdict)
		if rep.Verdict != stats.Inconclusive {
			stopped = fmt.Sprintf("decided after %d pair(s): %s", i, rep.Verdict)
			break
		}
	}
	if rep == nil || plan.Fixed {
		rep = judge()
	}
	if stopped == "" {
		stopped = fmt.Sprintf("%d pair(s), the most planned", pairsMade())
		if plan.Fixed {
			stopped = fmt.Sprintf("%d pair(s), fixed (ab.pairs / -pairs)", pairsMade())
		}
	}
	smp := &gate.Sampling{Unit: stats.UnitPair, Pairs: pairsMade(), MaxPairs: plan.MaxPairs, MinPairs: plan.MinPairs, Fixed: plan.Fixed, LookAlpha: plan.LookAlpha(),
		BudgetSec: plan.Budget.Seconds(), WallSec: time.Since(start).Seconds(), Order: order, Stopped: stopped}
	if pairsMade() > 0 {
		smp.PairSec = measured.Seconds() / float64(pairsMade())
	}
	if need := moreNeeded(rep); need > 0 && smp.PairSec > 0 {
		smp.Advice = fmt.Sprintf("about %d more pair(s) would settle it, about %.0f more minute(s) of this machine: -max-pairs %d -budget %s",
			need, math.Ceil(float64(need)*smp.PairSec/60), pairsMade()+need, (time.Duration(smp.WallSec+float64(need)*smp.PairSec*1.2)*time.Second).Round(time.Minute)+time.Minute)
	}
	if timingOn() && len(baseRuns) < pairsMade() {
		smp.Profiled = len(baseRuns)
	}
	if timingOn() {
		if rep.Overhead = timingOverhead(HostMargins(c), append(slices.Clone(baseRuns), headRuns...), append(slices.Clone(baseConds), headConds...), append(slices.Clone(baseTiming), headTiming...)); rep.Overhead != nil {
			fmt.Fprintf(o.Log, "gpugate: profiling overhead %s\n", report.OverheadText(rep.Overhead))
		}
	}
	rep.Sampling = smp
	rep.Noise += "; " + smp.String()
	fmt.Fprintf(o.Log, "gpugate: ab order: %s\n", strings.Join(order, " "))
	fmt.Fprintf(o.Log, "gpugate: ab stopped: %s\n", stopped)
	applyIsolation(rep, &iso)
	rep.Warnings = append([]string{fmt.Sprintf("A/B: base %s and head %s ran interleaved on this machine in alternating order (%s); no stored baseline took part, so no fingerprint mismatch is possible",
		Short(base.Commit), Short(head.Commit), strings.Join(order, " "))}, rep.Warnings...)
	// The versions each side's training processes reported (ranks.go): a
	// head that changes torch is what A/B measures, but the reader must
	// know that the difference includes it.
	if d := plans["base"].FP.Diff(plans["head"].FP); len(d) > 0 {
		rep.Warnings = append(rep.Warnings, "A/B: base and head ran on different software, as their training processes report it: "+strings.Join(d, "; ")+" (base != head)")
	}
	if w.DeepDive != nil && rep.Verdict == stats.Regression {
		rep.DeepDive = abDeepDive(ctx, o, rep, plans["base"], plans["head"], o.Out, &spent)
	}
	rep.Cost = spent.Cost(plans["head"].FP.GPUCount)
	desc := fmt.Sprintf("A/B: %s@%s, %d run(s) interleaved with head", o.Base, Short(base.Commit), pairsMade())
	return &Outcome{Workload: w.Name, Report: rep, Base: baseRuns, Cand: headRuns, Fingerprint: plans["head"].FP, Baseline: desc,
		BaseTiming: baseTiming, CandTiming: headTiming}, nil
}

// pairOrder is the order of pair i: base first in odd pairs (and the
// warm-up pair 0), head first in even ones, so that whatever favours the
// first or the second run of a pair (caches, clocks, thermals) favours
// each side equally often.
func pairOrder(i int, base, head *Side) []*Side {
	if i%2 == 0 && i > 0 {
		return []*Side{head, base}
	}
	return []*Side{base, head}
}

// Defaults of sequential A/B sampling.
const (
	DefaultMaxPairs = 10
	DefaultBudget   = 10 * time.Minute
	// DefaultMinPairs is the first look: with fewer pairs the paired t
	// interval at the looks' level is too wide to decide anything.
	DefaultMinPairs = 3
	// DefaultABAlpha is the two-sided level spent over all the looks: 2%,
	// so that the chance of a false regression, one side of it, is at most
	// 1% however many looks are made (Bonferroni), which is what issue 19
	// asks of A/A. A fixed number of pairs looks once at the usual 5%.
	DefaultABAlpha = 0.02
)

// ABPlan is how many pairs ab measures and how often it looks. Sampling
// until decided is valid under optional stopping by alpha spending with
// Bonferroni's bound: there is one planned look after each pair from
// MinPairs to MaxPairs, each at α/looks (α = DefaultABAlpha, 2%), so the
// chance that any look's interval misses the true change is at most α
// however the looks turn out (stopping early, or at the budget, only skips
// looks), and that of a false regression at most α/2 = 1%. docs/verdicts.md
// gives the simulated rates.
type ABPlan struct {
	Fixed              bool // Pairs were asked for: one look, at the end, at α
	MinPairs, MaxPairs int
	Budget             time.Duration // 0: none
	Alpha              float64
}

// NewABPlan makes the plan from the flags (0: unset) and perf.yaml.
func NewABPlan(pairs, maxPairs int, budget time.Duration, c *config.Config) ABPlan {
	p := ABPlan{Alpha: DefaultABAlpha, MinPairs: DefaultMinPairs, MaxPairs: maxPairs, Budget: budget}
	if pairs == 0 && c != nil {
		pairs = c.AB.Pairs
	}
	if pairs > 0 {
		p.Fixed, p.MaxPairs, p.MinPairs, p.Budget, p.Alpha = true, pairs, pairs, 0, stats.DefaultThresholds.Alpha
		return p
	}
	if p.MaxPairs == 0 && c != nil {
		p.MaxPairs = c.AB.MaxPairs
	}
	if p.MaxPairs == 0 {
		p.MaxPairs = DefaultMaxPairs
	}
	p.MinPairs = min(p.MinPairs, p.MaxPairs)
	if p.Budget == 0 && c != nil {
		p.Budget = time.Duration(c.AB.Budget)
	}
	if p.Budget == 0 {
		p.Budget = DefaultBudget
	}
	return p
}

// Looks is the number of planned looks.
func (p ABPlan) Looks() int {
	if p.Fixed {
		return 1
	}
	return p.MaxPairs - p.MinPairs + 1
}

// LookAlpha is the level of each look's interval.
func (p ABPlan) LookAlpha() float64 { return p.Alpha / float64(p.Looks()) }

func (p ABPlan) String() string {
	if p.Fixed {
		return fmt.Sprintf("%d pair(s)", p.MaxPairs)
	}
	return fmt.Sprintf("pairs until decided (%d to %d, budget %s, each of %d looks at α=%.3g)", p.MinPairs, p.MaxPairs, p.Budget, p.Looks(), p.LookAlpha())
}
