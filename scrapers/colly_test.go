package scrapers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const testPage = `<html><body><table><tr><th>GPU</th><th>Price</th></tr><tr><td>RTX 4090</td><td>$0.40/hr</td></tr></table></body></html>`

// htmlSite serves robots.txt as given (status and body) and testPage at
// every other path, recording the User-Agents it sees.
type htmlSite struct {
	robotsStatus int
	robots       string
	page         string
	mu           sync.Mutex
	agents       []string
	paths        []string
}

func (s *htmlSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.agents = append(s.agents, r.UserAgent())
	s.paths = append(s.paths, r.URL.Path)
	s.mu.Unlock()
	if r.URL.Path == "/robots.txt" {
		w.WriteHeader(s.robotsStatus)
		io.WriteString(w, s.robots)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	page := s.page
	if page == "" {
		page = testPage
	}
	io.WriteString(w, page)
}

func TestFetchHTMLRobots(t *testing.T) {
	tests := []struct {
		name         string
		robotsStatus int
		robots       string
		path         string
		wantErr      bool
	}{
		{"allowed path", 200, "User-agent: *\nDisallow: /private\n", "/gpus", false},
		{"disallowed path", 200, "User-agent: *\nDisallow: /private\n", "/private/gpus", true},
		{"disallowed for our agent", 200, "User-agent: listings\nDisallow: /\n\nUser-agent: *\nAllow: /\n", "/gpus", true},
		{"no robots.txt (404) allows", 404, "", "/gpus", false},
		{"robots.txt 500 disallows", 500, "", "/gpus", true},
		{"robots.txt 503 disallows", 503, "", "/gpus", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			site := &htmlSite{robotsStatus: tt.robotsStatus, robots: tt.robots}
			srv := httptest.NewServer(site)
			defer srv.Close()
			c := NewClient(fastClient())
			doc, err := FetchHTML(context.Background(), c, srv.URL+tt.path)
			if tt.wantErr {
				if !errors.Is(err, ErrRobotsDisallowed) || !strings.Contains(err.Error(), "robots.txt disallows URL") {
					t.Fatalf("got %v, want a robots.txt disallow", err)
				}
				for _, p := range site.paths {
					if p == tt.path {
						t.Errorf("the disallowed page was fetched anyway")
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("FetchHTML: %v", err)
			}
			if got := doc.Find("td").First().Text(); got != "RTX 4090" {
				t.Errorf("first cell: got %q, want %q", got, "RTX 4090")
			}
		})
	}
}

func TestFetchHTMLSizeLimit(t *testing.T) {
	// colly's own MaxBodySize would truncate this page and parse the rest;
	// ours fails the fetch.
	big := "<html><body><table>" + strings.Repeat("<tr><td>RTX 4090</td><td>$0.40</td></tr>", 2000) + "</table></body></html>"
	site := &htmlSite{robotsStatus: 404, page: big}
	srv := httptest.NewServer(site)
	defer srv.Close()
	o := fastClient()
	o.MaxBodyBytes = 10 << 10
	_, err := FetchHTML(context.Background(), NewClient(o), srv.URL+"/gpus")
	var tl *ErrTooLarge
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "larger than the 10240-byte limit") {
		t.Fatalf("got %v, want *ErrTooLarge", err)
	}
}

func TestCollyIgnoresEnvironment(t *testing.T) {
	t.Setenv("COLLY_USER_AGENT", "x")
	t.Setenv("COLLY_IGNORE_ROBOTSTXT", "true")
	t.Setenv("COLLY_MAX_BODY_SIZE", "10")
	site := &htmlSite{robotsStatus: 200, robots: "User-agent: *\nDisallow: /private\n"}
	srv := httptest.NewServer(site)
	defer srv.Close()
	c := NewClient(fastClient())
	doc, err := FetchHTML(context.Background(), c, srv.URL+"/gpus")
	if err != nil {
		t.Fatalf("FetchHTML: %v", err)
	}
	if got := doc.Find("td").First().Text(); got != "RTX 4090" {
		t.Errorf("page read through a 10-byte COLLY_MAX_BODY_SIZE: got first cell %q", got)
	}
	want := UserAgent("test", "https://example.org/contact")
	for _, ua := range site.agents {
		if ua != want {
			t.Errorf("User-Agent: got %q, want %q", ua, want)
		}
	}
	if _, err := FetchHTML(context.Background(), c, srv.URL+"/private"); !errors.Is(err, ErrRobotsDisallowed) {
		t.Errorf("COLLY_IGNORE_ROBOTSTXT=true: got %v, want robots.txt still honoured", err)
	}
	col := c.Colly(context.Background())
	if col.UserAgent != want || col.IgnoreRobotsTxt || col.MaxBodySize != 0 {
		t.Errorf("collector: got UA %q, IgnoreRobotsTxt %t, MaxBodySize %d", col.UserAgent, col.IgnoreRobotsTxt, col.MaxBodySize)
	}
}

func TestFetchHTMLErrors(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		wantErr string
	}{
		{"not found", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				http.NotFound(w, r)
				return
			}
			http.Error(w, "gone", http.StatusGone)
		}, "HTTP 410 Gone"},
		{"server error after retries", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				http.NotFound(w, r)
				return
			}
			http.Error(w, "boom", http.StatusBadGateway)
		}, "HTTP 502 Bad Gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			_, err := FetchHTML(context.Background(), NewClient(fastClient()), srv.URL+"/gpus?api_key=hunter22")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "hunter22") {
				t.Fatalf("got %v, want an error with %q and no key", err, tt.wantErr)
			}
		})
	}
}

func TestFetchHTMLDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := FetchHTML(ctx, NewClient(fastClient()), srv.URL+"/gpus")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context deadline", err)
	}
}
