package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/gpugate/gpugate/trace"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpugate/gpugate/action"
	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/pipeline"
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
refresh or comment), GPUGATE_FAIL_ON_REGRESSION, GPUGATE_ON_INCONCLUSIVE
(fail, neutral or pass: an inconclusive verdict fails the step only with
fail), GPUGATE_COMMENT (always,
on-regression, never), GPUGATE_CHECK_RUN, GPUGATE_ACCEPT_LABEL,
GPUGATE_BOT_LOGIN, GPUGATE_TRACE_SIZE_CAP (MB), GPUGATE_CACHE, GPUGATE_RESULT
and GPUGATE_GITHUB_TOKEN. GPUGATE_PHASE picks one step of action.yml:
prepare (resolve the baseline store outside the workspace and its
actions/cache key), run (profile, compare, write the evidence), post
(comment, check run, exit status); empty does run and post at once.

In pr mode it runs the workload and compares it with the baseline as gpugate
run does, opening the store read-only (the PR's code is not trusted to write
baselines), writes the report to the job summary, gathers the evidence
(traces, compressed and capped; the report as Markdown and JSON; the job's
log; gpugate-result.json, the comparison as data) into one folder per
workload (output artifacts-path) for actions/upload-artifact, annotates
config errors at their line, job failures with the log's last lines,
regressions, and missing, stale or mismatched baselines, and posts one pull
request comment per workload that later runs edit. A pull request label
(accept-label) turns a regression into "accepted". A read-only token (a
pull request from a fork) does not fail the job: the summary says how to
post comments with the two-workflow pattern.

