package action

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/safefile"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/trace"
)

// ResultVersion is the version of gpugate-result.json; 3 added samples.
const ResultVersion = 3

// Result is what a run leaves for the post step and, in the fork flow, for
// the privileged comment job: data, never Markdown. The comment is
// rendered from it, with every name escaped, by whoever posts it.
type Result struct {
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
	// Samples are each compared metric's per-step values, one list per
	// run, by metric name: the comment job judges every metric again
	// from them (gate.Rejudge) rather than believe the report's verdicts.
	Samples map[string]MetricSamples `json:"samples"`
	// StepPicture: the artifact holds step.svg (writeStepPicture).
	StepPicture bool `json:"step_picture,omitempty"`
}

// MetricSamples are one metric's values on both sides (gate.Samples).
type MetricSamples struct {
	Baseline  [][]float64 `json:"baseline"`
	Candidate [][]float64 `json:"candidate"`
}

// RenderComment renders a result as the PR comment.
func RenderComment(r Result, getenv func(string) string, artifactURL string) ([]byte, error) {
	info := report.CommentInfo{Marker: Marker(Slug(r.Workload)), Workload: r.Workload, Baseline: r.Baseline, Fingerprint: r.Machine,
		ArtifactName: r.Artifact, ArtifactURL: artifactURL, Traces: r.Traces, Omitted: r.Omitted,
		BaseSteps: r.BaseSteps, CandSteps: r.CandSteps, Record: r.Record, StepPicture: r.StepPicture}
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

func ReadResult(path string) (Result, error) {
	var r Result
	if path == "" {
		return r, errors.New("no gpugate-result.json: the result input is empty")
	}
	// The artifact's file: never a link, never a FIFO, capped
	// (internal/safefile); errors quote none of it.
	b, err := safefile.ReadFile(path, maxResult)
	if errors.Is(err, safefile.ErrTooLarge) {
		return r, fmt.Errorf("read result %s: larger than %d MB, not a gpugate result", path, maxResult>>20)
	}
	if err != nil {
		return r, fmt.Errorf("read result %w", trace.WithPath(err, path))
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("read result %s: not a gpugate result: %s", path, safefile.JSONWhy(err))
	}
	if r.Version != ResultVersion || r.Report == nil {
		return r, fmt.Errorf("read result %s: version %d with report %v, want version %d with a report (made by another gpugate release?)", path, r.Version, r.Report != nil, ResultVersion)
	}
	return r, nil
}

// PRInfo is what part 1 of the fork-safe pair records about the pull
// request in a job that runs none of its code (pr-info): the number and
// head commit from its pull_request_target event. The comment job checks
// it against the API (GetPR).
type PRInfo struct {
	PR       int    `json:"pr"`
	HeadSHA  string `json:"head_sha"`
	HeadRepo string `json:"head_repo"`
}

// ReadPRInfo reads and checks a pr-info file.
func ReadPRInfo(path string) (*PRInfo, error) {
	b, err := safefile.ReadFile(path, 64<<10)
	if err != nil {
		return nil, fmt.Errorf("read pr-info %w", trace.WithPath(err, path))
	}
	var p PRInfo
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.PR <= 0 || !shaRE.MatchString(p.HeadSHA) {
		return nil, fmt.Errorf("read pr-info %s: not {\"pr\": N, \"head_sha\": SHA, \"head_repo\": OWNER/NAME}", path)
	}
	return &p, nil
}
