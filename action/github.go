package action

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

// ErrReadOnly means the token may not write comments or checks: a pull
// request from a fork gets a read-only GITHUB_TOKEN.
var ErrReadOnly = errors.New("the GitHub token is read-only here (a pull request from a fork gets a read-only token)")

// BotLogin is the author of comments written with a workflow's
// GITHUB_TOKEN.
const BotLogin = "github-actions[bot]"

// retrier is an http.RoundTripper that retries network errors, 5xx answers
// and rate limits. It is written here rather than taken from
// gofri/go-github-ratelimit, which waits only when GitHub sends
// Retry-After or X-RateLimit-Reset and returns a secondary limit without
// them unretried (its detect.go says so), or from
// hashicorp/go-retryablehttp, whose policy treats no 403 as retryable and
// reads Retry-After only on 429 and 503: either would need the same GitHub
// rules written around it. The rules, from GitHub's "Rate limits for the
// REST API": honour Retry-After; else, with X-RateLimit-Remaining: 0, wait
// until X-RateLimit-Reset; else (a secondary limit with no header) wait at
// least a minute and back off exponentially. Every wait has jitter (so that
// the runners of a matrix do not come back at the same instant) and is
// bounded: one wait by maxWait, all of them by maxTotal; past that the
// answer is returned and becomes an error that says so.
type retrier struct {
	base     http.RoundTripper
	attempts int
	maxWait  time.Duration
	maxTotal time.Duration
	sleep    func(context.Context, time.Duration) error
	now      func() time.Time
	jitter   func(time.Duration) time.Duration // a duration in [d/2, d]
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func halfJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

func (r *retrier) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	var total time.Duration
	for attempt := 1; ; attempt++ {
		clone := req.Clone(req.Context())
		if body != nil {
			clone.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := r.base.RoundTrip(clone)
		wait, retry := r.decide(resp, err, attempt)
		if !retry || attempt >= r.attempts || total+wait > r.maxTotal {
			return resp, err
		}
		if resp != nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err := r.sleep(req.Context(), wait); err != nil {
			return nil, err
		}
		total += wait
	}
}

// secondaryLimit reports whether a 403 or 429 answer is a secondary rate
// limit by its body (GitHub's message or documentation link); the body is
// put back for the caller.
func secondaryLimit(resp *http.Response) bool {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return false
	}
	var e struct {
		Message string `json:"message"`
		Doc     string `json:"documentation_url"`
	}
	json.Unmarshal(b, &e)
	return strings.Contains(strings.ToLower(e.Message), "secondary rate limit") ||
		strings.HasSuffix(e.Doc, "secondary-rate-limits") || strings.HasSuffix(e.Doc, "#abuse-rate-limits")
}

// decide says whether to retry and after how long.
func (r *retrier) decide(resp *http.Response, err error, attempt int) (time.Duration, bool) {
	exp := func(base time.Duration) time.Duration { return r.jitter(base << (attempt - 1)) }
	if err != nil {
		return exp(time.Second), true
	}
	h := resp.Header
	code := resp.StatusCode
	var wait time.Duration
	switch {
	case code != http.StatusForbidden && code != http.StatusTooManyRequests:
		if code >= 500 {
			return exp(time.Second), true
		}
		return 0, false
	case h.Get("Retry-After") != "":
		s, err := strconv.Atoi(h.Get("Retry-After"))
		if err != nil {
			return 0, false
		}
		wait = time.Duration(s) * time.Second
	case h.Get("X-RateLimit-Remaining") == "0":
		reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
		if err != nil {
			return 0, false
		}
		wait = time.Unix(reset, 0).Sub(r.now()) + time.Second
	case code == http.StatusTooManyRequests || secondaryLimit(resp):
		wait = exp(time.Minute)
	default:
		return 0, false // a 403 that is no limit: a permission
	}
	if wait > r.maxWait {
		return 0, false // not worth holding the GPU runner for
	}
	return max(wait, 0), true
}

// Client posts gpugate's results to GitHub.
type Client struct {
	gh          *github.Client
	owner, repo string
	// Bot is the login that writes comments when the token is an app's
	// (GITHUB_TOKEN, a GitHub App installation): GET /user is 403 for
	// those. BotLogin by default; an app's is "<slug>[bot]".
	Bot   string
	login string // the token's identity, once known
}

