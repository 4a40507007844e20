// Package glfake is a stateful stand-in for the part of GitLab's REST API
// (v4) that gpugate ci uses, as GitLab documents it
// (https://docs.gitlab.com/api/notes/, https://docs.gitlab.com/api/rest/):
// the token's user (GET /user) and one merge request's notes: list with
// offset pagination (page, per_page up to 100, default 20; X-Next-Page,
// X-Total and Link headers), create (POST, 201) and edit (PUT
// .../notes/:note_id, only the note's author: 403 otherwise, 404 for no
// such note). A request is authenticated by the PRIVATE-TOKEN header or
// Authorization: Bearer; without the token it gets 401, as GitLab answers.
// It can answer every request with a given status (errors, rate limits),
// and it records every request. Tests start it on loopback.
package glfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Author is a note's author.
type Author struct {
	ID       int64  `json:"id"`
	Username string `json:"username"`
}

// Note is a stored merge request note.
type Note struct {
	ID        int64  `json:"id"`
	Body      string `json:"body"`
	Author    Author `json:"author"`
	System    bool   `json:"system"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
	// Edits counts the PUTs that changed it.
	Edits int `json:"-"`
}

// Request is a request the server got.
type Request struct {
	Method, Path string
	// Auth is how it authenticated: "private-token", "bearer" or "" (401).
	Auth string
}

// Server is the stand-in. Set its fields before the first request.
type Server struct {
	*httptest.Server
	// API is the base URL that CI_API_V4_URL names: URL + "/api/v4".
	API string
	// Token is the one token accepted; User is its user.
	Token string
	User  Author
	// Project is the project's id (CI_PROJECT_ID); PathWithNamespace is
	// its path, which the API accepts URL-encoded in place of the id.
	Project, PathWithNamespace string
	// MR is the merge request's IID.
	MR int
	// Status, when not 0, is every request's answer (after
	// authentication): 403, 404, 429, 500...
	Status int
	// FailPost answers that many next POSTs 502 after storing the note,
	// as a proxy that timed out on a request GitLab did process.
	FailPost int

	mu       sync.Mutex
	notes    []*Note
	nextID   int64
	requests []Request
}

// New starts a server on loopback for project 42 (acme/train), MR 7,
// token "glpat-stand-in", user 1001 (project_42_bot).
func New() *Server {
	s := &Server{Token: "glpat-stand-in", User: Author{ID: 1001, Username: "project_42_bot"}, Project: "42", PathWithNamespace: "acme/train", MR: 7, nextID: 500}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	s.API = s.URL + "/api/v4"
	return s
}

// Add stores a note by author, as another user or an earlier run wrote it.
func (s *Server) Add(author Author, body string, system bool) *Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.add(author, body, system)
}

func (s *Server) add(author Author, body string, system bool) *Note {
	s.nextID++
	now := time.Now().UTC().Format(time.RFC3339)
	n := &Note{ID: s.nextID, Body: body, Author: author, System: system, CreatedAt: now, UpdatedAt: now}
	s.notes = append(s.notes, n)
	return n
}

// Notes returns copies of the stored notes, oldest first.
func (s *Server) Notes() []Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Note, len(s.notes))
	for i, n := range s.notes {
		out[i] = *n
	}
	return out
}

// Requests returns the requests so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func message(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"message": msg})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	auth := ""
	switch {
	case s.Token != "" && r.Header.Get("PRIVATE-TOKEN") == s.Token:
		auth = "private-token"
	case s.Token != "" && r.Header.Get("Authorization") == "Bearer "+s.Token:
		auth = "bearer"
	}
	path := r.URL.EscapedPath()
	s.requests = append(s.requests, Request{Method: r.Method, Path: path, Auth: auth})
	if auth == "" {
		message(w, http.StatusUnauthorized, "401 Unauthorized")
		return
	}
	if s.Status != 0 {
		if s.Status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		message(w, s.Status, fmt.Sprintf("%d %s", s.Status, http.StatusText(s.Status)))
		return
	}
	rest, ok := strings.CutPrefix(path, "/api/v4/")
	if !ok {
		message(w, http.StatusNotFound, "404 Not Found")
		return
	}
	if rest == "user" && r.Method == http.MethodGet {
		writeJSON(w, http.StatusOK, map[string]any{"id": s.User.ID, "username": s.User.Username, "bot": true})
		return
	}
	parts := strings.Split(rest, "/")
	// projects/:id/merge_requests/:iid/notes[/:note_id]
	if len(parts) < 5 || len(parts) > 6 || parts[0] != "projects" || parts[2] != "merge_requests" || parts[4] != "notes" {
		message(w, http.StatusNotFound, "404 Not Found")
		return
	}
	pid, _ := url.PathUnescape(parts[1])
	if pid != s.Project && pid != s.PathWithNamespace {
		message(w, http.StatusNotFound, "404 Project Not Found")
		return
	}
	if parts[3] != strconv.Itoa(s.MR) {
		message(w, http.StatusNotFound, "404 Not found")
		return
	}
	if len(parts) == 6 {
		id, err := strconv.ParseInt(parts[5], 10, 64)
		if r.Method != http.MethodPut || err != nil {
			message(w, http.StatusNotFound, "404 Not Found")
			return
		}
		s.edit(w, r, id)
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.list(w, r)
	case http.MethodPost:
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		n := s.add(s.User, body, false)
		if s.FailPost > 0 {
			s.FailPost--
			message(w, http.StatusBadGateway, "502 Bad Gateway")
			return
		}
		writeJSON(w, http.StatusCreated, n)
	default:
		message(w, http.StatusMethodNotAllowed, "405 Method Not Allowed")
	}
}

// readBody reads the note's body from JSON or a form, as GitLab accepts.
func readBody(w http.ResponseWriter, r *http.Request) (string, bool) {
	var body string
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var v struct {
			Body *string `json:"body"`
		}
		if err := json.NewDecoder(r.Body).Decode(&v); err != nil || v.Body == nil {
			message(w, http.StatusBadRequest, "400 Bad request - body is missing")
			return "", false
		}
		body = *v.Body
	} else {
		r.ParseForm()
		body = r.Form.Get("body")
	}
	if body == "" {
		message(w, http.StatusBadRequest, "400 Bad request - body is missing")
		return "", false
	}
	if len(body) > 1_000_000 {
		message(w, http.StatusBadRequest, "400 Bad request - Note is too long")
		return "", false
	}
	return body, true
}

func (s *Server) edit(w http.ResponseWriter, r *http.Request, id int64) {
	for _, n := range s.notes {
		if n.ID != id {
			continue
		}
		if n.Author.ID != s.User.ID || n.System {
			message(w, http.StatusForbidden, "403 Forbidden")
			return
		}
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		n.Body = body
		n.Edits++
		n.UpdatedAt = time.Now().UTC().Format(time.RFC3339)
		writeJSON(w, http.StatusOK, n)
		return
	}
	message(w, http.StatusNotFound, "404 Not found")
}

// list answers one page, newest first (GitLab's default order: created_at
// desc).
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, perPage := 1, 20
	if v, err := strconv.Atoi(q.Get("page")); err == nil && v > 0 {
		page = v
	}
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil && v > 0 {
		perPage = min(v, 100)
	}
	all := make([]*Note, 0, len(s.notes))
	for i := len(s.notes) - 1; i >= 0; i-- {
		all = append(all, s.notes[i])
	}
	pages := max(1, (len(all)+perPage-1)/perPage)
	lo, hi := min((page-1)*perPage, len(all)), min(page*perPage, len(all))
	h := w.Header()
	h.Set("X-Page", strconv.Itoa(page))
	h.Set("X-Per-Page", strconv.Itoa(perPage))
	h.Set("X-Total", strconv.Itoa(len(all)))
	h.Set("X-Total-Pages", strconv.Itoa(pages))
	next := ""
	if page < pages {
		next = strconv.Itoa(page + 1)
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		qq := u.Query()
		qq.Set("page", next)
		u.RawQuery = qq.Encode()
		h.Set("Link", fmt.Sprintf(`<%s>; rel="next"`, u.String()))
	}
	h.Set("X-Next-Page", next)
	writeJSON(w, http.StatusOK, all[lo:hi])
}
