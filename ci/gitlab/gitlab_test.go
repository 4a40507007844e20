package gitlab

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/glfake"
)

const marker = "<!-- gpugate:resnet -->"

// TestUpsert: the first post creates one note, the next edits it; notes
// past the first page are found; a note by someone else that holds the
// marker is left alone; every request carries the token.
func TestUpsert(t *testing.T) {
	s := glfake.New()
	defer s.Close()
	other := glfake.Author{ID: 5, Username: "mallory"}
	s.Add(other, marker+"\nforged", false)
	for i := range 130 {
		s.Add(other, "review comment "+string(rune('a'+i%26)), false)
	}
	c, err := New(s.API, s.Token, s.Project, s.MR, Options{Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n1, err := c.Upsert(ctx, marker, marker+"\nfirst")
	if err != nil || !n1.Created {
		t.Fatalf("first Upsert = %+v, %v; want a created note", n1, err)
	}
	// Push the note to the second page of the list (newest first).
	for range 120 {
		s.Add(other, "more", false)
	}
	n2, err := c.Upsert(ctx, marker, marker+"\nsecond")
	if err != nil || n2.Created || n2.ID != n1.ID {
		t.Fatalf("second Upsert = %+v, %v; want note %d edited", n2, err, n1.ID)
	}
	var mine []glfake.Note
	for _, n := range s.Notes() {
		if strings.Contains(n.Body, marker) && n.Author.ID == s.User.ID {
			mine = append(mine, n)
		}
		if n.Author.ID == other.ID && strings.Contains(n.Body, marker) && n.Body != marker+"\nforged" {
			t.Errorf("someone else's note was edited: %q", n.Body)
		}
	}
	if len(mine) != 1 || mine[0].Body != marker+"\nsecond" || mine[0].Edits != 1 {
		t.Errorf("notes by the token's user with the marker: %+v, want one, edited once to the second body", mine)
	}
	pages := 0
	for _, r := range s.Requests() {
		if r.Auth == "" {
			t.Errorf("unauthenticated request %s %s", r.Method, r.Path)
		}
		if r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/notes") {
			pages++
		}
	}
	if pages < 4 { // 2 pages on the first look, 3 on the second
		t.Errorf("%d list requests: pagination not followed", pages)
	}
}

// TestErrors: each failing answer gives an error that says what to do,
// and never the token.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		status int
		token  string
		want   string
	}{
		{0, "wrong-token", "token was refused"},
		{403, "", "scope api"},
		{404, "", "no such project or merge request"},
		{429, "", "rate limited"},
		{502, "", "answered 502"},
	} {
		s := glfake.New()
		s.Status = tc.status
		token := s.Token
		if tc.token != "" {
			token = tc.token
		}
		c, err := New(s.API, token, s.Project, s.MR, Options{Retries: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Upsert(ctx, marker, marker+"\nbody")
		s.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("status %d: Upsert error %v, want it to say %q", tc.status, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), token) {
			t.Errorf("status %d: the error %q holds the token", tc.status, err)
		}
		if len(s.Notes()) != 0 {
			t.Errorf("status %d: a note was stored", tc.status)
		}
	}
	if _, err := New("", "t", "1", 1, Options{}); err == nil || !strings.Contains(err.Error(), "CI_API_V4_URL") {
		t.Errorf("no API URL: %v", err)
	}
	if _, err := New("http://x/api/v4", "t", "1", 0, Options{}); err == nil || !strings.Contains(err.Error(), "CI_MERGE_REQUEST_IID") {
		t.Errorf("no MR: %v", err)
	}
}

// TestStandInAuth: the stand-in takes the token as GitLab does, in
// PRIVATE-TOKEN or as a bearer token, and answers 401 without it.
func TestStandInAuth(t *testing.T) {
	s := glfake.New()
	defer s.Close()
	for _, tc := range []struct {
		header, value string
		want          int
	}{{"PRIVATE-TOKEN", s.Token, 200}, {"Authorization", "Bearer " + s.Token, 200}, {"", "", 401}, {"PRIVATE-TOKEN", "nope", 401}} {
		req, _ := http.NewRequest("GET", s.API+"/projects/42/merge_requests/7/notes", nil)
		if tc.header != "" {
			req.Header.Set(tc.header, tc.value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %q: status %d, want %d", tc.header, tc.value, resp.StatusCode, tc.want)
		}
	}
}

// TestNoDuplicateOnServerError: a create that fails with a 5xx is not
// sent again (GitLab may have created the note); an edit may be.
func TestNoDuplicateOnServerError(t *testing.T) {
	s := glfake.New()
	defer s.Close()
	c, err := New(s.API, s.Token, s.Project, s.MR, Options{Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	s.FailPost = 1
	if _, err := c.Upsert(context.Background(), marker, marker+"\nbody"); err == nil || !strings.Contains(err.Error(), "answered 502") {
		t.Fatalf("Upsert after a 502 on create: %v", err)
	}
	posts := 0
	for _, r := range s.Requests() {
		if r.Method == http.MethodPost {
			posts++
		}
	}
	if posts != 1 {
		t.Errorf("%d POSTs, want 1: a failed create was retried", posts)
	}
}
