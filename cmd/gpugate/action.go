package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpugate/gpugate/action"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/stats"
)

var actionCmd = &command{
	usage: "action",
	short: "run as the GitHub Action (reads the inputs that action.yml passes)",
	long: `
Action is what action.yml runs. It reads its inputs from GPUGATE_* variables
(composite steps get no INPUT_* on the real runner): GPUGATE_CONFIG,
GPUGATE_WORKLOAD, GPUGATE_BASELINE_DB, GPUGATE_BASE_BRANCH, GPUGATE_MODE (pr,
refresh or comment), GPUGATE_FAIL_ON_REGRESSION, GPUGATE_COMMENT (always,
on-regression, never), GPUGATE_CHECK_RUN and GPUGATE_GITHUB_TOKEN.

In pr mode it runs the workload and compares it with the baseline as gpugate
run does, writes the full report to the job summary and to a file (output
report-path), sets the outputs verdict, step-time-delta and regressions,
annotates regressions, and posts one pull request comment per workload that
later runs edit. A read-only token (a pull request from a fork) does not
fail the job: the summary says how to post comments with the two-workflow
pattern, and gpugate-result.json (output result-path) carries the report and
the PR number for it. In comment mode it posts such a result
(GPUGATE_RESULT). In refresh mode it records baseline runs.`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			return runAction(ctx, os.Getenv, stdout, stderr)
		}
	},
}

// result is what pr mode leaves for a workflow_run job to post.
type result struct {
	Workload string `json:"workload"`
	PR       int    `json:"pr"`
	HeadSHA  string `json:"head_sha"`
	Verdict  string `json:"verdict"`
	Comment  string `json:"comment"`
}

func boolInput(v string, def bool) (bool, error) {
	if v == "" {
		return def, nil
	}
	return strconv.ParseBool(v)
}

func runAction(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	gha := action.New(getenv, stdout)
	token := gha.Input("github-token")
	gha.Mask(token)
	mode := gha.Input("mode")
	if mode == "" {
		mode = "pr"
	}
	commentPolicy := gha.Input("comment")
	if commentPolicy == "" {
		commentPolicy = "always"
	}
	switch commentPolicy {
	case "always", "on-regression", "never":
	default:
		return fmt.Errorf("input comment: %q is not always, on-regression or never", commentPolicy)
	}
	failOnRegression, err := boolInput(gha.Input("fail-on-regression"), true)
	if err != nil {
		return fmt.Errorf("input fail-on-regression: %q is not true or false", gha.Input("fail-on-regression"))
	}
	checkRun, err := boolInput(gha.Input("check-run"), false)
	if err != nil {
		return fmt.Errorf("input check-run: %q is not true or false", gha.Input("check-run"))
	}
	tmp := getenv("RUNNER_TEMP")
	if tmp == "" {
		tmp = os.TempDir()
	}

	if mode == "comment" {
		return postResult(ctx, gha, stderr, getenv, token, gha.Input("result"))
	}
	if mode != "pr" && mode != "refresh" {
		return fmt.Errorf("input mode: %q is not pr, refresh or comment", mode)
	}
	cfgPath := gha.Input("config")
	if cfgPath == "" {
		cfgPath = "perf.yaml"
	}
	c, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	if b := gha.Input("base-branch"); b != "" {
		c.Baseline.Branch = b
	}
	w, err := c.Workload(gha.Input("workload"))
	if err != nil {
		return err
	}
	// Artifacts go to the runner's temporary folder, not into the checkout.
	out, err := runner.NewRunDir(filepath.Join(tmp, "gpugate-runs"), w.Name, time.Now())
	if err != nil {
		return err
	}
	opts := runOptions{db: gha.Input("baseline-db"), nsys: getenv("GPUGATE_NSYS"), out: out}
	if mode == "refresh" {
		opts.record = true
		w.Repeat = max(w.Repeat, c.Baseline.Runs)
	}
	gha.Group("gpugate: " + w.Name)
	oc, err := runWorkload(ctx, stdout, stderr, c, w, opts)
	gha.EndGroup()
	if err != nil {
		return err
	}
	rep := oc.Report
	var md bytes.Buffer
	base := oc.Base
	info := report.CommentInfo{Marker: action.Marker(w.Name), Workload: w.Name, Baseline: oc.Baseline,
		Fingerprint: describeFingerprint(oc)}
	if s := getenv("GITHUB_SERVER_URL"); s != "" && getenv("GITHUB_REPOSITORY") != "" && getenv("GITHUB_RUN_ID") != "" {
		info.SummaryURL = fmt.Sprintf("%s/%s/actions/runs/%s", s, getenv("GITHUB_REPOSITORY"), getenv("GITHUB_RUN_ID"))
	}
	if err := report.WriteComment(&md, rep, base, oc.Cand, info); err != nil {
		return err
	}
	reportPath := filepath.Join(tmp, "gpugate-"+w.Name+".md")
	if err := os.WriteFile(reportPath, md.Bytes(), 0o644); err != nil {
		return err
	}
	gha.Summary(md.String())
	gha.SetOutput("verdict", string(rep.Verdict))
	gha.SetOutput("report-path", reportPath)
	var regressed []string
	for _, m := range rep.Metrics {
		if m.Name == "step_time" && !math.IsInf(m.DeltaPct, 0) && !math.IsNaN(m.DeltaPct) {
			gha.SetOutput("step-time-delta", fmt.Sprintf("%.2f", m.DeltaPct))
		}
		if m.Verdict == stats.Regression {
			regressed = append(regressed, m.Name)
			if m.Gate {
				gha.Error("gpugate: "+m.Name+" regressed", fmt.Sprintf("%s: %s → %s (%s, allowance ±%.0f%%, p=%.3f)", m.Name,
					report.Value(m.Baseline.Median, m.Unit), report.Value(m.Candidate.Median, m.Unit), report.Delta(m), m.AllowancePct, m.P))
			}
		}
	}
	gha.SetOutput("regressions", strings.Join(regressed, ","))
	if mode == "refresh" {
		return nil
	}

	pr, headSHA, fork, _ := readEvent(getenv)
	res := result{Workload: w.Name, PR: pr, HeadSHA: headSHA, Verdict: string(rep.Verdict), Comment: md.String()}
	resPath := filepath.Join(tmp, "gpugate-result.json")
	if b, err := json.Marshal(res); err == nil {
		os.WriteFile(resPath, b, 0o644)
		gha.SetOutput("result-path", resPath)
	}
	wantComment := commentPolicy == "always" || commentPolicy == "on-regression" && rep.Verdict == stats.Regression
	if pr != 0 && wantComment {
		if err := comment(ctx, stderr, getenv, token, pr, w.Name, md.String()); err != nil {
			if !errors.Is(err, action.ErrReadOnly) {
				return err
			}
			readOnly(gha, fork)
		}
	}
	if checkRun && headSHA != "" {
		conclusion := map[stats.Verdict]string{stats.Pass: "success", stats.Improvement: "success", stats.Accepted: "success",
			stats.Regression: "failure", stats.Inconclusive: "neutral", stats.NoBaseline: "neutral"}[rep.Verdict]
		if c, err := action.NewClient(getenv("GITHUB_API_URL"), token, getenv("GITHUB_REPOSITORY"), nil); err == nil {
			if err := c.CheckRun(ctx, "gpugate / "+w.Name, headSHA, conclusion, "gpugate: "+string(rep.Verdict), md.String()); err != nil {
				gha.Warning("gpugate: no check run", err.Error())
			}
		}
	}
	switch {
	case oc.Err != nil:
		return oc.Err
	case rep.Verdict == stats.Regression && !failOnRegression:
		return nil
	}
	return verdictError(rep.Verdict, false)
}

