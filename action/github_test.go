package action

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/internal/ghfake"
)

func client(t *testing.T, s *ghfake.Server, slept *[]time.Duration) *Client {
	t.Helper()
	c, err := NewClient(s.URL, "fake-token-0123456789", "acme/train", Options{
		Sleep:  func(_ context.Context, d time.Duration) error { *slept = append(*slept, d); return nil },
		Jitter: func(d time.Duration) time.Duration { return d }, // the upper bound, to check the schedule
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestUpsertCreatesThenEdits(t *testing.T) {
	for _, login := range []string{"", "perf-bot-user"} { // GITHUB_TOKEN, then a PAT
		s := ghfake.New()
		s.Login = login
		s.PerPage = 2
		// Someone else's comments, one quoting the marker, spread over pages.
		s.AddComment(7, "LGTM", "alice", "User")
		s.AddComment(7, Marker("demo")+" quoted by a user", "mallory", "User")
		// Another bot's comment with the marker (a different app): not ours.
		s.AddComment(7, Marker("demo")+" other bot", "other-app[bot]", "Bot")
		s.AddComment(7, "nit", "bob", "User")
		var slept []time.Duration
		c := client(t, s, &slept)
		ctx := context.Background()
		c1, err := c.Upsert(ctx, 7, Marker("demo"), Marker("demo")+"\nfirst report", true)
		if err != nil || !c1.Created || c1.URL == "" {
			t.Fatalf("login %q: first Upsert: %+v err %v", login, c1, err)
		}
		c2, err := c.Upsert(ctx, 7, Marker("demo"), Marker("demo")+"\nsecond report", true)
		if err != nil || c2.Created || c2.ID != c1.ID {
			t.Fatalf("login %q: second Upsert: %+v (first %d) err %v; want the same comment edited", login, c2, c1.ID, err)
		}
		comments, reqs := s.Snapshot(7)
		if len(comments) != 5 || !strings.HasSuffix(comments[4].Body, "second report") || comments[1].Body != Marker("demo")+" quoted by a user" ||
			comments[2].Body != Marker("demo")+" other bot" {
			t.Errorf("login %q: comments after two runs: %+v", login, comments)
		}
		pages := 0
		for _, r := range reqs {
			if strings.HasPrefix(r, "GET") && strings.Contains(r, "page=2") {
				pages++
			}
		}
		if pages == 0 {
			t.Errorf("pagination not followed: %q", reqs)
		}
		// Another workload gets its own comment.
		if c3, _ := c.Upsert(ctx, 7, Marker("other"), Marker("other")+"\nx", true); !c3.Created {
			t.Error("a second workload edited the first workload's comment")
		}
		// create false: an existing comment is edited, none is made.
		if c4, err := c.Upsert(ctx, 8, Marker("demo"), "x", false); err != nil || !c4.Skipped {
			t.Errorf("create=false on a PR without a comment: %+v %v", c4, err)
		}
		if cs, _ := s.Snapshot(8); len(cs) != 0 {
			t.Errorf("create=false made a comment")
		}
		s.Close()
	}
}

func TestRetries(t *testing.T) {
	s := ghfake.New()
	defer s.Close()
	s.Fail500, s.Limit429, s.Limit403 = 1, 1, 1
	var slept []time.Duration
	c := client(t, s, &slept)
	if _, err := c.Upsert(context.Background(), 3, Marker("w"), Marker("w")+"\nbody", true); err != nil {
		t.Fatalf("Upsert through 500, 429 and 403 rate limits: %v", err)
	}
	if len(slept) != 3 {
		t.Fatalf("slept %v, want 3 waits", slept)
	}
	if slept[1] != time.Second {
		t.Errorf("429 wait %v, want Retry-After's 1s", slept[1])
	}
	if comments, _ := s.Snapshot(3); len(comments) != 1 {
		t.Errorf("%d comments, want 1", len(comments))
	}
}

// A secondary rate limit without Retry-After or X-RateLimit-*: wait a
// minute, then back off exponentially, bounded in total; the error then
// says the limit held.
func TestSecondaryLimitBackoff(t *testing.T) {
	s := ghfake.New()
	defer s.Close()
	s.Secondary = 2
	var slept []time.Duration
	c := client(t, s, &slept)
	if _, err := c.Upsert(context.Background(), 3, Marker("w"), Marker("w")+"\nbody", true); err != nil {
		t.Fatalf("Upsert through two secondary limits: %v", err)
	}
	if len(slept) != 2 || slept[0] != time.Minute || slept[1] != 2*time.Minute {
		t.Errorf("waits %v, want [1m 2m]", slept)
	}
	s.Secondary = 100
	slept = nil
	_, err := c.Upsert(context.Background(), 3, Marker("w"), "x", true)
	if err == nil || !strings.Contains(err.Error(), "rate limit") {
		t.Errorf("a limit that holds: %v", err)
	}
	var total time.Duration
	for _, d := range slept {
		total += d
	}
	if total > 6*time.Minute || len(slept) == 0 {
		t.Errorf("waited %v in total (%v), want some, at most 6m", total, slept)
	}
	// Jitter stays within [d/2, d].
	for range 100 {
		if j := halfJitter(time.Minute); j < 30*time.Second || j > time.Minute {
			t.Fatalf("halfJitter(1m) = %v", j)
		}
	}
}

func TestReadOnlyToken(t *testing.T) {
	s := ghfake.New()
	defer s.Close()
	s.ReadOnly = true
	var slept []time.Duration
	c := client(t, s, &slept)
	_, err := c.Upsert(context.Background(), 9, Marker("w"), "x", true)
	if !errors.Is(err, ErrReadOnly) {
		t.Fatalf("error %v, want ErrReadOnly", err)
	}
	if len(slept) != 0 {
		t.Errorf("retried a permission error: %v", slept)
	}
	if err := c.CheckRun(context.Background(), "gpugate / w", "abc", "success", "t", "s"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("check run error %v, want ErrReadOnly", err)
	}
}

// A repository the token cannot see answers 404: an error that says how to
// fix it, never "read-only".
func TestWrongRepository404(t *testing.T) {
	s := ghfake.New()
	defer s.Close()
	s.Repo = "acme/other"
	var slept []time.Duration
	c := client(t, s, &slept)
	_, err := c.Upsert(context.Background(), 9, Marker("w"), "x", true)
	if err == nil || errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "GITHUB_REPOSITORY") || !strings.Contains(err.Error(), "acme/train") {
		t.Errorf("404: %v", err)
	}
}

func TestFindPR(t *testing.T) {
	s := ghfake.New()
	defer s.Close()
	s.Repo = "acme/train"
	sha := strings.Repeat("a", 40)
	s.AddPR(12, "fork/train", "feature", sha, "gpugate/accept-regression")
	s.AddPR(13, "acme/train", "other", strings.Repeat("b", 40))
	var slept []time.Duration
	c := client(t, s, &slept)
	ctx := context.Background()
	pr, err := c.FindPR(ctx, "fork/train", "feature", sha)
	if err != nil || pr.Number != 12 || len(pr.Labels) != 1 {
		t.Errorf("FindPR = %+v, %v; want #12 with its label", pr, err)
	}
	// The branch renamed: found by commit.
	if pr, err := c.FindPR(ctx, "fork/train", "renamed", sha); err != nil || pr.Number != 12 {
		t.Errorf("FindPR by commit = %+v, %v", pr, err)
	}
	// The same SHA from another repository, or another SHA: refused.
	if _, err := c.FindPR(ctx, "evil/train", "feature", sha); err == nil || !strings.Contains(err.Error(), "no open pull request") {
		t.Errorf("other head repository: %v", err)
	}
	if _, err := c.FindPR(ctx, "fork/train", "feature", strings.Repeat("c", 40)); err == nil {
		t.Errorf("other SHA found a PR")
	}
	s.AddPR(14, "fork/train", "feature2", sha)
	if _, err := c.FindPR(ctx, "fork/train", "nothing", sha); err == nil || !strings.Contains(err.Error(), "refusing to guess") {
		t.Errorf("two PRs with one head: %v", err)
	}
}

func TestParseEvent(t *testing.T) {
	payload := []byte(`{"action":"labeled","number":42,"label":{"name":"gpugate/accept-regression"},"pull_request":{"number":42,"labels":[{"name":"gpugate/accept-regression"},{"name":"x"}],"head":{"sha":"1111111111111111111111111111111111111111","repo":{"fork":true}}}}`)
	ev, err := ParseEvent("pull_request", payload)
	if err != nil || ev.PR != 42 || ev.HeadSHA != strings.Repeat("1", 40) || !ev.Fork || len(ev.Labels) != 2 || ev.Label != "gpugate/accept-regression" {
		t.Errorf("ParseEvent = %+v, %v", ev, err)
	}
	if ev, _ := ParseEvent("push", []byte(`{"ref":"refs/heads/main"}`)); ev.PR != 0 {
		t.Errorf("push event gave PR %d", ev.PR)
	}
	wr := []byte(`{"action":"completed","workflow_run":{"id":99,"conclusion":"success","event":"pull_request","head_sha":"abc","head_branch":"feature","head_repository":{"full_name":"fork/train"}}}`)
	ev, err = ParseEvent("workflow_run", wr)
	if err != nil || ev.Run == nil || ev.Run.ID != 99 || ev.Run.HeadRepo != "fork/train" || ev.Run.Conclusion != "success" {
		t.Errorf("workflow_run = %+v %v", ev.Run, err)
	}
}
