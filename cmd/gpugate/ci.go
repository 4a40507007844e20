package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/gpugate/gpugate/action"
	"github.com/gpugate/gpugate/ci"
	"github.com/gpugate/gpugate/ci/buildkite"
	"github.com/gpugate/gpugate/ci/gitlab"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/stats"
)

var ciCmd = &command{
	usage: "ci -config perf.yaml [-workload NAME] [-db PATH] [-out DIR]",
	short: "the pull/merge request check or the nightly baseline, whichever this CI build is (GitHub Actions, GitLab CI, Buildkite)",
	long: `
CI tells from the CI's own variables which system it runs in (GITHUB_ACTIONS,
GITLAB_CI or BUILDKITE set to true) and what kind of build this is, then
does what that build needs:

In a merge request (GitLab: CI_MERGE_REQUEST_IID) or pull request
(Buildkite: BUILDKITE_PULL_REQUEST; GitHub: a pull_request event) it runs
the workload as gpugate run does, with the store opened read-only, and
compares it with the baseline of the branch the change merges into
(CI_MERGE_REQUEST_TARGET_BRANCH_NAME, BUILDKITE_PULL_REQUEST_BASE_BRANCH,
GITHUB_BASE_REF) at the merge base (GitLab's CI_MERGE_REQUEST_DIFF_BASE_SHA,
else git's). It writes report.md and report.json into the artifacts folder
and posts report.md: on GitLab as one merge request note, edited in place by
later pipelines and found by a hidden marker, with the token in
GPUGATE_GITLAB_TOKEN (scope api) against CI_API_V4_URL, CI_PROJECT_ID and
CI_MERGE_REQUEST_IID; on Buildkite as one annotation (buildkite-agent
annotate --context gpugate-WORKLOAD, --style error, warning, success or info
from the verdict); on GitHub as the pull request comment the Action posts,
with GPUGATE_GITHUB_TOKEN. Without a token there is no note, and a warning
says why. The tokens are read before the job starts and the job never sees
them (docs/security.md).

In a scheduled build, or on the default branch (CI_DEFAULT_BRANCH,
BUILDKITE_PIPELINE_DEFAULT_BRANCH; else perf.yaml's baseline.branch), it
records baseline.runs runs as gpugate baseline refresh does. Any other build
(a branch without a merge request) is compared as gpugate run does and
records nothing.

A note or annotation that cannot be posted is trouble (exit 2), as in the
Action, except that a regression keeps exit 1: the report files and the log
have the verdict either way. docs/gitlab.md and docs/buildkite.md show the
pipelines.

` + exitStatusHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		cfgPath := fs.String("config", "perf.yaml", "the perf.yaml `file`")
		workload := fs.String("workload", "", "the workload to run (default: the only one)")
		outDir := fs.String("out", "", "artifacts `folder` (default .gpugate/runs/WORKLOAD/TIME)")
		dbPath := fs.String("db", "", "baseline store: a SQLite file `path` or a postgres:// URL (default: $GPUGATE_DB, else perf.yaml's baseline.db, else "+defaultDB+")")
		nsysPath := fs.String("nsys", "", "`path` of nsys (default: $GPUGATE_NSYS, then PATH)")
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments %q", args)
			}
			return runCI(ctx, stdout, stderr, os.Getenv, ciOptions{config: *cfgPath, workload: *workload,
				run: runOptions{out: *outDir, db: *dbPath, nsys: nsysFlag(*nsysPath)}})
		}
	},
}

type ciOptions struct {
	config, workload string
	run              runOptions
}

// poster posts a change build's report where the CI shows it; what it
// needs from the environment (tokens, the agent's path) is read before
// the job starts.
type poster struct {
	where string // "merge request note", for messages
	// missing says why nothing can be posted (no token), "" when post can.
	missing string
	post    func(ctx context.Context, slug string, verdict stats.Verdict, code int, md []byte) (string, error)
}

// runCI is gpugate ci: ci.Detect decides, pipeline runs, finish reports,
// and a change build's report is posted.
func runCI(ctx context.Context, stdout, stderr io.Writer, getenv func(string) string, o ciOptions) error {
	b := ci.Detect(getenv)
	if b.CI == "" {
		return usagef("no CI detected: none of GITHUB_ACTIONS, GITLAB_CI or BUILDKITE is true (outside CI use gpugate run)")
	}
	c, err := config.Load(o.config)
	if err != nil {
		return err
	}
	w, err := c.Workload(o.workload)
	if err != nil {
		return err
	}
	var p *poster
	switch {
	case b.Change:
		if b.Target != "" {
			c.Baseline.Branch = b.Target
		}
		o.run.readOnly, o.run.mergeBase = true, b.DiffBase
		if p, err = newPoster(b, getenv); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "gpugate: %s %s %d: comparing with the baseline of %s\n", b.CI, changeWord(b.CI), b.Number, escape.Terminal(c.Baseline.Branch))
	case b.Records(c.Baseline.Branch):
		o.run.record = true
		w.Repeat = config.Repeat(c.Baseline.Runs)
		why := "default branch " + escape.Terminal(b.Branch)
		if b.Schedule {
			why = "scheduled build"
		}
		fmt.Fprintf(stderr, "gpugate: %s %s: recording %d baseline run(s)\n", b.CI, why, c.Baseline.Runs)
	default:
		// A branch build without a change: compared, as gpugate run does,
		// and never recorded (only the default branch's runs are
		// baselines); nothing to post on.
		o.run.readOnly = true
		fmt.Fprintf(stderr, "gpugate: %s build of %s (no merge or pull request): comparing only\n", b.CI, escape.Terminal(b.Branch))
	}
	oc, err := runWorkload(ctx, stdout, stderr, c, w, o.run)
	if err != nil {
		return err
	}
	verdictErr := finish(stdout, "text", oc)
	if p == nil || oc.Report == nil {
		return verdictErr
	}
	code := statusOf(verdictErr)
	if p.missing != "" {
		fmt.Fprintf(stderr, "gpugate: warning: no %s: %s; the report is in %s\n", p.where, p.missing, escape.Terminal(oc.Out))
		return verdictErr
	}
	info := commentInfo(oc)
	slug := action.Slug(w.Name)
	info.Marker = action.Marker(slug)
	var md bytes.Buffer
	if err := report.WriteComment(&md, oc.Report, info); err != nil {
		return err
	}
	done, err := p.post(ctx, slug, oc.Report.Verdict, code, md.Bytes())
	if errors.Is(err, action.ErrReadOnly) {
		// As the Action: a read-only token (a fork's pull request on
		// GitHub) is no trouble of the check's.
		fmt.Fprintf(stderr, "gpugate: warning: no %s: %s; the report is in %s\n", p.where, escape.Terminal(err.Error()), escape.Terminal(oc.Out))
		return verdictErr
	}
	if err != nil {
		err = fmt.Errorf("no %s: %w", p.where, err)
		if code == exitRegression {
			// The verdict already fails the build: keep its exit status,
			// and say what else went wrong.
			fmt.Fprintf(stderr, "gpugate: %s\n", escape.Terminal(err.Error()))
			return verdictErr
		}
		return err
	}
	fmt.Fprintf(stderr, "gpugate: %s\n", done)
	return verdictErr
}