func readEvent(getenv func(string) string) (int, string, bool, error) {
	path := getenv("GITHUB_EVENT_PATH")
	if path == "" {
		return 0, "", false, nil
	}
	payload, err := os.ReadFile(path)
	if err != nil {
		return 0, "", false, err
	}
	return action.PullRequest(getenv("GITHUB_EVENT_NAME"), payload)
}

func comment(ctx context.Context, log io.Writer, getenv func(string) string, token string, pr int, workload, body string) error {
	if token == "" {
		return fmt.Errorf("%w: no github-token input", action.ErrReadOnly)
	}
	c, err := action.NewClient(getenv("GITHUB_API_URL"), token, getenv("GITHUB_REPOSITORY"), nil)
	if err != nil {
		return err
	}
	id, created, err := c.Upsert(ctx, pr, action.Marker(workload), body)
	if err != nil {
		return err
	}
	verb := "updated"
	if created {
		verb = "created"
	}
	fmt.Fprintf(log, "gpugate: %s comment %d on pull request #%d\n", verb, id, pr)
	return nil
}

// readOnly explains, in the job summary, why there is no comment and how to
// get one.
func readOnly(gha *action.IO, fork bool) {
	why := "the token given to gpugate cannot write pull request comments"
	if fork {
		why = "this pull request comes from a fork, and GitHub gives such runs a read-only token"
	}
	gha.Warning("gpugate: no PR comment", why+"; the report is in the job summary")
	gha.Summary("\n> **No PR comment:** " + why + ". To comment anyway, upload `gpugate-result.json` (output `result-path`) as an artifact " +
		"and post it from a second workflow on `workflow_run` with `mode: comment` (see examples/workflows/fork-safe-*.yml in gpugate). " +
		"Give it `permissions: pull-requests: write`.\n")
}

// postResult is comment mode: post a result made by a pr-mode run.
func postResult(ctx context.Context, gha *action.IO, log io.Writer, getenv func(string) string, token, path string) error {
	if path == "" {
		return errors.New("mode comment needs the result input: the gpugate-result.json of the pr run")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r result
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: not a gpugate result: %v", path, err)
	}
	// The result comes from a run on untrusted code: accept only what a
	// comment may hold.
	if r.PR <= 0 || config.CheckName(r.Workload) != nil || len(r.Comment) > report.MaxComment {
		return fmt.Errorf("%s: result has no valid PR number, workload or comment", path)
	}
	if !strings.HasPrefix(r.Comment, action.Marker(r.Workload)) {
		r.Comment = action.Marker(r.Workload) + "\n" + r.Comment
	}
	gha.Summary(r.Comment)
	return comment(ctx, log, getenv, token, r.PR, r.Workload, r.Comment)
}

func describeFingerprint(oc *outcome) string {
	f := oc.Fingerprint
	gpu := "no GPU"
	if f.GPUCount > 0 {
		gpu = fmt.Sprintf("%d× %s (driver %s, CUDA %s)", f.GPUCount, f.GPU, f.Driver, f.CUDA)
	}
	s := fmt.Sprintf("%s; %s, %d CPUs; torch %s, Python %s; profiler %s", gpu, f.CPU, f.CPUs, f.Torch, f.Python, f.Profiler)
	if f.Nsys != "" {
		s += " " + f.Nsys
	}
	return s + "; fingerprint " + f.Hash()
}