In comment mode (the privileged workflow_run job of that pattern) it reads
gpugate-result.json from the untrusted run's artifact as data, finds the pull
request itself from the workflow_run event (head repository and head SHA),
refuses an artifact that disagrees with it, re-renders the comment with
every name escaped and posts it. In refresh mode it records baseline runs.`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			if len(args) > 0 {
				return usagef("action takes no arguments: its inputs are GPUGATE_* variables")
			}
			return runAction(ctx, os.Getenv, stdout, stderr)
		}
	},
}

// resultVersion is the version of gpugate-result.json.
const resultVersion = 2

// result is what a run leaves for the post step and, in the fork flow, for
// the privileged comment job: data, never Markdown. The comment is
// rendered from it, with every name escaped, by whoever posts it.
type result struct {
	Version  int    `json:"version"`
	Workload string `json:"workload"` // a slug
	// PR and HeadSHA are what the run's event said; the comment job checks
	// them against the pull request it finds itself.
	PR       int          `json:"pr"`
	HeadSHA  string       `json:"head_sha"`
	Report   *gate.Report `json:"report"`
	Baseline string       `json:"baseline"` // what was compared with, in words
	Machine  string       `json:"machine"`  // the fingerprint, in words
	// BaseSteps and CandSteps are step times in ms, for the chart.
	BaseSteps []float64 `json:"baseline_step_ms"`
	CandSteps []float64 `json:"candidate_step_ms"`
	Artifact  string    `json:"artifact"` // the artifact's name
	Traces    []string  `json:"traces"`   // trace files in the artifact
	Omitted   int       `json:"traces_omitted"`
	Record    string    `json:"record,omitempty"` // the command that records a baseline
}

// inputs are the action's inputs, checked.
type inputs struct {
	phase, mode, config, workload, db, baseBranch, comment, result, token, acceptLabel, bot string
	failOnRegression, checkRun, cache                                                       bool
	sizeCap                                                                                 int64 // bytes
	// onInconclusive is what an inconclusive verdict does: fail, neutral
	// (the default) or pass (inconclusiveOutcome).
	onInconclusive string
}

func boolInput(v string, def bool) (bool, error) {
	if v == "" {
		return def, nil
	}
	return strconv.ParseBool(v)
}

func readInputs(gha *action.IO) (inputs, error) {
	in := inputs{phase: gha.Input("phase"), mode: gha.Input("mode"), config: gha.Input("config"), workload: gha.Input("workload"),
		db: gha.Input("baseline-db"), baseBranch: gha.Input("base-branch"), comment: gha.Input("comment"), result: gha.Input("result"),
		token: gha.Input("github-token"), acceptLabel: gha.Input("accept-label"), bot: gha.Input("bot-login")}
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&in.mode, "pr")
	def(&in.comment, "always")
	def(&in.config, "perf.yaml")
	def(&in.acceptLabel, "gpugate/accept-regression")
	def(&in.bot, action.BotLogin)
	in.onInconclusive = gha.Input("on-inconclusive")
	def(&in.onInconclusive, "neutral")
	if _, _, err := inconclusiveOutcome(in.onInconclusive); err != nil {
		return in, err
	}
	switch in.phase {
	case "", "prepare", "run", "post":
	default:
		return in, fmt.Errorf("GPUGATE_PHASE %q is not prepare, run or post", in.phase)
	}
	switch in.mode {
	case "pr", "refresh", "comment":
	default:
		return in, fmt.Errorf("input mode: %q is not pr, refresh or comment", in.mode)
	}
	switch in.comment {
	case "always", "on-regression", "never":
	default:
		return in, fmt.Errorf("input comment: %q is not always, on-regression or never", in.comment)
	}
	var err error
	for _, b := range []struct {
		name string
		dst  *bool
		def  bool
	}{{"fail-on-regression", &in.failOnRegression, true}, {"check-run", &in.checkRun, false}, {"cache", &in.cache, true}} {
		if *b.dst, err = boolInput(gha.Input(b.name), b.def); err != nil {
			return in, fmt.Errorf("input %s: %q is not true or false", b.name, gha.Input(b.name))
		}
	}
	in.sizeCap = 200 << 20
	if v := gha.Input("trace-size-cap"); v != "" {
		mb, err := strconv.ParseFloat(v, 64)
		if err != nil || mb < 0 || math.IsNaN(mb) || mb > 1<<20 {
			return in, fmt.Errorf("input trace-size-cap: %q is not a size in MB between 0 and 1048576", v)
		}
		in.sizeCap = int64(mb * (1 << 20))
	}
	return in, nil
}

func runAction(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	gha := action.New(getenv, stdout)
	gha.Mask(getenv("GPUGATE_GITHUB_TOKEN"))
	in, err := readInputs(gha)
	if err != nil {
		gha.Error("gpugate: bad input", err.Error())
		return err
	}
	if in.mode == "comment" {
		return commentMode(ctx, gha, stderr, getenv, in)
	}
	switch in.phase {
	case "prepare":
		return preparePhase(ctx, gha, getenv, in)
	case "post":
		return postPhase(ctx, gha, stderr, getenv, in, in.result)
	}
	resPath, err := runPhase(ctx, gha, stdout, stderr, getenv, in)
	if err != nil || in.phase == "run" || in.mode == "refresh" {
		return err
	}
	return postPhase(ctx, gha, stderr, getenv, in, resPath)
}

// slug makes a workload name safe for paths, artifact names, cache keys and
// the comment's marker: a name that is not already safe becomes its safe
// characters plus a short hash of the whole name, so that two names never
// share a slug.
func slug(name string) string {
	if config.CheckName(name) == nil {
		return name
	}
	s := strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return r
		}
		return '-'
	}, name)
	s = strings.Trim(s, "-")
	if len(s) > 40 {
		s = s[:40]
	}
	sum := sha256.Sum256([]byte(name))
	if s == "" {
		s = "workload"
	}
	return s + "-" + hex.EncodeToString(sum[:4])
}

// folders are where a workload's runs and evidence go: under RUNNER_TEMP,
// never in the checkout.
func folders(getenv func(string) string, workload string) (runs, art string) {
	tmp := getenv("RUNNER_TEMP")
	if tmp == "" {
		tmp = os.TempDir()
	}
	s := slug(workload)
	return filepath.Join(tmp, "gpugate-runs", s), filepath.Join(tmp, "gpugate-artifacts", s)
}

func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// store resolves the baseline store of a workload: the baseline-db input;
// else perf.yaml's baseline.db when it is a postgres:// URL or an absolute
// path; else a SQLite file outside the workspace (actions/checkout cleans
// the workspace, and a relative path is inside it), one per workload so
// that the caches of two workloads never overwrite each other:
// $GPUGATE_STORE_DIR, else $HOME/.cache/gpugate, /WORKLOAD/baseline.db.
func store(getenv func(string) string, in inputs, c *config.Config, w *config.Workload) string {
	if in.db != "" {
		return in.db
	}
	if db := c.Baseline.DB; isPostgres(db) || filepath.IsAbs(db) {
		return db
	}
	dir := getenv("GPUGATE_STORE_DIR")
	if dir == "" && getenv("HOME") != "" {
		dir = filepath.Join(getenv("HOME"), ".cache", "gpugate")
	}
	if dir == "" {
		tmp := getenv("RUNNER_TEMP")
		if tmp == "" {
			tmp = os.TempDir()
		}
		dir = filepath.Join(tmp, "gpugate-store")
	}
	return filepath.Join(dir, slug(w.Name), "baseline.db")
}

// cacheKeyPrefix and cacheKey are the actions/cache keys of a workload's
// store on machines of one fingerprint. A cache entry cannot be
// overwritten, so every save gets its own key (the run id and attempt);
// restoring with the prefix as restore-key gets the newest entry saved for
// this workload and fingerprint (actions/cache picks the most recent of
// several prefix matches). Version v1 changes with the store's layout.
func cacheKeyPrefix(workload, fingerprint string) string {
	return "gpugate-baseline-v1-" + slug(workload) + "-" + keyPart(fingerprint) + "-"
}

func cacheKey(workload, fingerprint, runID, attempt string) string {
	if runID == "" {
		runID = "local"
	}
	if attempt == "" {
		attempt = "1"
	}
	return cacheKeyPrefix(workload, fingerprint) + keyPart(runID) + "-" + keyPart(attempt)
}

// loadConfig reads and checks perf.yaml, annotating every error at its
// line and column.
func loadConfig(gha *action.IO, getenv func(string) string, path string) (*config.Config, error) {
	c, err := config.Load(path)
	if err != nil {
		annotateConfig(gha, getenv, path, err)
		return nil, err
	}
	return c, nil
}

func annotateConfig(gha *action.IO, getenv func(string) string, path string, err error) {
	rel := func(f string) string {
		if ws := getenv("GITHUB_WORKSPACE"); ws != "" {
			if abs, e := filepath.Abs(f); e == nil {
				if r, e := filepath.Rel(ws, abs); e == nil && !strings.HasPrefix(r, "..") {
					return r
				}
			}
		}
		return f
	}
	var es config.Errors
	var e *config.Error
	switch {
	case errors.As(err, &es):
		for _, x := range es {
			gha.ErrorAt(rel(x.File), x.Line, x.Col, "gpugate: perf.yaml", x.Msg)
		}
	case errors.As(err, &e):
		gha.ErrorAt(rel(e.File), e.Line, e.Col, "gpugate: perf.yaml", e.Msg)
	default:
		gha.ErrorAt(rel(path), 0, 0, "gpugate: perf.yaml", err.Error())
	}
}

func preparePhase(ctx context.Context, gha *action.IO, getenv func(string) string, in inputs) error {
	c, err := loadConfig(gha, getenv, in.config)
	if err != nil {
		return err
	}
	w, err := c.Workload(in.workload)
	if err != nil {
		gha.Error("gpugate: workload", err.Error())
		return err
	}
	db := store(getenv, in, c, w)
	_, art := folders(getenv, w.Name)
	gha.SetOutput("db", db)
	gha.SetOutput("artifact-name", "gpugate-"+slug(w.Name))
	gha.SetOutput("artifacts-path", art)
	if !in.cache || isPostgres(db) {
		gha.SetOutput("cache", "false")
		return nil
	}
	// The fingerprint a run of w will record, resolved as the run does.
	plan, err := pipeline.Prepare(ctx, pipeline.Options{Config: c, Workload: w, Nsys: getenv("GPUGATE_NSYS")})
	if err != nil {
		return err
	}
	fp := plan.FP.Hash()
	if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
		return err
	}
	gha.SetOutput("cache", "true")
	gha.SetOutput("store-dir", filepath.Dir(db))
	gha.SetOutput("cache-key", cacheKey(w.Name, fp, getenv("GITHUB_RUN_ID"), getenv("GITHUB_RUN_ATTEMPT")))
	gha.SetOutput("cache-restore-key", cacheKeyPrefix(w.Name, fp))
	return nil
}

// runPhase profiles and compares, writes the evidence and the result, and
// returns the result's path. It fails only for trouble; the verdict's exit
// status is the post step's.
func runPhase(ctx context.Context, gha *action.IO, stdout, stderr io.Writer, getenv func(string) string, in inputs) (string, error) {
	c, err := loadConfig(gha, getenv, in.config)
	if err != nil {
		return "", err
	}
	if in.baseBranch != "" {
		c.Baseline.Branch = in.baseBranch
	}
	w, err := c.Workload(in.workload)
	if err != nil {
		gha.Error("gpugate: workload", err.Error())
		return "", err
	}
	runs, art := folders(getenv, w.Name)
	os.RemoveAll(runs)
	os.RemoveAll(art)
	db := store(getenv, in, c, w)
	if !isPostgres(db) {
		os.MkdirAll(filepath.Dir(db), 0o755)
	}
	// A pull request's code is not trusted to write to the store.
	opts := runOptions{db: db, nsys: getenv("GPUGATE_NSYS"), out: runs, readOnly: in.mode == "pr"}
	if in.mode == "refresh" {
		opts.record = true
		w.Repeat = max(w.Repeat, c.Baseline.Runs)
	}
	gha.Group("gpugate: " + slug(w.Name))
	oc, err := runWorkload(ctx, stdout, stderr, c, w, opts)
	gha.EndGroup()
	if err != nil {
		var je *runner.Error
		if errors.As(err, &je) {
			gha.Error("gpugate: the training job failed", fmt.Sprintf("job %s %s; last lines of its log (%s):\n%s", slug(je.Job), je.What, je.Log, strings.Join(je.Tail, "\n")))
		} else {
			gha.Error("gpugate", err.Error())
		}
		return "", err
	}
	rep := oc.Report
	ev, _ := readEvent(getenv)
	if in.mode == "pr" && slices.Contains(ev.Labels, in.acceptLabel) {
		gate.Accept(rep, in.acceptLabel)
	}
	for _, wn := range rep.Warnings {
		gha.Warning("gpugate: "+warningTitle(wn), wn)
	}
	if oc.Err != nil {
		gha.Error("gpugate: no comparison", oc.Err.Error())
	}

	traces, omitted, err := gatherEvidence(runs, art, in.sizeCap)
	if err != nil {
		return "", fmt.Errorf("gather evidence in %s: %v", art, err)
	}
	res := result{Version: resultVersion, Workload: slug(w.Name), PR: ev.PR, HeadSHA: ev.HeadSHA, Report: rep, Baseline: oc.Baseline,
		Machine: describeFingerprint(oc), BaseSteps: report.StepSeries(oc.Base), CandSteps: report.StepSeries(oc.Cand),
		Artifact: "gpugate-" + slug(w.Name), Traces: traces, Omitted: omitted,
		Record: "gpugate baseline refresh -config " + in.config + " (or the nightly workflow with mode: refresh)"}
	md, err := renderComment(res, getenv, "")
	if err != nil {
		return "", err
	}
	var js bytes.Buffer
	report.WriteCompareJSON(&js, rep)
	resJSON, _ := json.MarshalIndent(res, "", "  ")
	for name, data := range map[string][]byte{"report.md": md, "report.json": js.Bytes(), "gpugate-result.json": resJSON} {
		if err := os.WriteFile(filepath.Join(art, name), data, 0o644); err != nil {
			return "", err
		}
	}
	resPath := filepath.Join(art, "gpugate-result.json")
	gha.Summary(string(md))
	gha.SetOutput("verdict", string(rep.Verdict))
	gha.SetOutput("report-path", filepath.Join(art, "report.md"))
	gha.SetOutput("result-path", resPath)
	gha.SetOutput("artifacts-path", art)
	gha.SetOutput("artifact-name", res.Artifact)
	var regressed []string
	delta := ""
	for _, m := range rep.Metrics {
		if m.Name == "step_time" && !math.IsInf(m.DeltaPct, 0) && !math.IsNaN(m.DeltaPct) {
			delta = fmt.Sprintf("%.2f", m.DeltaPct)
		}
		if m.Verdict == stats.Regression {
			regressed = append(regressed, m.Name)
			if m.Gate && rep.Verdict != stats.Accepted {
				gha.Error("gpugate: "+m.Name+" regressed", fmt.Sprintf("%s: %s → %s (%s, allowance ±%.0f%%, p=%.3f)", m.Name,
					report.Value(m.Baseline.Median, m.Unit), report.Value(m.Candidate.Median, m.Unit), report.Delta(m), m.AllowancePct, m.P))
			}
		}
	}
	if delta != "" {
		gha.SetOutput("step-time-delta", delta)
	}
	gha.SetOutput("regressions", strings.Join(regressed, ","))
	compact, _ := json.Marshal(map[string]any{"workload": res.Workload, "verdict": rep.Verdict, "regressions": nonNil(regressed),
		"step_time_delta_pct": delta, "accepted": rep.Accepted != nil})
	gha.SetOutput("result-json", string(compact))
	if in.mode == "refresh" {
		gha.SetOutput("recorded", "true")
	}
	if oc.Err != nil {
		return resPath, oc.Err
	}
	return resPath, nil
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

func warningTitle(w string) string {
	switch {
	case strings.Contains(w, "stale"):
		return "stale baseline"
	case strings.Contains(w, "fingerprint"):
		return "baseline from other hardware"
	case strings.Contains(w, "no baseline"), strings.Contains(w, "nothing to compare"):
		return "no baseline"
	}
	return "warning"
}

// gatherEvidence copies what a reviewer needs into the artifact folder:
// the traces (Kineto JSON gzipped, nsys reports as they are, nsys SQLite
// exports left out: the report holds the same and is smaller), smallest
// first until the size cap, the job logs, and the per-run analyses. It
// returns the trace names in the artifact and how many were left out.
func gatherEvidence(runs, art string, sizeCap int64) (traces []string, omitted int, err error) {
	if err := os.MkdirAll(art, 0o755); err != nil {
		return nil, 0, err
	}
	type file struct {
		path, rel string
		size      int64
	}
	var tr []file
	err = filepath.WalkDir(runs, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(runs, p)
		if strings.HasPrefix(rel, "inject") || strings.Contains(rel, string(filepath.Separator)+"inject"+string(filepath.Separator)) || strings.Contains(rel, string(filepath.Separator)+"tmp"+string(filepath.Separator)) {
			return nil
		}
		n := d.Name()
		info, _ := d.Info()
		switch {
		case n == "job.log", n == "analysis.json", n == "conditions.json":
			return copyFile(p, filepath.Join(art, "logs", rel))
		case strings.HasSuffix(n, ".json"), strings.HasSuffix(n, ".json.gz"), strings.HasSuffix(n, ".nsys-rep"), strings.HasSuffix(n, ".qdrep"):
			tr = append(tr, file{p, rel, info.Size()})
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, 0, err
	}
	slices.SortFunc(tr, func(a, b file) int { return int(a.size - b.size) })
	var used int64
	for _, f := range tr {
		dst := filepath.Join(art, "traces", f.rel)
		if strings.HasSuffix(f.rel, ".json") {
			dst += ".gz"
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, 0, err
		}
		var n int64
		if strings.HasSuffix(f.rel, ".json") {
			n, err = gzipFile(f.path, dst)
		} else {
			n, err = f.size, copyFile(f.path, dst)
		}
		if err != nil {
			return nil, 0, err
		}
		if used+n > sizeCap {
			os.Remove(dst)
			omitted++
			continue
		}
		used += n
		rel, _ := filepath.Rel(art, dst)
		traces = append(traces, filepath.ToSlash(rel))
	}
	return traces, omitted, nil
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// gzipFile compresses src into dst and returns the compressed size.
func gzipFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		out.Close()
		return 0, err
	}
	if err := zw.Close(); err != nil {
		out.Close()
		return 0, err
	}
	st, err := out.Stat()
	if err != nil {
		out.Close()
		return 0, err
	}
	return st.Size(), out.Close()
}

// renderComment renders a result as the PR comment.
func renderComment(r result, getenv func(string) string, artifactURL string) ([]byte, error) {
	info := report.CommentInfo{Marker: action.Marker(slug(r.Workload)), Workload: r.Workload, Baseline: r.Baseline, Fingerprint: r.Machine,
		ArtifactName: r.Artifact, ArtifactURL: artifactURL, Traces: r.Traces, Omitted: r.Omitted,
		BaseSteps: r.BaseSteps, CandSteps: r.CandSteps, Record: r.Record}
	if s := getenv("GITHUB_SERVER_URL"); s != "" && getenv("GITHUB_REPOSITORY") != "" && getenv("GITHUB_RUN_ID") != "" {
		info.SummaryURL = fmt.Sprintf("%s/%s/actions/runs/%s", s, getenv("GITHUB_REPOSITORY"), getenv("GITHUB_RUN_ID"))
	}
	var md bytes.Buffer
	err := report.WriteComment(&md, r.Report, info)
	return md.Bytes(), err
}

// maxResult bounds gpugate-result.json: a report with its kernel lists
// and step series is far smaller.
const maxResult = 8 << 20

func readResult(path string) (result, error) {
	var r result
	if path == "" {
		return r, errors.New("no gpugate-result.json: the result input is empty")
	}
	f, err := os.Open(path)
	if err != nil {
		return r, fmt.Errorf("read result %w", trace.WithPath(err, path))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxResult+1))
	if err != nil {
		return r, fmt.Errorf("read result %s: %v", path, err)
	}
	if len(b) > maxResult {
		return r, fmt.Errorf("read result %s: larger than %d MB, not a gpugate result", path, maxResult>>20)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("read result %s: not a gpugate result: %v", path, err)
	}
	if r.Version != resultVersion || r.Report == nil {
		return r, fmt.Errorf("read result %s: version %d with report %v, want version %d with a report (made by another gpugate release?)", path, r.Version, r.Report != nil, resultVersion)
	}
	return r, nil
}

func readEvent(getenv func(string) string) (action.Event, error) {
	path := getenv("GITHUB_EVENT_PATH")
	if path == "" {
		return action.Event{}, nil
	}
	payload, err := os.ReadFile(path)
	if err != nil {
		return action.Event{}, err
	}
	return action.ParseEvent(getenv("GITHUB_EVENT_NAME"), payload)
}

func newClient(getenv func(string) string, in inputs) (*action.Client, error) {
	c, err := action.NewClient(getenv("GITHUB_API_URL"), in.token, getenv("GITHUB_REPOSITORY"), action.Options{})
	if err != nil {
		return nil, err
	}
	c.Bot = in.bot
	return c, nil
}

// postPhase posts a result of this job's run: the comment, the check run,
// the link to the evidence, and the exit status of the verdict.
func postPhase(ctx context.Context, gha *action.IO, log io.Writer, getenv func(string) string, in inputs, resPath string) error {
	r, err := readResult(resPath)
	if err != nil {
		gha.Error("gpugate", err.Error())
		return err
	}
	artifactURL := getenv("GPUGATE_ARTIFACT_URL")
	if artifactURL != "" {
		gha.Summary(fmt.Sprintf("\n**Evidence:** artifact `%s` — %s (traces, report as Markdown and JSON, job log).\n", r.Artifact, artifactURL))
	}
	md, err := renderComment(r, getenv, artifactURL)
	if err != nil {
		return err
	}
	ev, _ := readEvent(getenv)
	verdict := r.Report.Verdict
	if ev.PR != 0 && in.comment != "never" {
		if in.token == "" {
			readOnly(gha, ev.Fork, "no github-token input")
		} else if c, err := newClient(getenv, in); err != nil {
			return err
		} else {
			// on-regression: a regression creates the comment; a later pass
			// edits it, so that no ❌ is left standing.
			create := in.comment == "always" || verdict == stats.Regression
			cm, err := c.Upsert(ctx, ev.PR, action.Marker(slug(r.Workload)), string(md), create)
			switch {
			case errors.Is(err, action.ErrReadOnly):
				readOnly(gha, ev.Fork, err.Error())
			case err != nil:
				gha.Error("gpugate: no PR comment", err.Error())
				return err
			case !cm.Skipped:
				verb := map[bool]string{true: "created", false: "updated"}[cm.Created]
				fmt.Fprintf(log, "gpugate: %s comment %d on pull request #%d\n", verb, cm.ID, ev.PR)
				gha.SetOutput("comment-url", cm.URL)
			}
		}
	}
	if in.checkRun && ev.HeadSHA != "" && in.token != "" {
		conclusion := map[stats.Verdict]string{stats.Pass: "success", stats.Regression: "failure",
			stats.Accepted: "success", stats.NoBaseline: "neutral", stats.Improvement: "success"}[verdict]
		if verdict == stats.Inconclusive {
			conclusion, _, _ = inconclusiveOutcome(in.onInconclusive)
		}
		if c, err := newClient(getenv, in); err == nil {
			if err := c.CheckRun(ctx, "gpugate / "+slug(r.Workload), ev.HeadSHA, conclusion, "gpugate: "+string(verdict), string(md)); err != nil {
				gha.Warning("gpugate: no check run", err.Error())
			}
		}
	}
	if verdict == stats.Inconclusive {
		if _, fail, _ := inconclusiveOutcome(in.onInconclusive); !fail {
			return nil
		}
	}
	if !in.failOnRegression && verdict == stats.Regression {
		return nil
	}
	return verdictError(verdict, false)
}

// inconclusiveOutcome maps the on-inconclusive input to the check run's
// conclusion and whether the step fails (exit 3): fail fails both; neutral
// (the default) gives a neutral check and a green step, since the runs
// could not decide and a red step would blame the pull request; pass
// gives a successful check.
func inconclusiveOutcome(mode string) (conclusion string, fail bool, err error) {
	switch mode {
	case "fail":
		return "failure", true, nil
	case "neutral", "":
		return "neutral", false, nil
	case "pass":
		return "success", false, nil
	}
	return "", false, fmt.Errorf("input on-inconclusive: %q is not fail, neutral or pass", mode)
}

// readOnly explains, in the job summary, why there is no comment and how to
// get one.
func readOnly(gha *action.IO, fork bool, detail string) {
	why := "the token given to gpugate cannot write pull request comments (" + detail + ")"
	if fork {
		why = "this pull request comes from a fork, and GitHub gives such runs a read-only token"
	}
	gha.Warning("gpugate: no PR comment", why+"; the report is in the job summary")
	gha.Summary("\n> **No PR comment:** " + why + ". To comment anyway, upload the artifact (output `artifacts-path`, which holds `gpugate-result.json`) " +
		"and post it from a second workflow on `workflow_run` with `mode: comment` (see examples/workflows/gpugate-fork-safe-*.yml in gpugate). " +
		"Give it `permissions: pull-requests: write`.\n")
}

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// commentMode posts the result of a run of untrusted code (the fork
// flow): the artifact is data that must agree with the pull request that
// this job finds itself, from the workflow_run event and the API.
func commentMode(ctx context.Context, gha *action.IO, log io.Writer, getenv func(string) string, in inputs) error {
	refuse := func(format string, args ...any) error {
		err := fmt.Errorf("nothing posted: "+format, args...)
		gha.Error("gpugate: artifact refused", err.Error())
		// The reason quotes the artifact: a code span in the summary, so
		// that none of it renders as Markdown.
		why := strings.NewReplacer("\n", " ", "\r", " ", "`", "'").Replace(err.Error())
		gha.Summary("\n> **gpugate posted no comment:** `" + why + "`\n")
		return err
	}
	ev, err := readEvent(getenv)
	if err != nil {
		return refuse("%v", err)
	}
	run := ev.Run
	switch {
	case run == nil:
		return refuse("mode comment runs on a workflow_run event, not %q: it takes the pull request from the completed run", ev.Name)
	case run.Conclusion != "success":
		return refuse("the run %d concluded %q, not success", run.ID, run.Conclusion)
	case run.Event != "pull_request" && run.Event != "pull_request_target":
		return refuse("the run %d was started by %q, not by a pull request", run.ID, run.Event)
	case !shaRE.MatchString(run.HeadSHA):
		return refuse("the run's head SHA %q is not a commit id", run.HeadSHA)
	}
	r, err := readResult(in.result)
	if err != nil {
		return refuse("%v", err)
	}
	if in.token == "" {
		return refuse("no github-token input")
	}
	c, err := newClient(getenv, in)
	if err != nil {
		return refuse("%v", err)
	}
	pr, err := c.FindPR(ctx, run.HeadRepo, run.HeadBranch, run.HeadSHA)
	if err != nil {
		return refuse("%v", err)
	}
	// The artifact's own claims must agree with what GitHub says.
	switch {
	case r.HeadSHA != run.HeadSHA:
		return refuse("the artifact is for commit %q but the run was on %s", r.HeadSHA, run.HeadSHA)
	case r.PR != 0 && r.PR != pr.Number:
		return refuse("the artifact names pull request #%d but commit %s is the head of #%d", r.PR, run.HeadSHA, pr.Number)
	case config.CheckName(r.Workload) != nil:
		return refuse("the artifact's workload name %q is not a plain name", r.Workload)
	}
	if err := checkReport(r.Report); err != nil {
		return refuse("%v", err)
	}
	// Re-derive the verdict from the metrics rather than believe the
	// artifact, and take acceptance from the pull request's labels.
	rep := r.Report
	rederive(rep)
	if slices.Contains(pr.Labels, in.acceptLabel) {
		gate.Accept(rep, in.acceptLabel)
	}
	r.Artifact = "gpugate-" + r.Workload
	artifactURL := ""
	if s := getenv("GITHUB_SERVER_URL"); s != "" && getenv("GITHUB_REPOSITORY") != "" {
		artifactURL = fmt.Sprintf("%s/%s/actions/runs/%d", s, getenv("GITHUB_REPOSITORY"), run.ID)
	}
	md, err := renderComment(r, getenv, artifactURL)
	if err != nil {
		return err
	}
	gha.Summary(string(md))
	if in.comment == "never" {
		return nil
	}
	cm, err := c.Upsert(ctx, pr.Number, action.Marker(r.Workload), string(md), in.comment == "always" || rep.Verdict == stats.Regression)
	if err != nil {
		gha.Error("gpugate: no PR comment", err.Error())
		return err
	}
	if !cm.Skipped {
		fmt.Fprintf(log, "gpugate: posted the result of run %d to pull request #%d (comment %d)\n", run.ID, pr.Number, cm.ID)
		gha.SetOutput("comment-url", cm.URL)
	}
	gha.SetOutput("verdict", string(rep.Verdict))
	return nil
}

var findingRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,40}$`)

// checkReport refuses a report that no gpugate wrote: metrics gpugate does
// not compute, verdicts it does not give, finding ids it does not have.
// rederive sets an artifact's verdict from its metrics rather than
// believe it, and then voids it by the run conditions the report carries,
// with gpugate's own margins, as the run did (gate.ApplyConditions): a
// regression on a throttled GPU stays inconclusive, and a pass against a
// baseline that ran under worse conditions does not turn into a pass.
func rederive(rep *gate.Report) {
	rep.Accepted = nil
	if len(rep.Metrics) > 0 {
		rep.Verdict = stats.Overall(rep.Metrics)
	} else if rep.Verdict != stats.NoBaseline && rep.Verdict != stats.Inconclusive {
		rep.Verdict = stats.NoBaseline
	}
	if rc := rep.Conditions; rc != nil {
		// ApplyConditions states its reasons again.
		rep.Warnings = slices.DeleteFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, "run conditions void the ") })
		gate.ApplyConditions(rep, rc.Baseline, rc.Candidate, gate.DefaultConditionMargins, "not recorded")
	}
}

func checkReport(r *gate.Report) error {
	verdicts := []stats.Verdict{stats.Pass, stats.Regression, stats.Improvement, stats.Inconclusive, stats.NoBaseline, stats.Accepted}
	if !slices.Contains(verdicts, r.Verdict) {
		return fmt.Errorf("the artifact's verdict %q is not one gpugate gives", r.Verdict)
	}
	for _, m := range r.Metrics {
		known, ok := analysis.MetricByName(m.Name)
		if !ok || known.Name != m.Name {
			return fmt.Errorf("the artifact has a metric %q that gpugate does not compute", m.Name)
		}
		if !slices.Contains(verdicts[:4], m.Verdict) {
			return fmt.Errorf("the artifact's metric %s has verdict %q", m.Name, m.Verdict)
		}
	}
	for _, f := range r.Findings {
		if !findingRE.MatchString(f.ID) {
			return fmt.Errorf("the artifact has a finding %q that gpugate does not make", f.ID)
		}
	}
	return nil
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
