package action

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
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

// retrier is an http.RoundTripper that retries 5xx answers and rate limits
// (403 or 429 with Retry-After, or with X-RateLimit-Remaining: 0); go-github
// v60 turns a 429 into a plain error and a 403 limit into one that does not
// wait, so the waiting happens here.
type retrier struct {
	base     http.RoundTripper
	attempts int
	maxWait  time.Duration
	sleep    func(context.Context, time.Duration) error
	now      func() time.Time
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

func (r *retrier) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	for attempt := 1; ; attempt++ {
		clone := req.Clone(req.Context())
		if body != nil {
			clone.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := r.base.RoundTrip(clone)
		wait, retry := r.decide(resp, err, attempt)
		if !retry || attempt >= r.attempts {
			return resp, err
		}
		if resp != nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err := r.sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

// decide says whether to retry and after how long.
func (r *retrier) decide(resp *http.Response, err error, attempt int) (time.Duration, bool) {
	backoff := time.Duration(math.Pow(2, float64(attempt-1))) * time.Second
	if err != nil {
		return backoff, true
	}
	h := resp.Header
	limited := resp.StatusCode == http.StatusTooManyRequests ||
		resp.StatusCode == http.StatusForbidden && (h.Get("Retry-After") != "" || h.Get("X-RateLimit-Remaining") == "0")
	switch {
	case limited:
		wait := backoff
		if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil {
			wait = time.Duration(s) * time.Second
		} else if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil && h.Get("X-RateLimit-Remaining") == "0" {
			wait = time.Unix(reset, 0).Sub(r.now())
		}
		if wait > r.maxWait {
			return 0, false // not worth holding the GPU runner for
		}
		return max(wait, 0), true
	case resp.StatusCode >= 500:
		return backoff, true
	}
	return 0, false
}

// Client posts gpugate's results to GitHub.
type Client struct {
	gh          *github.Client
	owner, repo string
}

// NewClient makes a client for the API at apiURL (GITHUB_API_URL: github.com,
// GitHub Enterprise Server's https://HOST/api/v3, or a local stand-in) and
// the repository "owner/name".
func NewClient(apiURL, token, repository string, sleep func(context.Context, time.Duration) error) (*Client, error) {
	owner, repo, ok := strings.Cut(repository, "/")
	if !ok || owner == "" || repo == "" {
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
	if sleep == nil {
		sleep = sleepCtx
	}
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &retrier{base: http.DefaultTransport, attempts: 5, maxWait: 2 * time.Minute, sleep: sleep, now: time.Now}}
	gh := github.NewClient(hc).WithAuthToken(token)
	// Set directly: WithEnterpriseURLs would append /api/v3/ to a
	// loopback stand-in's URL.
	gh.BaseURL = base
	return &Client{gh: gh, owner: owner, repo: repo}, nil
}

func classify(resp *github.Response, err error) error {
	if err == nil {
		return nil
	}
	if resp != nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound) &&
		resp.Header.Get("X-RateLimit-Remaining") != "0" && resp.Header.Get("Retry-After") == "" {
		return fmt.Errorf("%w: %v", ErrReadOnly, err)
	}
	return err
}

// Marker is the hidden line that identifies gpugate's comment for a
// workload, so that later runs edit it instead of adding another.
func Marker(workload string) string { return "<!-- gpugate:" + workload + " -->" }

// Upsert edits the pull request comment that starts with marker, or creates
// it. It returns the comment's id and whether it was created.
func (c *Client) Upsert(ctx context.Context, pr int, marker, body string) (int64, bool, error) {
	opt := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	var found int64
	for {
		comments, resp, err := c.gh.Issues.ListComments(ctx, c.owner, c.repo, pr, opt)
		if err != nil {
			return 0, false, classify(resp, err)
		}
		for _, cm := range comments {
			// The newest of ours: a user's comment quoting the marker is not
			// ours to edit.
			if strings.HasPrefix(cm.GetBody(), marker) && strings.EqualFold(cm.GetUser().GetType(), "Bot") {
				found = cm.GetID()
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	if found != 0 {
		_, resp, err := c.gh.Issues.EditComment(ctx, c.owner, c.repo, found, &github.IssueComment{Body: github.String(body)})
		return found, false, classify(resp, err)
	}
	cm, resp, err := c.gh.Issues.CreateComment(ctx, c.owner, c.repo, pr, &github.IssueComment{Body: github.String(body)})
	if err != nil {
		return 0, false, classify(resp, err)
	}
	return cm.GetID(), true, nil
}

// CheckRun creates a completed check run with the report as its summary.
func (c *Client) CheckRun(ctx context.Context, name, sha, conclusion, title, summary string) error {
	_, resp, err := c.gh.Checks.CreateCheckRun(ctx, c.owner, c.repo, github.CreateCheckRunOptions{
		Name: name, HeadSHA: sha, Status: github.String("completed"), Conclusion: github.String(conclusion),
		Output: &github.CheckRunOutput{Title: github.String(title), Summary: github.String(summary)},
	})
	return classify(resp, err)
}

// PullRequest reads the pull request number and head commit from the event
// that started the workflow.
func PullRequest(eventName string, payload []byte) (number int, headSHA string, fork bool, err error) {
	if len(payload) == 0 {
		return 0, "", false, nil
	}
	ev, err := github.ParseWebHook(eventName, payload)
	if err != nil {
		return 0, "", false, nil // not a pull request event: nothing to comment on
	}
	switch e := ev.(type) {
	case *github.PullRequestEvent:
		pr := e.GetPullRequest()
		return e.GetNumber(), pr.GetHead().GetSHA(), pr.GetHead().GetRepo().GetFork(), nil
	case *github.PullRequestTargetEvent:
		pr := e.GetPullRequest()
		return e.GetNumber(), pr.GetHead().GetSHA(), pr.GetHead().GetRepo().GetFork(), nil
	}
	return 0, "", false, nil
}