// Options tune a client; the zero value is right outside tests.
type Options struct {
	// Sleep waits between retries; tests record the waits instead.
	Sleep func(context.Context, time.Duration) error
	// Jitter picks a wait in [d/2, d]; random by default.
	Jitter func(time.Duration) time.Duration
}

// NewClient makes a client for the API at apiURL (GITHUB_API_URL: github.com,
// GitHub Enterprise Server's https://HOST/api/v3, or a local stand-in) and
// the repository "owner/name".
func NewClient(apiURL, token, repository string, opt Options) (*Client, error) {
	owner, repo, ok := strings.Cut(repository, "/")
	if !ok || owner == "" || repo == "" || strings.ContainsAny(repo, "/?#") {
		return nil, fmt.Errorf("GITHUB_REPOSITORY %q is not owner/name", repository)
	}
	if apiURL == "" {
		apiURL = "https://api.github.com/"
	}
	if !strings.HasSuffix(apiURL, "/") {
		apiURL += "/"
	}
	base, err := url.Parse(apiURL)
	if err != nil {
		return nil, fmt.Errorf("GITHUB_API_URL %q: %v", apiURL, err)
	}
	if opt.Sleep == nil {
		opt.Sleep = sleepCtx
	}
	if opt.Jitter == nil {
		opt.Jitter = halfJitter
	}
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &retrier{base: http.DefaultTransport, attempts: 5,
		maxWait: 3 * time.Minute, maxTotal: 6 * time.Minute, sleep: opt.Sleep, now: time.Now, jitter: opt.Jitter}}
	gh := github.NewClient(hc).WithAuthToken(token)
	// Set directly: WithEnterpriseURLs would append /api/v3/ to a
	// loopback stand-in's URL.
	gh.BaseURL = base
	return &Client{gh: gh, owner: owner, repo: repo, Bot: BotLogin}, nil
}

// Repository is "owner/name".
func (c *Client) Repository() string { return c.owner + "/" + c.repo }

