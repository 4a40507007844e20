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
	c, err := NewClient(s.URL, "fake-token-0123456789", "acme/train", func(_ context.Context, d time.Duration) error {
		*slept = append(*slept, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestUpsertCreatesThenEdits(t *testing.T) {
	s := ghfake.New()
	defer s.Close()
	s.PerPage = 2
	// Someone else's comments, one quoting the marker, spread over pages.
	s.AddComment(7, "LGTM", "alice", "User")
	s.AddComment(7, Marker("demo")+" quoted by a user", "mallory", "User")
	s.AddComment(7, "nit", "bob", "User")
	var slept []time.Duration
	c := client(t, s, &slept)
	ctx := context.Background()
	id1, created, err := c.Upsert(ctx, 7, Marker("demo"), Marker("demo")+"\nfirst report")
	if err != nil || !created {
		t.Fatalf("first Upsert: id %d created %v err %v", id1, created, err)
	}
	id2, created, err := c.Upsert(ctx, 7, Marker("demo"), Marker("demo")+"\nsecond report")
	if err != nil || created || id2 != id1 {
		t.Fatalf("second Upsert: id %d (first %d) created %v err %v; want the same comment edited", id2, id1, created, err)
	}
	comments, reqs := s.Snapshot(7)
	if len(comments) != 4 || !strings.HasSuffix(comments[3].Body, "second report") || comments[1].Body != Marker("demo")+" quoted by a user" {
		t.Errorf("comments after two runs: %+v", comments)
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
	if _, created, _ := c.Upsert(ctx, 7, Marker("other"), Marker("other")+"\nx"); !created {
		t.Error("a second workload edited the first workload's comment")
	}
}

func TestRetries(t *testing.T) {
	s := ghfake.New()
	defer s.Close()
	s.Fail500, s.Limit429, s.Limit403 = 1, 1, 1
	var slept []time.Duration
	c := client(t, s, &slept)
	if _, _, err := c.Upsert(context.Background(), 3, Marker("w"), Marker("w")+"\nbody"); err != nil {
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

func TestReadOnlyToken(t *testing.T) {
	s := ghfake.New()
	defer s.Close()
	s.ReadOnly = true
	var slept []time.Duration
	c := client(t, s, &slept)
	_, _, err := c.Upsert(context.Background(), 9, Marker("w"), "x")
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

func TestPullRequestEvent(t *testing.T) {
	payload := []byte(`{"action":"synchronize","number":42,"pull_request":{"number":42,"head":{"sha":"1111111111111111111111111111111111111111","repo":{"fork":true}}}}`)
	n, sha, fork, err := PullRequest("pull_request", payload)
	if err != nil || n != 42 || sha != strings.Repeat("1", 40) || !fork {
		t.Errorf("PullRequest = %d %q %v %v", n, sha, fork, err)
	}
	if n, _, _, _ := PullRequest("push", []byte(`{"ref":"refs/heads/main"}`)); n != 0 {
		t.Errorf("push event gave PR %d", n)
	}
}
