package action

// The action's flow: what action.yml's steps run (gpugate action), phase by
// phase. cmd/gpugate parses nothing here but maps the Outcome to an exit
// status, as it does for run, ab and compare.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/internal/newfile"
	"github.com/gpugate/gpugate/internal/safefile"
	"github.com/gpugate/gpugate/pipeline"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/stats"
)

// Env is what the action runs in: its environment (GPUGATE_* inputs and
// the runner's variables), its output streams, and how a workload's
// pipeline runs.
type Env struct {
	Getenv         func(string) string
	Stdout, Stderr io.Writer
	// Run runs a workload's pipeline, as gpugate run does: the command fills
	// in what it knows (the checkout's branch and commit, its version).
	// Nil runs pipeline.Run with the options as they are.
	Run func(ctx context.Context, o pipeline.Options) (*pipeline.Outcome, error)
}

// Outcome is what a run of the action decides about the exit status. An
// error returned beside it is trouble (exit 2).
type Outcome struct {
	// Verdict is the verdict of the compared run; empty when this phase or
	// mode gives none (prepare, run, refresh, comment).
	Verdict stats.Verdict
	// Exit: the exit status follows Verdict. False when there is no verdict,
	// or fail-on-regression is off and the verdict is a regression or
	// inconclusive.
	Exit bool
}

// inputs are the action's inputs, checked.
type inputs struct {
	phase, mode, config, workload, db, baseBranch, comment, result, token, acceptLabel, bot, prInfo string
	alert, webhook                                                                                  string // refresh mode's alert (alert.go)
	// onInconclusive is what an inconclusive verdict does: fail, neutral
	// (the default) or pass (inconclusiveOutcome).
	onInconclusive                    string
	failOnRegression, checkRun, cache bool
	sizeCap                           int64 // bytes
}

func boolInput(v string, def bool) (bool, error) {
	if v == "" {
		return def, nil
	}
	return strconv.ParseBool(v)
}

