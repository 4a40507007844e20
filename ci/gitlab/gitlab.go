// Package gitlab posts gpugate's report as one note on a GitLab merge
// request and edits that note on later pipelines, through GitLab's
// official client (gitlab.com/gitlab-org/api/client-go) and the notes API
// (https://docs.gitlab.com/api/notes/). The note is found again by a
// hidden marker, an HTML comment that GitLab's Markdown does not show.
package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go/v2"
)

// Client posts notes on one merge request.
type Client struct {
	c       *gl.Client
	project string
	mr      int64
	host    string // for error messages: the API's scheme and host
}

// Options tune the client; the zero value is GitLab's client defaults.
type Options struct {
	// HTTP replaces the HTTP client (tests).
	HTTP *http.Client
	// Retries is how many times a 429 or 5xx answer is retried (the
	// client waits as RateLimit-Reset says, else backs off; a create is
	// not retried after a 5xx); 0 means the client's default (5),
	// negative none.
	Retries int
}

// New is a client of the API at apiURL (CI_API_V4_URL, e.g.
// https://gitlab.com/api/v4) for merge request mr (its IID) of project
// (CI_PROJECT_ID, a number or a path), authenticated with token (a
// project, group or personal access token with scope api, sent as
// PRIVATE-TOKEN).
func New(apiURL, token, project string, mr int, opt Options) (*Client, error) {
	switch {
	case apiURL == "":
		return nil, errors.New("gitlab: no API URL (CI_API_V4_URL is not set)")
	case project == "":
		return nil, errors.New("gitlab: no project (CI_PROJECT_ID is not set)")
	case mr <= 0:
		return nil, errors.New("gitlab: no merge request (CI_MERGE_REQUEST_IID is not set)")
	case token == "":
		return nil, errors.New("gitlab: no token")
	}
	// A POST that failed with a 5xx may have created the note already:
	// retrying it could post a second one, so only GET and PUT (and any
	// 429, which GitLab rejects before acting) are retried.
	opts := []gl.ClientOptionFunc{gl.WithBaseURL(apiURL), gl.WithOnlyIdempotentRetries()}
	if opt.HTTP != nil {
		opts = append(opts, gl.WithHTTPClient(opt.HTTP))
	}
	switch {
	case opt.Retries < 0:
		opts = append(opts, gl.WithoutRetries())
	case opt.Retries > 0:
		opts = append(opts, gl.WithCustomRetryMax(opt.Retries), gl.WithCustomRetryWaitMinMax(50*time.Millisecond, 2*time.Second))
	}
	c, err := gl.NewClient(token, opts...)
	if err != nil {
		return nil, fmt.Errorf("gitlab: client for %s: %w", apiURL, err)
	}
	host := apiURL
	if u := c.BaseURL(); u != nil {
		host = u.Scheme + "://" + u.Host
	}
	return &Client{c: c, project: project, mr: int64(mr), host: host}, nil
}

// Note is a note that Upsert created or edited.
type Note struct {
	ID      int64
	Created bool
}

// Upsert puts body on the merge request as this token's note that holds
// marker: it edits the newest such note, or creates one. Only notes by
// the token's own user are considered, so that a note someone else wrote
// with the marker in it is neither edited (GitLab would refuse) nor taken
// for gpugate's.
func (c *Client) Upsert(ctx context.Context, marker, body string) (Note, error) {
	if !strings.Contains(body, marker) {
		return Note{}, fmt.Errorf("gitlab: the note's body lacks its marker %q", marker)
	}
	me, resp, err := c.c.Users.CurrentUser(gl.WithContext(ctx))
	if err != nil {
		return Note{}, c.classify("read the token's user", resp, err)
	}
	var found *gl.Note
	opt := &gl.ListMergeRequestNotesOptions{ListOptions: gl.ListOptions{PerPage: 100, Page: 1}}
	for pages := 0; ; pages++ {
		if pages == 1000 {
			return Note{}, fmt.Errorf("gitlab: list notes of merge request !%d: more than 100,000 notes", c.mr)
		}
		notes, resp, err := c.c.Notes.ListMergeRequestNotes(c.project, c.mr, opt, gl.WithContext(ctx))
		if err != nil {
			return Note{}, c.classify(fmt.Sprintf("list notes of merge request !%d", c.mr), resp, err)
		}
		for _, n := range notes {
			if n.System || n.Author.ID != me.ID || !strings.HasPrefix(strings.TrimSpace(n.Body), marker) {
				continue
			}
			if found == nil || n.ID > found.ID {
				found = n
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	if found != nil {
		_, resp, err := c.c.Notes.UpdateMergeRequestNote(c.project, c.mr, found.ID, &gl.UpdateMergeRequestNoteOptions{Body: &body}, gl.WithContext(ctx))
		if err != nil {
			return Note{}, c.classify(fmt.Sprintf("edit note %d of merge request !%d", found.ID, c.mr), resp, err)
		}
		return Note{ID: found.ID}, nil
	}
	n, resp, err := c.c.Notes.CreateMergeRequestNote(c.project, c.mr, &gl.CreateMergeRequestNoteOptions{Body: &body}, gl.WithContext(ctx))
	if err != nil {
		return Note{}, c.classify(fmt.Sprintf("create a note on merge request !%d", c.mr), resp, err)
	}
	return Note{ID: n.ID, Created: true}, nil
}

// classify turns an API error into one that says what to do. The
// client's own message names the URL (never the token, which travels in
// a header); the body GitLab sent is left out, since a proxy's error page
// can be long.
func (c *Client) classify(what string, resp *gl.Response, err error) error {
	status := 0
	if resp != nil && resp.Response != nil {
		status = resp.StatusCode
	}
	var er *gl.ErrorResponse
	if errors.As(err, &er) {
		status = er.StatusCode
	}
	var hint string
	switch {
	case status == http.StatusUnauthorized:
		hint = "the token was refused: GPUGATE_GITLAB_TOKEN is wrong, expired or revoked"
	case status == http.StatusForbidden:
		hint = "the token may not do this: it needs scope api and at least the Reporter role in the project"
	case status == http.StatusNotFound:
		hint = "no such project or merge request, or the token cannot see it (CI_PROJECT_ID, CI_MERGE_REQUEST_IID)"
	case status == http.StatusTooManyRequests:
		hint = "rate limited by " + c.host + ", still after retries"
	case status >= 500:
		hint = fmt.Sprintf("%s answered %d, still after retries", c.host, status)
	}
	if hint != "" {
		return fmt.Errorf("gitlab: %s: %s (HTTP %d): %w", what, hint, status, err)
	}
	return fmt.Errorf("gitlab: %s: %w", what, err)
}
