package action

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/dashboard"
	"github.com/gpugate/gpugate/internal/escape"
)

// ShiftLabel is the label of the issues that alert on a sustained shift.
const ShiftLabel = "gpugate/perf-shift"

// alertRecent is how new a change point must be to alert: its first run is
// one of the newest alertRecent baseline runs of the machine. An older
// one was alerted on when it was new, or predates the alert.
const alertRecent = 10

// Shift is a change point worth an alert.
type Shift struct {
	Workload, Metric, Unit string
	Mark                   *dashboard.ChangeMark
	Series                 *dashboard.Series
}

// Shifts returns the change points among the newest runs of the
// workload's history on branch, on the machine of its newest baseline run:
// one per metric at most (the newest), for the gate's default metrics.
func Shifts(runs []baseline.Run, workload, branch string) ([]Shift, error) {
	var mine []baseline.Run
	for _, r := range runs {
		if r.Workload == workload && r.Branch == branch && r.Kind == "baseline" {
			mine = append(mine, r)
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	site, err := dashboard.Load(mine, dashboard.Options{})
	if err != nil {
		return nil, err
	}
	fp := site.Workloads[0].Latest.FingerprintHash
	var out []Shift
	for _, c := range site.Workloads[0].Charts {
		var series *dashboard.Series
		for _, s := range c.Series {
			if s.Fingerprint == fp && s.Kind == "baseline" {
				series = s
			}
		}
		if series == nil {
			continue
		}
		var newest *dashboard.ChangeMark
		for _, m := range c.Changes {
			if m.Fingerprint == fp && m.Change.Index >= len(series.Points)-alertRecent {
				newest = m
			}
		}
		if newest != nil {
			out = append(out, Shift{Workload: workload, Metric: c.Metric.Name, Unit: c.Metric.Unit, Mark: newest, Series: series})
		}
	}
	return out, nil
}

// issueMarker identifies the issue of a workload's metric, so that the
// next refresh edits it instead of opening another. slug is Slug(workload).
func issueMarker(slug, metric string) string {
	return "<!-- gpugate:perf-shift:" + slug + ":" + metric + " -->"
}

// issueBody is the issue's Markdown: the shift, its interval and commit
// range, and the series as a Mermaid chart. Names are escaped for
// Markdown; the chart holds numbers and gpugate's own words only.
func (s Shift) issueBody(marker, repo string) string {
	m := s.Mark
	c := m.Change
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n### gpugate: sustained shift in `%s` of %s\n\n", marker, s.Metric, escape.CodeSpan(s.Workload))
	fmt.Fprintf(&b, "The baseline runs of machine %s on %s moved at run #%d of %d: **%.4g → %.4g %s (%+.1f%%)**",
		escape.CodeSpan(s.Series.Fingerprint), escape.CodeSpan(s.Series.Branch), c.Index+1, len(s.Series.Points), c.Before, c.After, s.Unit, 100*c.Relative())
	if c.Shift.Bounded {
		fmt.Fprintf(&b, "; the shift is %+.4g %s, 95%% interval [%+.4g, %+.4g] %s", c.Shift.Estimate, s.Unit, c.Shift.Lo, c.Shift.Hi, s.Unit)
	}
	fmt.Fprintf(&b, " (E-divisive change point, permutation p=%.3f).\n\n", c.P)
	fmt.Fprintf(&b, "Commit range: %s (run %d, the last before the shift) .. %s (run %d, the first after it)", escape.CodeSpan(m.Before.Commit), m.Before.ID, escape.CodeSpan(m.Run.Commit), m.Run.ID)
	if repo != "" && shaLike(m.Before.Commit) && shaLike(m.Run.Commit) {
		fmt.Fprintf(&b, ": compare `%s...%s` on GitHub", m.Before.Commit, m.Run.Commit)
	}
	b.WriteString(".\n\n")
	var labels, values []string
	for i, p := range s.Series.Points {
		labels = append(labels, fmt.Sprintf("\"%d\"", i+1))
		values = append(values, fmt.Sprintf("%.4g", p.Value))
	}
	fmt.Fprintf(&b, "```mermaid\nxychart-beta\n    title \"%s (%s) per baseline run; change point at run %d\"\n    x-axis \"run\" [%s]\n    y-axis \"%s\"\n    line [%s]\n```\n\n",
		s.Metric, s.Unit, c.Index+1, strings.Join(labels, ", "), s.Unit, strings.Join(values, ", "))
	b.WriteString("gpugate updates this issue when a later refresh sees the shift again; close it once the shift is explained. `gpugate dashboard` draws the whole history.\n")
	return b.String()
}

// shaLike reports whether s is a commit id (hex), which GitHub's compare
// view takes as is.
func shaLike(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// UpsertIssue edits the open issue labelled label whose body starts with
// marker and that the token's identity wrote, or opens one. It reports
// whether it opened one.
func (c *Client) UpsertIssue(ctx context.Context, marker, label, title, body string) (int, bool, error) {
	me, err := c.Identity(ctx)
	if err != nil {
		return 0, false, err
	}
	opt := &github.IssueListByRepoOptions{State: "open", Labels: []string{label}, ListOptions: github.ListOptions{PerPage: 100}}
	var found *github.Issue
	for {
		issues, resp, err := c.gh.Issues.ListByRepo(ctx, c.owner, c.repo, opt)
		if err != nil {
			return 0, false, c.classify("list the issues labelled "+label, resp, err)
		}
		for _, is := range issues {
			if strings.HasPrefix(is.GetBody(), marker) && strings.EqualFold(is.GetUser().GetLogin(), me) {
				found = is
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	if found != nil {
		_, resp, err := c.gh.Issues.Edit(ctx, c.owner, c.repo, found.GetNumber(), &github.IssueRequest{Title: github.String(title), Body: github.String(body)})
		if err != nil {
			return 0, false, c.classify(fmt.Sprintf("edit issue #%d", found.GetNumber()), resp, err)
		}
		return found.GetNumber(), false, nil
	}
	is, resp, err := c.gh.Issues.Create(ctx, c.owner, c.repo, &github.IssueRequest{Title: github.String(title), Body: github.String(body), Labels: &[]string{label}})
	if err != nil {
		return 0, false, c.classify("open an issue", resp, err)
	}
	return is.GetNumber(), true, nil
}

// webhookText is the shift as plain text for a chat webhook, escaped as
// Slack's mrkdwn wants (&, < and >; so that no name can form a <!channel>
// mention or a link) and free of control characters.
func (s Shift) webhookText() string {
	c := s.Mark.Change
	t := fmt.Sprintf("gpugate: sustained shift in %s of %s: %.4g → %.4g %s (%+.1f%%) at run %d, commits %s..%s",
		s.Metric, escape.Terminal(s.Workload), c.Before, c.After, s.Unit, 100*c.Relative(), c.Index+1, escape.Terminal(s.Mark.Before.Commit), escape.Terminal(s.Mark.Run.Commit))
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(t)
}

// postWebhook POSTs {"text": text} to url: Slack's incoming webhooks read
// text, and other chat tools' generic webhooks take the same shape.
func postWebhook(ctx context.Context, url, text string) error {
	body, _ := json.Marshal(map[string]string{"text": text})
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return errors.New("webhook: not a URL") // the URL is a secret: never print it
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap() // *url.Error names the URL
		}
		return fmt.Errorf("webhook: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook: %s", resp.Status)
	}
	return nil
}

// alertPhase is refresh mode's post step: the alert on the workload's
// history in the store the run step recorded into.
func alertPhase(ctx context.Context, gha *IO, getenv func(string) string, in inputs) error {
	c, w, err := loadWorkload(gha, getenv, in)
	if err != nil {
		return err
	}
	alertShifts(ctx, gha, getenv, in, store(getenv, in, c, w), w.Name)
	return nil
}

// alertShifts is refresh mode's alert: each change point among the newest
// runs of the workload's history opens or updates one issue per metric
// (alert: issue) and is posted to the webhook (webhook:). Failures are
// warnings: the runs are recorded, and the next refresh tries again.
//
// The history is the branch of the newest baseline run of the workload:
// the one this refresh recorded.
func alertShifts(ctx context.Context, gha *IO, getenv func(string) string, in inputs, db, workload string) {
	if in.alert == "none" && in.webhook == "" {
		return
	}
	store, err := baseline.OpenReadOnly(ctx, db)
	if err != nil {
		gha.Warning("gpugate: alert", err.Error())
		return
	}
	runs, err := store.Runs(ctx, baseline.Filter{Workload: workload, Kind: "baseline"})
	store.Close()
	if err != nil {
		gha.Warning("gpugate: alert", err.Error())
		return
	}
	if len(runs) == 0 {
		return
	}
	shifts, err := Shifts(runs, workload, runs[len(runs)-1].Branch)
	if err != nil {
		gha.Warning("gpugate: alert", err.Error())
		return
	}
	if len(shifts) == 0 {
		return
	}
	var client *Client
	if in.alert == "issue" {
		if client, err = newClient(getenv, in); err != nil {
			gha.Warning("gpugate: alert", err.Error())
		}
	}
	for _, s := range shifts {
		if client != nil {
			marker := issueMarker(Slug(workload), s.Metric)
			title := fmt.Sprintf("gpugate: sustained shift in %s of %s", s.Metric, Slug(workload))
			n, opened, err := client.UpsertIssue(ctx, marker, ShiftLabel, title, s.issueBody(marker, client.Repository()))
			switch {
			case errors.Is(err, ErrReadOnly):
				gha.Warning("gpugate: alert", "the token cannot write issues: give the workflow `issues: write`, or set alert: none")
			case err != nil:
				gha.Warning("gpugate: alert", err.Error())
			case opened:
				gha.Notice("gpugate: sustained shift", fmt.Sprintf("%s: opened issue #%d", s.Metric, n))
			default:
				gha.Notice("gpugate: sustained shift", fmt.Sprintf("%s: updated issue #%d", s.Metric, n))
			}
		}
		if in.webhook != "" {
			if err := postWebhook(ctx, in.webhook, s.webhookText()); err != nil {
				gha.Warning("gpugate: alert", err.Error())
			}
		}
	}
}