func changeWord(k ci.Kind) string {
	if k == ci.GitLab {
		return "merge request"
	}
	return "pull request"
}

// statusOf is the exit status a command result gives (as gpugate maps it).
func statusOf(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return exitTrouble
	}
	return exitOK
}

// newPoster reads what posting needs, before the job starts: the job is
// started without these variables (internal/denyenv), and they are read
// here, not after it ran.
func newPoster(b ci.Build, getenv func(string) string) (*poster, error) {
	switch b.CI {
	case ci.GitLab:
		p := &poster{where: "merge request note"}
		token := getenv("GPUGATE_GITLAB_TOKEN")
		if token == "" {
			p.missing = "GPUGATE_GITLAB_TOKEN is not set (a merge request from a fork runs in the fork's project, which does not have the parent's variables: docs/gitlab.md)"
			return p, nil
		}
		cl, err := gitlab.New(b.APIURL, token, b.Project, b.Number, gitlab.Options{})
		if err != nil {
			return nil, err
		}
		p.post = func(ctx context.Context, slug string, _ stats.Verdict, _ int, md []byte) (string, error) {
			n, err := cl.Upsert(ctx, action.Marker(slug), string(md))
			if err != nil {
				return "", err
			}
			verb := map[bool]string{true: "created", false: "updated"}[n.Created]
			return fmt.Sprintf("%s note %d on merge request !%d", verb, n.ID, b.Number), nil
		}
		return p, nil
	case ci.Buildkite:
		p := &poster{where: "Buildkite annotation"}
		// Found now, before the job could put another buildkite-agent on
		// the PATH's folders it may write to.
		agent, err := exec.LookPath("buildkite-agent")
		if err != nil {
			p.missing = "buildkite-agent is not on PATH"
			return p, nil
		}
		// The agent, not the job, gets the agent's token: its environment
		// is gpugate's own.
		env := os.Environ()
		p.post = func(ctx context.Context, slug string, v stats.Verdict, code int, md []byte) (string, error) {
			ctxName := buildkite.Context(slug)
			if err := buildkite.Annotate(ctx, agent, env, ctxName, annotationStyle(v, code), md); err != nil {
				return "", err
			}
			return fmt.Sprintf("annotated the build (context %s)", ctxName), nil
		}
		return p, nil
	case ci.GitHub:
		p := &poster{where: "pull request comment"}
		token := getenv("GPUGATE_GITHUB_TOKEN")
		switch {
		case token == "":
			p.missing = "GPUGATE_GITHUB_TOKEN is not set (or use the gpugate Action, which also handles forks)"
			return p, nil
		case b.Number == 0:
			p.missing = "GITHUB_REF names no pull request"
			return p, nil
		}
		cl, err := action.NewClient(getenv("GITHUB_API_URL"), token, getenv("GITHUB_REPOSITORY"), action.Options{})
		if err != nil {
			return nil, err
		}
		p.post = func(ctx context.Context, slug string, _ stats.Verdict, _ int, md []byte) (string, error) {
			cm, err := cl.Upsert(ctx, b.Number, action.Marker(slug), string(md), true)
			if err != nil {
				return "", err
			}
			verb := map[bool]string{true: "created", false: "updated"}[cm.Created]
			return fmt.Sprintf("%s comment %d on pull request #%d", verb, cm.ID, b.Number), nil
		}
		return p, nil
	}
	return nil, fmt.Errorf("ci: %s builds cannot post", b.CI)
}

// annotationStyle is a Buildkite annotation's style for a verdict and the
// exit status it gives: trouble and regressions are errors, inconclusive
// a warning, no baseline information, the rest success.
func annotationStyle(v stats.Verdict, code int) buildkite.Style {
	switch {
	case code == exitTrouble || code == exitRegression:
		return buildkite.Error
	case code == exitInconclusive:
		return buildkite.Warning
	case v == stats.NoBaseline:
		return buildkite.Info
	}
	return buildkite.Success
}
