// Package ghfake is a stateful stand-in for the part of GitHub's REST API
// gpugate uses: the authenticated user, issues (list by label, create,
// edit), issue comments (list with
// pagination, create, edit), pull requests (list with a head filter, list
// by commit) and check runs. It answers for one repository (404 for any
// other, as GitHub does for a repository the token cannot see), with a
// read-only token's 403, GITHUB_TOKEN's 403 on /user, rate limits (403 or
// 429 with Retry-After, a secondary limit with no header at all) and server
// errors, and it records every request. Tests use it in-process; the act
// end-to-end test points GITHUB_API_URL at it.
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
	HTMLURL   string `json:"html_url"`
}

// PR is a stored pull request.
type PR struct {
	Number int    `json:"number"`
	State  string `json:"state"`
	Head   Ref    `json:"head"`
	Base   Ref    `json:"base"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
}

// Ref is a pull request's head or base.
type Ref struct {
	SHA  string `json:"sha"`
	Ref  string `json:"ref"`
	Repo struct {
		FullName string `json:"full_name"`
		Fork     bool   `json:"fork"`
		Owner    struct {
			Login string `json:"login"`
		} `json:"owner"`
	} `json:"repo"`
}

// Issue is a stored issue (the alerts of refresh mode open them).
type Issue struct {
	Number int     `json:"number"`
	Title  string  `json:"title"`
	Body   string  `json:"body"`
	State  string  `json:"state"`
	Labels []Label `json:"labels"`
	User   struct {
		Login string `json:"login"`
	} `json:"user"`
	HTMLURL string `json:"html_url"`
}

// Label is an issue's label.
type Label struct {
	Name string `json:"name"`
}

// Server is the stand-in.
type Server struct {
	Issues []*Issue
	*httptest.Server
	mu       sync.Mutex
	next     int64
	Comments map[int][]*Comment // by PR number
	PRs      []*PR
	Checks   []map[string]any
	Requests []string // "METHOD path?query"
	PerPage  int      // page size it serves at most (to exercise pagination)
	// Repo is the only repository it knows, "owner/name"; "" knows all.
	Repo string
	// Login is the token's identity: a PAT's user answers GET /user with
	// it and writes comments as it ("User"). Empty means GITHUB_TOKEN: GET
	// /user is 403 and comments are written by github-actions[bot].
	Login string

	// Failure injection: each counter makes that many next requests fail.
	ReadOnly bool // every write answers 403 "Resource not accessible by integration"
	Fail500  int
	Limit429 int // with Retry-After: 1
	Limit403 int // with X-RateLimit-Remaining: 0 and a reset in 1 s
	// Secondary answers 403 "You have exceeded a secondary rate limit" with
	// no Retry-After and no X-RateLimit-* headers.
	Secondary int
}

// New starts a stand-in on 127.0.0.1.
func New() *Server {
	s := &Server{Comments: map[int][]*Comment{}, next: 100, PerPage: 30}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /user", s.user)
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls", s.pulls)
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls/{n}", s.pull)
	mux.HandleFunc("GET /repos/{owner}/{repo}/commits/{sha}/pulls", s.commitPulls)
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{n}/comments", s.list)
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues/{n}/comments", s.create)
	mux.HandleFunc("PATCH /repos/{owner}/{repo}/issues/comments/{id}", s.edit)
	mux.HandleFunc("POST /repos/{owner}/{repo}/check-runs", s.check)
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues", s.listIssues)
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues", s.createIssue)
	mux.HandleFunc("PATCH /repos/{owner}/{repo}/issues/{n}", s.editIssue)
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
	c.HTMLURL = fmt.Sprintf("https://github.example/%s/pull/%d#issuecomment-%d", s.Repo, pr, c.ID)
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
		case s.Secondary > 0:
			s.Secondary--
			s.mu.Unlock()
			http.Error(w, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`, http.StatusForbidden)
			return
		case s.Repo != "" && strings.HasPrefix(r.URL.Path, "/repos/") && !strings.HasPrefix(r.URL.Path, "/repos/"+s.Repo+"/"):
			s.mu.Unlock()
			reply(w, http.StatusNotFound, map[string]string{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
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

func (s *Server) user(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	login := s.Login
	s.mu.Unlock()
	if login == "" {
		reply(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user"})
		return
	}
	reply(w, http.StatusOK, map[string]any{"login": login, "type": "User", "id": 1})
}

// AddPR stores an open pull request.
func (s *Server) AddPR(number int, headRepo, headRef, headSHA string, labels ...string) *PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &PR{Number: number, State: "open"}
	p.Head.SHA, p.Head.Ref, p.Head.Repo.FullName = headSHA, headRef, headRepo
	p.Head.Repo.Owner.Login, _, _ = strings.Cut(headRepo, "/")
	p.Head.Repo.Fork = s.Repo != "" && headRepo != s.Repo
	p.Base.Ref = "main"
	p.Base.Repo.FullName = s.Repo
	p.Base.Repo.Owner.Login, _, _ = strings.Cut(s.Repo, "/")
	for _, l := range labels {
		p.Labels = append(p.Labels, struct {
			Name string `json:"name"`
		}{l})
	}
	s.PRs = append(s.PRs, p)
	return p
}

// pulls lists open pull requests; head=owner:branch filters them, as
// GitHub's does.
func (s *Server) pulls(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	state, head := r.URL.Query().Get("state"), r.URL.Query().Get("head")
	out := []*PR{}
	for _, p := range s.PRs {
		if (state == "" || state == "open") && p.State != "open" {
			continue
		}
		if head != "" && head != p.Head.Repo.Owner.Login+":"+p.Head.Ref {
			continue
		}
		out = append(out, p)
	}
	reply(w, http.StatusOK, out)
}

// pull returns one pull request, open or not; 404 when there is none.
func (s *Server) pull(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := strconv.Atoi(r.PathValue("n"))
	for _, p := range s.PRs {
		if p.Number == n {
			reply(w, http.StatusOK, p)
			return
		}
	}
	reply(w, http.StatusNotFound, map[string]string{"message": "Not Found", "documentation_url": "https://docs.github.com/rest/pulls/pulls#get-a-pull-request"})
}

// commitPulls lists the pull requests whose head is the commit.
func (s *Server) commitPulls(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*PR{}
	for _, p := range s.PRs {
		if p.Head.SHA == r.PathValue("sha") {
			out = append(out, p)
		}
	}
	reply(w, http.StatusOK, out)
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
	login, typ := "github-actions[bot]", "Bot"
	if s.Login != "" {
		login, typ = s.Login, "User"
	}
	c := s.add(n, in.Body, login, typ)
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

// listIssues lists issues: state (default open) and labels (all of a
// comma-separated list) filter them, as GitHub's does. It serves one page.
func (s *Server) listIssues(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	state := r.URL.Query().Get("state")
	if state == "" {
		state = "open"
	}
	var want []string
	if l := r.URL.Query().Get("labels"); l != "" {
		want = strings.Split(l, ",")
	}
	out := []*Issue{}
	for _, is := range s.Issues {
		if state != "all" && is.State != state {
			continue
		}
		ok := true
		for _, l := range want {
			has := false
			for _, x := range is.Labels {
				has = has || x.Name == l
			}
			ok = ok && has
		}
		if ok {
			out = append(out, is)
		}
	}
	reply(w, http.StatusOK, out)
}

func (s *Server) createIssue(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title, Body string
		Labels      []string
	}
	json.NewDecoder(r.Body).Decode(&in)
	if len(in.Body) > 65536 {
		reply(w, http.StatusUnprocessableEntity, map[string]string{"message": "Body is too long (maximum is 65536 characters)"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	is := &Issue{Number: len(s.Issues) + 1, Title: in.Title, Body: in.Body, State: "open"}
	for _, l := range in.Labels {
		is.Labels = append(is.Labels, Label{l})
	}
	is.User.Login = "github-actions[bot]"
	if s.Login != "" {
		is.User.Login = s.Login
	}
	is.HTMLURL = fmt.Sprintf("https://github.example/%s/issues/%d", s.Repo, is.Number)
	s.Issues = append(s.Issues, is)
	reply(w, http.StatusCreated, is)
}

func (s *Server) editIssue(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title, Body *string
		State       *string
	}
	json.NewDecoder(r.Body).Decode(&in)
	n, _ := strconv.Atoi(r.PathValue("n"))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, is := range s.Issues {
		if is.Number == n {
			if in.Title != nil {
				is.Title = *in.Title
			}
			if in.Body != nil {
				is.Body = *in.Body
			}
			if in.State != nil {
				is.State = *in.State
			}
			reply(w, http.StatusOK, is)
			return
		}
	}
	reply(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}
