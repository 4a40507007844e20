// Package ghfake is a stateful stand-in for the part of GitHub's REST API
// gpugate uses: issue comments (list with pagination, create, edit) and
// check runs. It can answer with a read-only token's 403, rate limits (403 or
// 429 with Retry-After) and server errors, and it records every request.
// Tests use it in-process; the act end-to-end test points GITHUB_API_URL at
// it.
package ghfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Comment is a stored issue comment.
type Comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	User struct {
		Login string `json:"login"`
		Type  string `json:"type"`
	} `json:"user"`
	CreatedAt string `json:"created_at"`
}

// Server is the stand-in.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	next     int64
	Comments map[int][]*Comment // by PR number
	Checks   []map[string]any
	Requests []string // "METHOD path?query"
	PerPage  int      // page size it serves at most (to exercise pagination)

	// Failure injection: each counter makes that many next requests fail.
	ReadOnly bool // every write answers 403 "Resource not accessible by integration"
	Fail500  int
	Limit429 int // with Retry-After: 1
	Limit403 int // with X-RateLimit-Remaining: 0 and a reset in 1 s
}

// New starts a stand-in on 127.0.0.1.
func New() *Server {
	s := &Server{Comments: map[int][]*Comment{}, next: 100, PerPage: 30}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{n}/comments", s.list)
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues/{n}/comments", s.create)
	mux.HandleFunc("PATCH /repos/{owner}/{repo}/issues/comments/{id}", s.edit)
	mux.HandleFunc("POST /repos/{owner}/{repo}/check-runs", s.check)
	s.Server = httptest.NewServer(s.wrap(mux))
	return s
}

// AddComment stores a comment as if someone had written it.
func (s *Server) AddComment(pr int, body, login, typ string) *Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.add(pr, body, login, typ)
}

func (s *Server) add(pr int, body, login, typ string) *Comment {
	s.next++
	c := &Comment{ID: s.next, Body: body, CreatedAt: time.Now().UTC().Format(time.RFC3339)}
	c.User.Login, c.User.Type = login, typ
	s.Comments[pr] = append(s.Comments[pr], c)
	return c
}

func (s *Server) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.Requests = append(s.Requests, r.Method+" "+r.URL.RequestURI())
		switch {
		case s.Fail500 > 0:
			s.Fail500--
			s.mu.Unlock()
			http.Error(w, `{"message":"Server Error"}`, http.StatusInternalServerError)
			return
		case s.Limit429 > 0:
			s.Limit429--
			s.mu.Unlock()
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"message":"API rate limit exceeded"}`, http.StatusTooManyRequests)
			return
		case s.Limit403 > 0:
			s.Limit403--
			s.mu.Unlock()
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10))
			http.Error(w, `{"message":"API rate limit exceeded","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}`, http.StatusForbidden)
			return
		case s.ReadOnly && r.Method != http.MethodGet:
			s.mu.Unlock()
			http.Error(w, `{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest"}`, http.StatusForbidden)
			return
		}
		s.mu.Unlock()
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			http.Error(w, `{"message":"Requires authentication"}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := strconv.Atoi(r.PathValue("n"))
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 || per > s.PerPage {
		per = s.PerPage
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(page, 1)
	all := s.Comments[n]
	lo, hi := min((page-1)*per, len(all)), min(page*per, len(all))
	if hi < len(all) {
		u := *r.URL
		q := u.Query()
		q.Set("page", strconv.Itoa(page+1))
		q.Set("per_page", strconv.Itoa(per))
		u.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.URL, u.RequestURI()))
	}
	reply(w, http.StatusOK, all[lo:hi])
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var in struct{ Body string }
	json.NewDecoder(r.Body).Decode(&in)
	if len(in.Body) > 65536 {
		reply(w, http.StatusUnprocessableEntity, map[string]string{"message": "Body is too long (maximum is 65536 characters)"})
		return
	}
	n, _ := strconv.Atoi(r.PathValue("n"))
	s.mu.Lock()
	c := s.add(n, in.Body, "github-actions[bot]", "Bot")
	s.mu.Unlock()
	reply(w, http.StatusCreated, c)
}

func (s *Server) edit(w http.ResponseWriter, r *http.Request) {
	var in struct{ Body string }
	json.NewDecoder(r.Body).Decode(&in)
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cs := range s.Comments {
		for _, c := range cs {
			if c.ID == id {
				c.Body = in.Body
				reply(w, http.StatusOK, c)
				return
			}
		}
	}
	reply(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}

func (s *Server) check(w http.ResponseWriter, r *http.Request) {
	var in map[string]any
	json.NewDecoder(r.Body).Decode(&in)
	s.mu.Lock()
	s.next++
	in["id"] = s.next
	s.Checks = append(s.Checks, in)
	s.mu.Unlock()
	reply(w, http.StatusCreated, in)
}

// Snapshot returns the comments of a PR and the requests seen so far.
func (s *Server) Snapshot(pr int) ([]Comment, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cs []Comment
	for _, c := range s.Comments[pr] {
		cs = append(cs, *c)
	}
	return cs, append([]string(nil), s.Requests...)
}
