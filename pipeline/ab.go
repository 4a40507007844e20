package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
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
	// Pairs is how many base/head pairs are measured (default: ab.pairs
	// of perf.yaml, else the workload's repeat, at least 3).
	Pairs int
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
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
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

// AB runs base and head interleaved — B H B H …, one warm-up pair first
// when asked — on this machine in the same minutes, and compares them with
// runs as units. The base side (and a head given as a revision) runs in a
// git worktree that is removed afterwards.
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
	pairs := o.Pairs
	if pairs == 0 {
		pairs = c.AB.Pairs
	}
	if pairs == 0 {
		pairs = max(w.Repeat, 3)
	}
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
	fmt.Fprintf(o.Log, "gpugate: ab %s: base %s (%s) vs head %s (%s), %d pair(s)%s, interleaved on this machine\n", w.Name,
		o.Base, Short(base.Commit), head.Ref, Short(head.Commit), pairs, map[bool]string{true: " after a warm-up pair", false: ""}[o.Warmup])

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

	var baseRuns, headRuns []gate.Run
	var baseConds, headConds []*gate.Conditions
	var order []string
	first := 1
	if o.Warmup {
		first = 0
	}
	for i := first; i <= pairs; i++ {
		for _, s := range []*Side{&base, &head} {
			tag := strings.ToUpper(s.Name[:1]) + fmt.Sprint(i)
			label := fmt.Sprintf("%s (pair %d/%d)", tag, i, pairs)
			if i == 0 {
				tag, label = tag+"*", tag+" (warm-up, discarded)"
			}
			once, err := plans[s.Name].RunOnce(ctx, filepath.Join(o.Out, fmt.Sprintf("%s%d", s.Name, i)))
			if err != nil {
				return nil, fmt.Errorf("ab %s run %d: %w", s.Name, i, err)
			}
			order = append(order, tag)
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
	}
	fmt.Fprintf(o.Log, "gpugate: ab order: %s\n", strings.Join(order, " "))
	allow, err := Allowances(c)
	if err != nil {
		return nil, err
	}
	rep := gate.Compare(baseRuns, headRuns, gate.Options{Allowances: allow, Gate: c.Gate, MinAbs: MinAbs(c)})
	applyConditions(rep, baseConds, headConds)
	rep.Warnings = append([]string{fmt.Sprintf("A/B: base %s and head %s ran interleaved on this machine (%s); no stored baseline took part, so no fingerprint mismatch is possible",
		Short(base.Commit), Short(head.Commit), strings.Join(order, " "))}, rep.Warnings...)
	// The versions each side's training processes reported (ranks.go): a
	// head that changes torch is what A/B measures, but the reader must
	// know that the difference includes it.
	if d := plans["base"].FP.Diff(plans["head"].FP); len(d) > 0 {
		rep.Warnings = append(rep.Warnings, "A/B: base and head ran on different software, as their training processes report it: "+strings.Join(d, "; ")+" (base != head)")
	}
	if w.DeepDive != nil && rep.Verdict == stats.Regression {
		rep.DeepDive = abDeepDive(ctx, o, rep, plans["base"], plans["head"], o.Out)
	}
	desc := fmt.Sprintf("A/B: %s@%s, %d run(s) interleaved with head", o.Base, Short(base.Commit), len(baseRuns))
	return &Outcome{Workload: w.Name, Report: rep, Base: baseRuns, Cand: headRuns, Fingerprint: plans["head"].FP, Baseline: desc}, nil
}