func readInputs(gha *IO) (inputs, error) {
	in := inputs{phase: gha.Input("phase"), mode: gha.Input("mode"), config: gha.Input("config"), workload: gha.Input("workload"),
		db: gha.Input("baseline-db"), baseBranch: gha.Input("base-branch"), comment: gha.Input("comment"), result: gha.Input("result"),
		token: gha.Input("github-token"), acceptLabel: gha.Input("accept-label"), bot: gha.Input("bot-login"), prInfo: gha.Input("pr-info")}
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&in.mode, "pr")
	def(&in.comment, "always")
	def(&in.config, "perf.yaml")
	def(&in.acceptLabel, "gpugate/accept-regression")
	def(&in.bot, BotLogin)
	in.onInconclusive = gha.Input("on-inconclusive")
	def(&in.onInconclusive, "neutral")
	if _, _, err := inconclusiveOutcome(in.onInconclusive); err != nil {
		return in, err
	}
	in.alert, in.webhook = gha.Input("alert"), gha.Input("webhook")
	def(&in.alert, "issue")
	gha.Mask(in.webhook)
	if in.alert != "issue" && in.alert != "none" {
		return in, fmt.Errorf("input alert: %q is not issue or none", in.alert)
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

// Run runs the action: the phase GPUGATE_PHASE names in the mode
// GPUGATE_MODE names (see gpugate help action).
func Run(ctx context.Context, env Env) (Outcome, error) {
	getenv, stdout, stderr := env.Getenv, env.Stdout, env.Stderr
	run := env.Run
	if run == nil {
		run = pipeline.Run
	}
	gha := New(getenv, stdout)
	gha.Mask(getenv("GPUGATE_GITHUB_TOKEN"))
	in, err := readInputs(gha)
	if err != nil {
		gha.Error("gpugate: bad input", err.Error())
		return Outcome{}, err
	}
	if in.mode == "comment" {
		return Outcome{}, commentMode(ctx, gha, stderr, getenv, in)
	}
	switch {
	case in.phase == "prepare":
		return Outcome{}, preparePhase(ctx, gha, getenv, in)
	case in.phase == "post" && in.mode == "refresh":
		// The alert runs in the post step, which holds the token; the run
		// step, which runs the job, never does.
		return Outcome{}, alertPhase(ctx, gha, getenv, in)
	case in.phase == "post":
		return postPhase(ctx, gha, stderr, getenv, in, in.result, getenv("GPUGATE_CONFIG_DIGEST"), getenv("GPUGATE_RESULT_DIGEST"))
	}
	resPath, digests, err := runPhase(ctx, gha, stdout, stderr, getenv, run, in)
	if err == nil && in.phase == "" && in.mode == "refresh" {
		err = alertPhase(ctx, gha, getenv, in)
	}
	if err != nil || in.phase == "run" || in.mode == "refresh" {
		return Outcome{}, err
	}
	return postPhase(ctx, gha, stderr, getenv, in, resPath, digests[0], digests[1])
}

// loadConfig reads and checks perf.yaml, annotating every error at its
// line and column.
func loadConfig(gha *IO, getenv func(string) string, path string) (*config.Config, error) {
	c, _, err := loadConfigDigest(gha, getenv, path)
	return c, err
}

// loadConfigDigest is loadConfig that also returns the sha256 of the
// bytes it parsed: the run step states it (output config-digest), and the
// post step judges with perf.yaml only if it still has that digest, so
// that a job that rewrote perf.yaml while it ran (gate: [] or allowances
// of 5000%) decides nothing.
func loadConfigDigest(gha *IO, getenv func(string) string, path string) (*config.Config, string, error) {
	return loadConfigWant(gha, getenv, path, "")
}

// maxConfig is the limit of perf.yaml as the Action reads it.
const maxConfig = 4 << 20

// loadConfigWant is loadConfigDigest for a perf.yaml the job could have
// replaced (the post step's): never waiting on a FIFO, a regular file of
// at most maxConfig bytes (safefile.ReadFileFollow: a perf.yaml may be a
// link in the user's repository), and, when want is not empty, refused
// unparsed unless its sha256 is want, so that no parse error quotes a
// file the job put in its place (a link to a secret).
func loadConfigWant(gha *IO, getenv func(string) string, path, want string) (*config.Config, string, error) {
	var data []byte
	var err error
	if want == "" { // before the job: the user's file as it is
		data, err = os.ReadFile(path)
	} else {
		data, err = safefile.ReadFileFollow(path, maxConfig)
	}
	if err == nil && want != "" && digest(data) != want {
		return nil, digest(data), fmt.Errorf("%s changed while the job ran (sha256 %s, read before the job as %s): its settings cannot judge the run", path, digest(data), want)
	}
	var c *config.Config
	if err == nil {
		c, err = config.Parse(data, path)
	}
	if err != nil {
		annotateConfig(gha, getenv, path, err)
		return nil, "", err
	}
	return c, digest(data), nil
}

// loadWorkload loads perf.yaml and the workload the inputs name,
// annotating what is wrong with either.
func loadWorkload(gha *IO, getenv func(string) string, in inputs) (*config.Config, *config.Workload, error) {
	c, err := loadConfig(gha, getenv, in.config)
	if err != nil {
		return nil, nil, err
	}
	w, err := c.Workload(in.workload)
	if err != nil {
		gha.Error("gpugate: workload", err.Error())
		return nil, nil, err
	}
	return c, w, nil
}

func annotateConfig(gha *IO, getenv func(string) string, path string, err error) {
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

func preparePhase(ctx context.Context, gha *IO, getenv func(string) string, in inputs) error {
	c, w, err := loadWorkload(gha, getenv, in)
	if err != nil {
		return err
	}
	db := store(getenv, in, c, w)
	_, art := Folders(getenv, w.Name)
	maskStore(gha, db)
	// The store travels to the later steps in a file, never in a step's
	// environment or an output: a step's environment is readable in
	// /proc/PID/environ by every process of the user while the step runs
	// (the job's included), and outputs reach the workflow's logs and
	// expressions. The steps pass the file's path to gpugate with
	// -db-file, which gpugate reads before the job starts and covers in
	// the job's mount namespace. The output db is the store with its
	// password masked (baseline.Mask).
	file, err := writeStoreFile(getenv, db)
	if err != nil {
		return fmt.Errorf("write the store's file: %w", err)
	}
	gha.SetOutput("db", baseline.Mask(db))
	gha.SetOutput("db-file", file)
	gha.SetOutput("db-dir", filepath.Dir(file))
	gha.SetOutput("artifact-name", "gpugate-"+Slug(w.Name))
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
	gha.SetOutput("cache-key", CacheKey(w.Name, fp, getenv("GITHUB_RUN_ID"), getenv("GITHUB_RUN_ATTEMPT")))
	gha.SetOutput("cache-restore-key", CacheKeyPrefix(w.Name, fp))
	return nil
}

// maskStore masks the password of a store's URL, and the URL, in every
// log line that would show them.
func maskStore(gha *IO, db string) {
	if u, err := url.Parse(db); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			gha.Mask(pw)
			gha.Mask(db)
		}
	} else if masked := baseline.Mask(db); masked != db {
		gha.Mask(db)
	}
}

