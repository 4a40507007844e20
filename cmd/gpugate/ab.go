package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gpugate/gpugate/action"
	"github.com/gpugate/gpugate/ci"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/pipeline"
)

var abCmd = &command{
	usage: "ab -config perf.yaml -base REF [-head REF] [-workload NAME] [-pairs N | -max-pairs N -budget 10m] [-warmup] [-format text|markdown|json] [-out DIR]",
	short: "run the base and the head commit interleaved on this machine and compare them (no stored baseline)",
	long: `
Ab answers "on this very machine, right now, is head slower than base?". It
checks the base revision out into a temporary git worktree (and the head
revision too when -head is given; without it the head is the working tree
as it is), runs the workload on both sides interleaved in pairs whose order
alternates — base then head, head then base, … (BH HB BH …), after one
discarded warm-up pair with -warmup — and judges the pairs: each pair's
log-ratio of mean step times (and of every metric), head over base, and a
paired t interval over the pairs.

By default ab samples until decided: after the 3rd pair and each pair after
it, it looks at the interval and stops as soon as it settles the verdict
(beyond the allowance: regression; within it: pass), or when 10 pairs
(-max-pairs, ab.max_pairs) are measured or the next pair would end past the
10-minute budget (-budget, ab.budget). Each look is made at 2% divided by the
number of planned looks (8 by default: α=0.0025 each), so that looking
repeatedly does not add false alarms: a false regression happens at most 1%
of the time, however many looks are made. -pairs N (ab.pairs) measures exactly N
pairs and looks once, at α. The report and the log say the order the runs
were made in, how many pairs were needed and why sampling stopped.

The head's perf.yaml defines the workload for both sides, so that both run
the same command; each side runs in its own checkout. perf.yaml's
ab.setup.base and ab.setup.head run once in their side's checkout before its
first run (e.g. pip install -e .). Nothing is read from or written to the
baseline store, and both sides share one machine: no fingerprint mismatch
is possible.

` + exitStatusHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		cfgPath := fs.String("config", "perf.yaml", "the perf.yaml `file`")
		workload := fs.String("workload", "", "the workload to run (default: the only one)")
		base := fs.String("base", "", "the base `revision` (branch, tag or commit)")
		head := fs.String("head", "", "the head `revision` (default: the working tree)")
		pairs := fs.Int("pairs", 0, "a fixed number of base/head `pairs`, judged once (default: ab.pairs of perf.yaml, else sample until decided)")
		maxPairs := fs.Int("max-pairs", 0, "the most `pairs` to sample until decided (default: ab.max_pairs of perf.yaml, else 10)")
		budget := fs.Duration("budget", 0, "wall-time `budget` of sampling until decided (default: ab.budget of perf.yaml, else 10m)")
		warmup := fs.Bool("warmup", false, "run one more pair first and discard it (default: ab.warmup of perf.yaml)")
		format := fs.String("format", "text", "output `format`: text, markdown or json")
		outDir := fs.String("out", "", "artifacts `folder` (default .gpugate/runs/WORKLOAD/ab-TIME)")
		nsysPath := fs.String("nsys", "", "`path` of nsys (default: $GPUGATE_NSYS, then PATH)")
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments %q", args)
			}
			if *base == "" {
				return usagef("want -base REF")
			}
			if *pairs < 0 {
				return usagef("-pairs must be at least 1")
			}
			if *maxPairs < 0 || *maxPairs == 1 {
				return usagef("-max-pairs must be at least 2")
			}
			if *budget < 0 {
				return usagef("-budget must not be negative")
			}
			switch *format {
			case "text", "markdown", "json":
			default:
				return usagef("-format must be text, markdown or json, not %q", *format)
			}
			c, err := config.Load(*cfgPath)
			if err != nil {
				return err
			}
			w, err := c.Workload(*workload)
			if err != nil {
				return err
			}
			oc, err := pipeline.AB(ctx, pipeline.ABOptions{Config: c, Workload: w, Base: *base, Head: *head, Pairs: *pairs, MaxPairs: *maxPairs, Budget: *budget,
				Warmup: *warmup || c.AB.Warmup, Out: *outDir, Nsys: nsysFlag(*nsysPath), Stdout: stdout, Log: stderr})
			if err != nil {
				return err
			}
			return finish(stdout, *format, oc)
		}
	},
}

var cacheKeyCmd = &command{
	usage: "baseline cache-key -config perf.yaml [-workload NAME] [-db PATH]",
	short: "print the actions/cache path and keys that carry the SQLite store across ephemeral runners",
	long: `
Baseline cache-key prints, as name=value lines for $GITHUB_OUTPUT, where
the SQLite store is (path) and the actions/cache keys that carry it from
one ephemeral runner to the next:

  path=~/.cache/gpugate/WORKLOAD/baseline.db
  key=gpugate-baseline-v1-WORKLOAD-FINGERPRINT-RUNID-ATTEMPT
  restore-key=gpugate-baseline-v1-WORKLOAD-FINGERPRINT-

A cache entry is immutable, so every run saves under a key of its own
(key, from GITHUB_RUN_ID and GITHUB_RUN_ATTEMPT) and restores the newest
entry of its workload and machine (restore-key, a prefix). FINGERPRINT is
the hash gpugate run stores with each run: hardware, driver, CUDA, torch,
Python and profiler, so that a store restored onto another kind of machine
holds no baseline it could be compared with. WORKLOAD is the workload's
name reduced to [a-z0-9._-]. With a postgres:// store there is nothing to
cache: path is empty.

Under GitLab CI (GITLAB_CI=true) it prints path and one key,
gpugate-baseline-v1-WORKLOAD-FINGERPRINT, with no run id and no "/": a
GitLab cache entry is replaced under its key by each job that saves it, so
the key stays the same from one pipeline to the next (docs/gitlab.md).`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		cfgPath := fs.String("config", "perf.yaml", "the perf.yaml `file`")
		workload := fs.String("workload", "", "the workload (default: the only one)")
		db := dbFlag(fs)
		nsysPath := fs.String("nsys", "", "`path` of nsys (default: $GPUGATE_NSYS, then PATH)")
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			c, err := config.Load(*cfgPath)
			if err != nil {
				return err
			}
			w, err := c.Workload(*workload)
			if err != nil {
				return err
			}
			p, err := pipeline.Prepare(ctx, pipeline.Options{Config: c, Workload: w, Nsys: nsysFlag(*nsysPath)})
			if err != nil {
				return err
			}
			path, err := storeTarget(*db, c, w.Name)
			if err != nil {
				return err
			}
			if strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://") {
				path = ""
			}
			fp := p.FP.Hash()
			if ci.Detect(os.Getenv).CI == ci.GitLab {
				// GitLab's cache overwrites an entry under its key at
				// the end of each job that saves it: one key per
				// workload and machine, without run id (GitLab appends
				// -protected or -non_protected itself).
				fmt.Fprintf(stdout, "path=%s\nkey=%s\n", oneLineValue(path), strings.TrimSuffix(action.CacheKeyPrefix(w.Name, fp), "-"))
				return nil
			}
			fmt.Fprintf(stdout, "path=%s\nkey=%s\nrestore-key=%s\n", oneLineValue(path),
				action.CacheKey(w.Name, fp, os.Getenv("GITHUB_RUN_ID"), os.Getenv("GITHUB_RUN_ATTEMPT")), action.CacheKeyPrefix(w.Name, fp))
			return nil
		}
	},
}

// oneLineValue keeps a name=value line one line.
func oneLineValue(s string) string {
	return strings.NewReplacer("\n", "", "\r", "").Replace(s)
}