// classify turns an API failure into an error that says what to do.
func (c *Client) classify(what string, resp *github.Response, err error) error {
	if err == nil {
		return nil
	}
	var rl *github.RateLimitError
	var ab *github.AbuseRateLimitError
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	msg := ""
	var er *github.ErrorResponse
	if errors.As(err, &er) {
		msg = er.Message
	}
	switch {
	case errors.As(err, &rl), errors.As(err, &ab), status == http.StatusTooManyRequests,
		status == http.StatusForbidden && strings.Contains(strings.ToLower(msg), "rate limit"):
		return fmt.Errorf("%s: GitHub's rate limit held past gpugate's retries (up to 5 tries, 6 minutes of waiting): %v", what, err)
	case status == http.StatusNotFound:
		return fmt.Errorf("%s: 404 from %s for repository %s: the repository or pull request does not exist for this token; "+
			"check GITHUB_REPOSITORY and GITHUB_API_URL (GitHub Enterprise: https://HOST/api/v3), and that the token belongs to this repository "+
			"(a token of another repository or an app not installed here sees 404)", what, c.gh.BaseURL, c.Repository())
	case status == http.StatusUnauthorized:
		return fmt.Errorf("%s: 401 bad credentials: the github-token input is not a valid token for %s", what, c.gh.BaseURL)
	case status == http.StatusForbidden && strings.Contains(msg, "not accessible by integration"):
		return fmt.Errorf("%s: %w: %v", what, ErrReadOnly, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Identity is the login that the token writes comments as: the user of a
// personal access token (GET /user), or, for a workflow's GITHUB_TOKEN or an
// app's token, for which GET /user is 403, the bot's login (c.Bot).
func (c *Client) Identity(ctx context.Context) (string, error) {
	if c.login != "" {
		return c.login, nil
	}
	u, resp, err := c.gh.Users.Get(ctx, "")
	switch {
	case err == nil && u.GetLogin() != "":
		c.login = u.GetLogin()
	case resp != nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound) && !isLimit(resp):
		c.login = c.Bot
	default:
		return "", c.classify("identify the token (GET /user)", resp, err)
	}
	return c.login, nil
}

func isLimit(resp *github.Response) bool {
	return resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-RateLimit-Remaining") == "0"
}

// Marker is the hidden line that identifies gpugate's comment for a
// workload, so that later runs edit it instead of adding another. The
// workload name must already be safe (a slug).
func Marker(workload string) string { return "<!-- gpugate:" + workload + " -->" }

// Comment is the outcome of Upsert.
type Comment struct {
	ID      int64
	URL     string // html_url
	Created bool
	// Skipped: create was false and there was no comment to edit.
	Skipped bool
}

// Upsert edits the newest pull request comment that starts with marker and
// was written by the token's own identity, or creates one when create is
// true. Matching the author as well as the marker keeps a user's comment
// that quotes the marker from being overwritten, and works for a PAT, whose
// comments are a user's, as for GITHUB_TOKEN, whose are a bot's.
func (c *Client) Upsert(ctx context.Context, pr int, marker, body string, create bool) (Comment, error) {
	me, err := c.Identity(ctx)
	if err != nil {
		return Comment{}, err
	}
	opt := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	var found *github.IssueComment
	for {
		comments, resp, err := c.gh.Issues.ListComments(ctx, c.owner, c.repo, pr, opt)
		if err != nil {
			return Comment{}, c.classify(fmt.Sprintf("list the comments of pull request #%d", pr), resp, err)
		}
		for _, cm := range comments {
			if strings.HasPrefix(cm.GetBody(), marker) && strings.EqualFold(cm.GetUser().GetLogin(), me) {
				found = cm
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	if found != nil {
		cm, resp, err := c.gh.Issues.EditComment(ctx, c.owner, c.repo, found.GetID(), &github.IssueComment{Body: github.String(body)})
		if err != nil {
			return Comment{}, c.classify(fmt.Sprintf("edit comment %d", found.GetID()), resp, err)
		}
		return Comment{ID: found.GetID(), URL: cm.GetHTMLURL()}, nil
	}
	if !create {
		return Comment{Skipped: true}, nil
	}
	cm, resp, err := c.gh.Issues.CreateComment(ctx, c.owner, c.repo, pr, &github.IssueComment{Body: github.String(body)})
	if err != nil {
		return Comment{}, c.classify(fmt.Sprintf("comment on pull request #%d", pr), resp, err)
	}
	return Comment{ID: cm.GetID(), URL: cm.GetHTMLURL(), Created: true}, nil
}

// CheckRun creates a completed check run with the report as its summary.
func (c *Client) CheckRun(ctx context.Context, name, sha, conclusion, title, summary string) error {
	_, resp, err := c.gh.Checks.CreateCheckRun(ctx, c.owner, c.repo, github.CreateCheckRunOptions{
		Name: name, HeadSHA: sha, Status: github.String("completed"), Conclusion: github.String(conclusion),
		Output: &github.CheckRunOutput{Title: github.String(title), Summary: github.String(summary)},
	})
	return c.classify("create check run", resp, err)
}

// PR is an open pull request as the API describes it.
type PR struct {
	Number   int
	HeadSHA  string
	HeadRepo string // "owner/name"
	Labels   []string
	// State, BaseRepo and BaseRef are set by GetPR.
	State    string
	BaseRepo string // "owner/name"
	BaseRef  string
}

// GetPR returns pull request number of this repository as the API sees
// it now.
func (c *Client) GetPR(ctx context.Context, number int) (PR, error) {
	p, resp, err := c.gh.PullRequests.Get(ctx, c.owner, c.repo, number)
	if err != nil {
		return PR{}, c.classify("get pull request #"+strconv.Itoa(number), resp, err)
	}
	x := PR{Number: p.GetNumber(), HeadSHA: p.GetHead().GetSHA(), HeadRepo: p.GetHead().GetRepo().GetFullName(),
		State: p.GetState(), BaseRepo: p.GetBase().GetRepo().GetFullName(), BaseRef: p.GetBase().GetRef()}
	for _, l := range p.Labels {
		x.Labels = append(x.Labels, l.GetName())
	}
	return x, nil
}

// FindPR finds the one open pull request of this repository whose head is
// commit sha of repository headRepo, on branch headBranch: the pull request
// a workflow_run event was about (the event's own pull_requests list is
// empty for forks). It asks by head branch first, then by commit, and
// accepts only a pull request whose head SHA and head repository both
// match; none, or more than one, is an error that says so.
func (c *Client) FindPR(ctx context.Context, headRepo, headBranch, sha string) (PR, error) {
	var cands []*github.PullRequest
	if owner, _, ok := strings.Cut(headRepo, "/"); ok && headBranch != "" {
		prs, resp, err := c.gh.PullRequests.List(ctx, c.owner, c.repo, &github.PullRequestListOptions{State: "open", Head: owner + ":" + headBranch,
			ListOptions: github.ListOptions{PerPage: 100}})
		if err != nil {
			return PR{}, c.classify("list pull requests", resp, err)
		}
		cands = prs
	}
	match := func(prs []*github.PullRequest) []PR {
		var out []PR
		for _, p := range prs {
			if p.GetState() != "open" || p.GetHead().GetSHA() != sha || !strings.EqualFold(p.GetHead().GetRepo().GetFullName(), headRepo) {
				continue
			}
			x := PR{Number: p.GetNumber(), HeadSHA: p.GetHead().GetSHA(), HeadRepo: p.GetHead().GetRepo().GetFullName()}
			for _, l := range p.Labels {
				x.Labels = append(x.Labels, l.GetName())
			}
			out = append(out, x)
		}
		return out
	}
	found := match(cands)
	if len(found) == 0 {
		prs, resp, err := c.gh.PullRequests.ListPullRequestsWithCommit(ctx, c.owner, c.repo, sha, &github.ListOptions{PerPage: 100})
		if err != nil {
			return PR{}, c.classify("list the pull requests of commit "+sha, resp, err)
		}
		found = match(prs)
	}
	switch len(found) {
	case 0:
		return PR{}, fmt.Errorf("no open pull request of %s has head %s from %s: nothing to comment on (the PR was closed, or pushed to since that run)", c.Repository(), sha, headRepo)
	case 1:
		return found[0], nil
	}
	nums := make([]string, len(found))
	for i, p := range found {
		nums[i] = "#" + strconv.Itoa(p.Number)
	}
	return PR{}, fmt.Errorf("%d open pull requests (%s) have head %s: refusing to guess which one to comment on", len(found), strings.Join(nums, ", "), sha)
}

// Event is what gpugate reads from the event that started the workflow.
type Event struct {
	Name    string
	PR      int
	HeadSHA string
	Fork    bool
	Labels  []string
	// Label is the label just added, for a "labeled" event.
	Label string
	// Run is set for a workflow_run event: the run whose results a
	// comment job posts.
	Run *RunEvent
}

// RunEvent is the completed workflow run of a workflow_run event.
type RunEvent struct {
	ID         int64
	Conclusion string
	Event      string // the run's own trigger: pull_request, …
	HeadSHA    string
	HeadBranch string
	HeadRepo   string // "owner/name"
	HTMLURL    string
}

// ParseEvent reads the event payload of eventName; an event gpugate has no
// use for gives an empty Event.
func ParseEvent(eventName string, payload []byte) (Event, error) {
	ev := Event{Name: eventName}
	if len(payload) == 0 {
		return ev, nil
	}
	switch eventName {
	case "pull_request", "pull_request_target", "workflow_run":
	default:
		return ev, nil
	}
	parsed, err := github.ParseWebHook(eventName, payload)
	if err != nil {
		return ev, fmt.Errorf("read %s event: %v", eventName, err)
	}
	pr := func(number int, p *github.PullRequest, label *github.Label) {
		ev.PR, ev.HeadSHA, ev.Fork = number, p.GetHead().GetSHA(), p.GetHead().GetRepo().GetFork()
		for _, l := range p.Labels {
			ev.Labels = append(ev.Labels, l.GetName())
		}
		ev.Label = label.GetName()
	}
	switch e := parsed.(type) {
	case *github.PullRequestEvent:
		pr(e.GetNumber(), e.GetPullRequest(), e.GetLabel())
	case *github.PullRequestTargetEvent:
		pr(e.GetNumber(), e.GetPullRequest(), e.GetLabel())
	case *github.WorkflowRunEvent:
		r := e.GetWorkflowRun()
		ev.Run = &RunEvent{ID: r.GetID(), Conclusion: r.GetConclusion(), Event: r.GetEvent(), HeadSHA: r.GetHeadSHA(),
			HeadBranch: r.GetHeadBranch(), HeadRepo: r.GetHeadRepository().GetFullName(), HTMLURL: r.GetHTMLURL()}
	}
	return ev, nil
}