// writeStoreFile writes the store (a path or a URL with its password) to a
// new file only this user can read, in a new folder of its own (mode
// 0700) under RUNNER_TEMP, which the runner empties after the job, and
// returns its path.
func writeStoreFile(getenv func(string) string, db string) (string, error) {
	tmp := getenv("RUNNER_TEMP")
	if tmp == "" {
		tmp = os.TempDir()
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(tmp, "gpugate-store-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "db")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(db + "\n"); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// runPhase profiles and compares, writes the evidence and the result, and
// returns the result's path and the digests of perf.yaml (as read before
// the job ran) and of the result (as written). It fails only for trouble;
// the verdict's exit status is the post step's.
func runPhase(ctx context.Context, gha *IO, stdout, stderr io.Writer, getenv func(string) string,
	run func(context.Context, pipeline.Options) (*pipeline.Outcome, error), in inputs) (resPath string, digests [2]string, err error) {
	c, cfgDigest, err := loadConfigDigest(gha, getenv, in.config)
	if err != nil {
		return "", digests, err
	}
	if in.baseBranch != "" {
		c.Baseline.Branch = in.baseBranch
	}
	w, err := c.Workload(in.workload)
	if err != nil {
		gha.Error("gpugate: workload", err.Error())
		return "", digests, err
	}
	runs, art := Folders(getenv, w.Name)
	os.RemoveAll(runs)
	os.RemoveAll(art)
	db := store(getenv, in, c, w)
	maskStore(gha, db)
	if !isPostgres(db) {
		os.MkdirAll(filepath.Dir(db), 0o755)
	}
	// A pull request's code is not trusted to write to the store.
	opts := pipeline.Options{Config: c, Workload: w, DB: db, Nsys: getenv("GPUGATE_NSYS"), Out: runs, ReadOnly: in.mode == "pr", Stdout: stdout, Log: stderr}
	if in.mode == "refresh" {
		opts.Record = true
		if int(w.Repeat) < c.Baseline.Runs { // repeat: auto too
			w.Repeat = config.Repeat(c.Baseline.Runs)
		}
	}
	gha.Group("gpugate: " + Slug(w.Name))
	oc, err := run(ctx, opts)
	gha.EndGroup()
	if err != nil {
		var je *runner.Error
		if errors.As(err, &je) {
			gha.Error("gpugate: the training job failed", fmt.Sprintf("job %s %s; last lines of its log (%s):\n%s", Slug(je.Job), je.What, je.Log, strings.Join(je.Tail, "\n")))
		} else {
			gha.Error("gpugate", err.Error())
		}
		return "", digests, err
	}
	rep := oc.Report
	ev, _ := readEvent(getenv)
	if in.mode == "pr" && slices.Contains(ev.Labels, in.acceptLabel) {
		gate.Accept(rep, in.acceptLabel)
	}
	for _, wn := range rep.Warnings {
		gha.Warning("gpugate: "+warningTitle(wn), wn)
	}
	if rep.Recorded != "" && rep.Verdict != stats.Inconclusive {
		gha.Notice("gpugate: baseline recorded", fmt.Sprintf("%d run(s) of %s recorded as the baseline of %s", rep.Candidate.Runs, Slug(w.Name), rep.Recorded))
	}
	if oc.Err != nil {
		gha.Error("gpugate: no comparison", oc.Err.Error())
	}

	// The job has ended: the evidence folder is made now, anew (freshDir).
	if err := freshDir(art); err != nil {
		return "", digests, fmt.Errorf("make the evidence folder %s: %v", art, err)
	}
	traces, omitted, err := gatherEvidence(runs, art, in.sizeCap, evidenceFiles(runs, oc.Cand, max(int(w.Repeat), len(oc.Cand))))
	if err != nil {
		return "", digests, fmt.Errorf("gather evidence in %s: %v", art, err)
	}
	picture, err := writeStepPicture(art, oc)
	if err != nil {
		gha.Warning("gpugate: step picture", err.Error())
	}
	// The chart plots the steps step time was judged on, as the comment
	// job's (judge) does from the samples.
	baseSteps, candSteps := rep.StepSeries(oc.Base, oc.Cand, oc.BaseTiming, oc.CandTiming)
	res := Result{Version: ResultVersion, Workload: Slug(w.Name), PR: ev.PR, HeadSHA: ev.HeadSHA, Report: rep, Baseline: oc.Baseline,
		Machine:  describeFingerprint(oc),
		Artifact: "gpugate-" + Slug(w.Name), Traces: traces, Omitted: omitted,
		Record: "gpugate baseline refresh -config " + in.config + " (or the nightly workflow with mode: refresh)", Samples: map[string]MetricSamples{},
		StepPicture: picture, BaseSteps: baseSteps, CandSteps: candSteps}
	for _, m := range rep.Metrics {
		if am, ok := analysis.MetricByName(m.Name); ok {
			// The runs the gate judged: a time metric leaves out the
			// runs whose host was busy.
			// Step time from the timing runs when the gate judged it so.
			base, cand := rep.JudgedSamples(am, oc.Base, oc.Cand, oc.BaseTiming, oc.CandTiming)
			res.Samples[m.Name] = MetricSamples{Baseline: finiteRuns(base), Candidate: finiteRuns(cand)}
		}
	}
	if len(rep.Metrics) == 0 {
		// No baseline: the candidate's samples all the same, so that the
		// post step and the comment job can tell this result from one whose
		// metrics were deleted (judge).
		for _, am := range analysis.Metrics {
			if cs := gate.Samples(oc.Cand, am); cs != nil {
				res.Samples[am.Name] = MetricSamples{Baseline: [][]float64{}, Candidate: finiteRuns(cs)}
			}
		}
	}
	md, err := RenderComment(res, getenv, "")
	if err != nil {
		return "", digests, err
	}
	var js bytes.Buffer
	report.WriteCompareJSON(&js, rep)
	resJSON, _ := json.MarshalIndent(res, "", "  ")
	for name, data := range map[string][]byte{"report.md": md, "report.json": js.Bytes(), "gpugate-result.json": resJSON} {
		if err := newfile.Write(filepath.Join(art, name), data); err != nil {
			return "", digests, err
		}
	}
	resPath = filepath.Join(art, "gpugate-result.json")
	digests = [2]string{cfgDigest, digest(resJSON)}
	gha.SetOutput("config-digest", digests[0])
	gha.SetOutput("result-digest", digests[1])
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
		// Gated metrics only: an ungated metric that moved explains the
		// verdict and is no regression of the check (issue 28).
		if m.Verdict == stats.Regression && m.Gate {
			regressed = append(regressed, m.Name)
			if rep.Verdict != stats.Accepted {
				gha.Error("gpugate: "+m.Name+" regressed", fmt.Sprintf("%s: %s → %s mean per run (%s, allowance ±%.0f%%, p=%.3f)", m.Name,
					report.Value(m.Baseline.Value, m.Unit), report.Value(m.Candidate.Value, m.Unit), report.Delta(m), m.AllowancePct, m.P))
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
		return resPath, digests, oc.Err
	}
	return resPath, digests, nil
}

// finiteRuns drops the values JSON cannot hold (NaN, ±Inf), which the
// comparison leaves out anyway.
func finiteRuns(runs [][]float64) [][]float64 {
	out := make([][]float64, len(runs))
	for i, r := range runs {
		out[i] = []float64{}
		for _, v := range r {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				out[i] = append(out[i], v)
			}
		}
	}
	return out
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

func readEvent(getenv func(string) string) (Event, error) {
	path := getenv("GITHUB_EVENT_PATH")
	if path == "" {
		return Event{}, nil
	}
	payload, err := os.ReadFile(path)
	if err != nil {
		return Event{}, err
	}
	return ParseEvent(getenv("GITHUB_EVENT_NAME"), payload)
}

func newClient(getenv func(string) string, in inputs) (*Client, error) {
	c, err := NewClient(getenv("GITHUB_API_URL"), in.token, getenv("GITHUB_REPOSITORY"), Options{})
	if err != nil {
		return nil, err
	}
	c.Bot = in.bot
	return c, nil
}

// postPhase posts a result of this job's run: the comment, the check run,
// the link to the evidence, and the exit status of the verdict. The result
// was written after the job ran, but a process the job left behind could
// have edited it, or perf.yaml, since: the result must have the digest the
// run step stated (resDigest, when given), and it is judged again from its
// samples with perf.yaml's settings (judge), perf.yaml having the digest
// it had when the run step read it before the job (cfgDigest, when
// given). What does not hold is refused: exit 2 and a comment saying so.
func postPhase(ctx context.Context, gha *IO, log io.Writer, getenv func(string) string, in inputs, resPath, cfgDigest, resDigest string) (Outcome, error) {
	ev, _ := readEvent(getenv)
	workload := "" // the comment's, once known
	refuse := func(err error) (Outcome, error) {
		err = fmt.Errorf("result refused: %w", err)
		gha.Error("gpugate: result refused", err.Error())
		gha.Summary(refusalMarkdown("", err))
		if workload != "" && ev.PR != 0 && in.comment != "never" && in.token != "" {
			if c, cerr := newClient(getenv, in); cerr == nil {
				if _, cerr := c.Upsert(ctx, ev.PR, Marker(workload), refusalMarkdown(Marker(workload), err), true); cerr != nil {
					gha.Warning("gpugate: no PR comment", cerr.Error())
				}
			}
		}
		return Outcome{}, err
	}
	c, _, err := loadConfigWant(gha, getenv, in.config, cfgDigest)
	if err != nil {
		return refuse(err)
	}
	w, err := c.Workload(in.workload)
	if err != nil {
		return refuse(err)
	}
	workload = Slug(w.Name)
	if resDigest != "" {
		d, err := fileDigest(resPath)
		if err != nil {
			return refuse(err)
		}
		if d != resDigest {
			return refuse(fmt.Errorf("%s is not the file the run step wrote (sha256 %s, the run step's %s): edited since", resPath, d, resDigest))
		}
	}
	r, err := ReadResult(resPath)
	if err != nil {
		return refuse(err)
	}
	if r.Workload != Slug(w.Name) {
		return refuse(fmt.Errorf("the result is of workload %q, not %q", r.Workload, Slug(w.Name)))
	}
	if err := checkReport(r.Report); err != nil {
		return refuse(err)
	}
	if err := judge(&r, c, w); err != nil {
		return refuse(err)
	}
	if slices.Contains(ev.Labels, in.acceptLabel) {
		gate.Accept(r.Report, in.acceptLabel)
	}
	artifactURL := getenv("GPUGATE_ARTIFACT_URL")
	if artifactURL != "" {
		gha.Summary(fmt.Sprintf("\n**Evidence:** artifact `%s` — %s (traces, report as Markdown and JSON, job log).\n", r.Artifact, artifactURL))
	}
	md, err := RenderComment(r, getenv, artifactURL)
	if err != nil {
		return Outcome{}, err
	}
	verdict := r.Report.Verdict
	if ev.PR != 0 && in.comment != "never" {
		if in.token == "" {
			readOnly(gha, ev.Fork, "no github-token input")
		} else if c, err := newClient(getenv, in); err != nil {
			return Outcome{}, err
		} else {
			// on-regression: a regression creates the comment; a later pass
			// edits it, so that no ❌ is left standing.
			create := in.comment == "always" || verdict == stats.Regression
			cm, err := c.Upsert(ctx, ev.PR, Marker(Slug(r.Workload)), string(md), create)
			switch {
			case errors.Is(err, ErrReadOnly):
				readOnly(gha, ev.Fork, err.Error())
			case err != nil:
				gha.Error("gpugate: no PR comment", err.Error())
				return Outcome{}, err
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
			if err := c.CheckRun(ctx, "gpugate / "+Slug(r.Workload), ev.HeadSHA, conclusion, "gpugate: "+string(verdict), string(md)); err != nil {
				gha.Warning("gpugate: no check run", err.Error())
			}
		}
	}
	if verdict == stats.Inconclusive {
		if _, fail, _ := inconclusiveOutcome(in.onInconclusive); !fail {
			return Outcome{Verdict: verdict}, nil
		}
	}
	if !in.failOnRegression && verdict == stats.Regression {
		return Outcome{Verdict: verdict}, nil
	}
	return Outcome{Verdict: verdict, Exit: true}, nil
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
func readOnly(gha *IO, fork bool, detail string) {
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
func commentMode(ctx context.Context, gha *IO, log io.Writer, getenv func(string) string, in inputs) error {
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
	r, err := ReadResult(in.result)
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
	var info *PRInfo
	if in.prInfo != "" {
		if info, err = ReadPRInfo(in.prInfo); err != nil {
			return refuse("%v", err)
		}
	}
	var pr PR
	head := run.HeadSHA
	switch run.Event {
	case "pull_request_target":
		// Such a run ran on the base branch: its head_sha and head_branch
		// are the base's, and no open pull request has them as its head.
		// The pull request comes from part 1's first job, which ran no
		// pull request code, and is checked against the API.
		if info == nil {
			return refuse("the run %d ran on pull_request_target, whose workflow_run carries the base branch's commit %s, not the pull request's: give pr-info, the file that part 1's first job uploads (examples/workflows/gpugate-fork-safe-run.yml)", run.ID, run.HeadSHA)
		}
		if pr, err = c.GetPR(ctx, info.PR); err != nil {
			return refuse("%v", err)
		}
		switch {
		case pr.State != "open":
			return refuse("pull request #%d is %s", pr.Number, pr.State)
		case !strings.EqualFold(pr.BaseRepo, c.Repository()) || !strings.EqualFold(run.HeadRepo, c.Repository()):
			return refuse("pull request #%d targets %s and the run ran in %s, not both in %s", pr.Number, pr.BaseRepo, run.HeadRepo, c.Repository())
		case pr.BaseRef != run.HeadBranch:
			return refuse("pull request #%d targets branch %q but the run ran on %q", pr.Number, pr.BaseRef, run.HeadBranch)
		case pr.HeadSHA != info.HeadSHA:
			return refuse("pull request #%d has head %s, not %s that was measured: pushed to since", pr.Number, pr.HeadSHA, info.HeadSHA)
		case info.HeadRepo != "" && !strings.EqualFold(info.HeadRepo, pr.HeadRepo):
			return refuse("pull request #%d comes from %s, not %s", pr.Number, pr.HeadRepo, info.HeadRepo)
		}
		head = info.HeadSHA
	default:
		// A pull_request run ran on the pull request's own head.
		if pr, err = c.FindPR(ctx, run.HeadRepo, run.HeadBranch, run.HeadSHA); err != nil {
			return refuse("%v", err)
		}
		if info != nil && (info.PR != pr.Number || info.HeadSHA != run.HeadSHA) {
			return refuse("pr-info names #%d at %s, but the run was on %s, the head of #%d", info.PR, info.HeadSHA, run.HeadSHA, pr.Number)
		}
	}
	// The artifact's own claims must agree with what GitHub says.
	switch {
	case r.HeadSHA != head:
		return refuse("the artifact is for commit %q but pull request #%d was measured at %s", r.HeadSHA, pr.Number, head)
	case r.PR != 0 && r.PR != pr.Number:
		return refuse("the artifact names pull request #%d but commit %s is the head of #%d", r.PR, head, pr.Number)
	case config.CheckName(r.Workload) != nil:
		return refuse("the artifact's workload name %q is not a plain name", r.Workload)
	}
	if err := checkReport(r.Report); err != nil {
		return refuse("%v", err)
	}
	// Judge every metric again from its samples with gpugate's own rule
	// and the settings of the trusted perf.yaml (this workflow's checkout,
	// the base branch's), re-derive the verdict from them, and take
	// acceptance from the pull request's labels: the artifact's verdicts,
	// gate flags, allowances, level and max_runs are not believed. From
	// here on the pull request is known: a refusal is posted to it, so
	// that no earlier comment's verdict stands.
	refusePosted := func(err error) error {
		err = fmt.Errorf("result refused: %w", err)
		gha.Error("gpugate: artifact refused", err.Error())
		gha.Summary(refusalMarkdown("", err))
		if in.comment != "never" {
			if _, cerr := c.Upsert(ctx, pr.Number, Marker(r.Workload), refusalMarkdown(Marker(r.Workload), err), true); cerr != nil {
				gha.Warning("gpugate: no PR comment", cerr.Error())
			}
		}
		return err
	}
	cfg, err := loadConfig(gha, getenv, in.config)
	if err != nil {
		return refusePosted(fmt.Errorf("the trusted perf.yaml: %w", err))
	}
	w, err := cfg.Workload(r.Workload)
	if err != nil {
		return refusePosted(fmt.Errorf("the trusted perf.yaml %s: %w", in.config, err))
	}
	rep := r.Report
	if err := judge(&r, cfg, w); err != nil {
		return refusePosted(err)
	}
	if slices.Contains(pr.Labels, in.acceptLabel) {
		gate.Accept(rep, in.acceptLabel)
	}
	r.Artifact = "gpugate-" + r.Workload
	artifactURL := ""
	if s := getenv("GITHUB_SERVER_URL"); s != "" && getenv("GITHUB_REPOSITORY") != "" {
		artifactURL = fmt.Sprintf("%s/%s/actions/runs/%d", s, getenv("GITHUB_REPOSITORY"), run.ID)
	}
	md, err := RenderComment(r, getenv, artifactURL)
	if err != nil {
		return err
	}
	gha.Summary(string(md))
	if in.comment == "never" {
		return nil
	}
	cm, err := c.Upsert(ctx, pr.Number, Marker(r.Workload), string(md), in.comment == "always" || rep.Verdict == stats.Regression)
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

// firstRun is the chart's series: the first run's step times, at most
// 200 (report.StepSeries).
func firstRun(runs [][]float64) []float64 {
	if len(runs) == 0 {
		return nil
	}
	return runs[0][:min(len(runs[0]), 200)]
}

// refusalMarkdown is the comment (under marker; the job summary without
// one) that says a result was refused: it replaces whatever verdict an
// earlier comment showed. The reason quotes the artifact: a code span.
func refusalMarkdown(marker string, err error) string {
	var b strings.Builder
	if marker != "" {
		b.WriteString(marker + "\n")
	}
	b.WriteString("### gpugate: ⛔ result refused\n\n")
	b.WriteString("gpugate did not judge this run: " + escape.CodeSpan(err.Error()) + "\n\n")
	b.WriteString("No verdict stands for it (an earlier one in this comment is replaced). The run's evidence is in its artifact; run the workflow again to get one.\n")
	return b.String()
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

func describeFingerprint(oc *pipeline.Outcome) string {
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
