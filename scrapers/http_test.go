package scrapers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sleepRecorder is an injectable Sleep that returns at once and remembers
// what it was asked to wait.
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleepRecorder) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

func TestUserAgent(t *testing.T) {
	tests := []struct{ version, contact, want string }{
		{"1.2.0", "ops@example.org", "listings/1.2.0 (+ops@example.org)"},
		{"1.2.0", "", "listings/1.2.0"},
		{"", "https://example.org", "listings/dev (+https://example.org)"},
	}
	for _, tt := range tests {
		if got := UserAgent(tt.version, tt.contact); got != tt.want {
			t.Errorf("UserAgent(%q, %q): got %q, want %q", tt.version, tt.contact, got, tt.want)
		}
	}
}

// statusSequence serves the given statuses in turn (then 200 "ok"), with
// the headers given for each.
func statusSequence(t *testing.T, statuses []int, headers []http.Header) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i < len(headers) {
			for k, v := range headers[i] {
				w.Header()[k] = v
			}
		}
		if i < len(statuses) {
			w.WriteHeader(statuses[i])
			io.WriteString(w, "not yet")
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestClientRetries(t *testing.T) {
	ra := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	tests := []struct {
		name        string
		statuses    []int
		headers     []http.Header
		post        bool
		wantErr     string
		wantHits    int32
		wantRetries int
		// wantWaits bounds each recorded sleep: [lo, hi].
		wantWaits [][2]time.Duration
	}{
		{
			name:     "429 then 503 then ok",
			statuses: []int{429, 503},
			wantHits: 3, wantRetries: 2,
			wantWaits: [][2]time.Duration{{0, 100 * time.Millisecond}, {0, 200 * time.Millisecond}},
		},
		{
			name:     "backoff is capped",
			statuses: []int{500, 500, 500},
			wantHits: 4, wantRetries: 3,
			wantWaits: [][2]time.Duration{{0, 100 * time.Millisecond}, {0, 200 * time.Millisecond}, {0, 250 * time.Millisecond}},
		},
		{
			name:     "retry-after seconds honoured",
			statuses: []int{429},
			headers:  []http.Header{ra("7")},
			wantHits: 2, wantRetries: 1,
			wantWaits: [][2]time.Duration{{7*time.Second - 500*time.Millisecond, 7 * time.Second}},
		},
		{
			name:     "retry-after above the cap fails at once",
			statuses: []int{429},
			headers:  []http.Header{ra("3600")},
			wantErr:  "server asks to wait 1h0m0s: retry-after above the cap",
			wantHits: 1,
		},
		{
			name:     "persistent 503 gives up",
			statuses: []int{503, 503, 503, 503, 503},
			wantErr:  "HTTP 503 Service Unavailable (after 3 retries)",
			wantHits: 4, wantRetries: 3,
		},
		{
			name:     "404 is not retried",
			statuses: []int{404},
			wantErr:  "HTTP 404 Not Found",
			wantHits: 1,
		},
		{
			name:     "post with GetBody is retried",
			statuses: []int{502},
			post:     true,
			wantHits: 2, wantRetries: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, hits := statusSequence(t, tt.statuses, tt.headers)
			rec := &sleepRecorder{}
			c := NewClient(ClientOptions{
				Hosts: NewHosts(), HostDelay: -1, Sleep: rec.sleep,
				BaseBackoff: 100 * time.Millisecond, MaxBackoff: 250 * time.Millisecond,
			})
			var body []byte
			var err error
			if tt.post {
				body, err = c.PostJSON(context.Background(), srv.URL, map[string]int{"limit": 1}, nil)
			} else {
				body, err = c.Get(context.Background(), srv.URL, nil)
			}
			if tt.wantErr == "" && (err != nil || string(body) != "ok") {
				t.Fatalf("got %q, %v; want ok", body, err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
			}
			_, _, retries := c.Stats()
			if hits.Load() != tt.wantHits || retries != tt.wantRetries {
				t.Errorf("got %d requests, %d retries; want %d, %d", hits.Load(), retries, tt.wantHits, tt.wantRetries)
			}
			if tt.wantWaits != nil {
				waits := rec.got()
				if len(waits) != len(tt.wantWaits) {
					t.Fatalf("sleeps: got %v, want %d", waits, len(tt.wantWaits))
				}
				for i, w := range waits {
					if w < tt.wantWaits[i][0] || w > tt.wantWaits[i][1] {
						t.Errorf("sleep %d: got %s, want within %v", i, w, tt.wantWaits[i])
					}
				}
			}
		})
	}
}

func TestClientRetryAfterCapError(t *testing.T) {
	srv, _ := statusSequence(t, []int{503}, []http.Header{{"Retry-After": {"61"}}})
	c := NewClient(ClientOptions{Hosts: NewHosts(), HostDelay: -1, Sleep: (&sleepRecorder{}).sleep})
	_, err := c.Get(context.Background(), srv.URL, nil)
	if !errors.Is(err, ErrRetryAfterTooLong) {
		t.Fatalf("got %v, want ErrRetryAfterTooLong", err)
	}
}

func TestBackoffFullJitter(t *testing.T) {
	base, limit := 100*time.Millisecond, 3*time.Second
	for attempt := range 8 {
		ceiling := min(base<<attempt, limit)
		var maxSeen time.Duration
		for range 500 {
			d := backoff(attempt, base, limit)
			if d < 0 || d > ceiling {
				t.Fatalf("attempt %d: got %s, want within [0, %s]", attempt, d, ceiling)
			}
			maxSeen = max(maxSeen, d)
		}
		// Full jitter spreads over the whole range: 500 draws reach its top half.
		if maxSeen < ceiling/2 {
			t.Errorf("attempt %d: largest of 500 draws %s, want above %s", attempt, maxSeen, ceiling/2)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"5", 5 * time.Second, true},
		{" 0 ", 0, true},
		{"Sun, 01 Jun 2025 12:00:30 GMT", 30 * time.Second, true},
		{"Sun, 01 Jun 2025 11:00:00 GMT", 0, true},
		{"-3", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseRetryAfter(%q): got %s, %t; want %s, %t", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

// TestClientRetryAfterRealSleep is the one test that waits for real: the
// server must not see the retry sooner than its Retry-After said.
func TestClientRetryAfterRealSleep(t *testing.T) {
	var mu sync.Mutex
	var times []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		times = append(times, time.Now())
		n := len(times)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	c := NewClient(ClientOptions{Hosts: NewHosts(), HostDelay: -1})
	if _, err := c.Get(context.Background(), srv.URL, nil); err != nil {
		t.Fatal(err)
	}
	if len(times) != 2 {
		t.Fatalf("got %d requests, want 2", len(times))
	}
	if gap := times[1].Sub(times[0]); gap < time.Second {
		t.Errorf("retry after %s, want no sooner than the 1s Retry-After", gap)
	}
}

func TestClientNonReplayablePostNotRetried(t *testing.T) {
	srv, hits := statusSequence(t, []int{503}, nil)
	c := NewClient(ClientOptions{Hosts: NewHosts(), HostDelay: -1, Sleep: (&sleepRecorder{}).sleep})
	req, _ := http.NewRequest(http.MethodPost, srv.URL, io.NopCloser(strings.NewReader("x")))
	_, err := c.Do(context.Background(), req)
	if err == nil || hits.Load() != 1 {
		t.Errorf("got %d requests, error %v; want 1 request and an error", hits.Load(), err)
	}
}

func TestClientTimeoutRetried(t *testing.T) {
	var n atomic.Int32
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			select { // the first attempt hangs past the request timeout
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	c := NewClient(ClientOptions{Hosts: NewHosts(), HostDelay: -1, RequestTimeout: 50 * time.Millisecond, Sleep: (&sleepRecorder{}).sleep})
	body, err := c.Get(context.Background(), srv.URL, nil)
	_, _, retries := c.Stats()
	if err != nil || string(body) != "ok" || retries != 1 {
		t.Errorf("got %q, %v, %d retries; want ok after 1 retry", body, err, retries)
	}
}

func TestClientRunDeadlineCutsSleep(t *testing.T) {
	srv, _ := statusSequence(t, []int{503, 503, 503}, nil)
	// A real sleep of up to an hour: only the context can end it.
	c := NewClient(ClientOptions{Hosts: NewHosts(), HostDelay: -1, BaseBackoff: time.Hour, MaxBackoff: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := c.Get(ctx, srv.URL, nil); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Get still sleeping 30s after its deadline")
	}
}

func TestClientSizeLimit(t *testing.T) {
	big := strings.Repeat("x", 5000)
	tests := []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"content-length", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) }},
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			for range 5 {
				io.WriteString(w, big[:1000])
				w.(http.Flusher).Flush()
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			c := NewClient(ClientOptions{Hosts: NewHosts(), HostDelay: -1, MaxBodyBytes: 4096})
			_, err := c.Get(context.Background(), srv.URL, nil)
			var tl *ErrTooLarge
			if !errors.As(err, &tl) || tl.Limit != 4096 {
				t.Fatalf("got %v, want *ErrTooLarge{4096}", err)
			}
			// The gate is free again: a second request is not stuck behind the first.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := c.Get(ctx, srv.URL, nil); !errors.As(err, &tl) {
				t.Errorf("second request: got %v, want *ErrTooLarge", err)
			}
		})
	}
}

func TestHostGateOneAtATime(t *testing.T) {
	var inFlight, peak atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond) // give a second request the chance to overlap
		inFlight.Add(-1)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	hosts := NewHosts()
	var wg sync.WaitGroup
	for range 3 { // three clients (three runs) sharing the gate
		c := NewClient(ClientOptions{Hosts: hosts, HostDelay: -1})
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Get(context.Background(), srv.URL, nil); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	if peak.Load() != 1 {
		t.Errorf("peak concurrent requests to one host: got %d, want 1", peak.Load())
	}
}

func TestHostGateHostsInParallel(t *testing.T) {
	// Each server's handler waits until the other's has started: that only
	// finishes if requests to different hosts are in flight together.
	aIn, bIn := make(chan struct{}), make(chan struct{})
	handler := func(mine, other chan struct{}) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			close(mine)
			select {
			case <-other:
				io.WriteString(w, "ok")
			case <-time.After(10 * time.Second):
				http.Error(w, "hosts were serialised", http.StatusConflict)
			}
		}
	}
	a := httptest.NewServer(handler(aIn, bIn))
	defer a.Close()
	b := httptest.NewServer(handler(bIn, aIn))
	defer b.Close()
	c := NewClient(ClientOptions{Hosts: NewHosts(), HostDelay: -1})
	errs := make(chan error, 2)
	for _, u := range []string{a.URL, b.URL} {
		go func() { _, err := c.Get(context.Background(), u, nil); errs <- err }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestHostGateDelay(t *testing.T) {
	srv, _ := statusSequence(t, nil, nil)
	rec := &sleepRecorder{}
	c := NewClient(ClientOptions{Hosts: NewHosts(), HostDelay: time.Hour, Sleep: rec.sleep})
	for range 2 {
		if _, err := c.Get(context.Background(), srv.URL, nil); err != nil {
			t.Fatal(err)
		}
	}
	waits := rec.got()
	// The first request goes at once; the second waits the delay plus up to 50% jitter.
	if len(waits) != 1 || waits[0] < time.Hour-time.Minute || waits[0] > 90*time.Minute {
		t.Errorf("host waits: got %v, want one in [1h, 1h30m]", waits)
	}
}

func TestClientErrorsRedactSecrets(t *testing.T) {
	srv, _ := statusSequence(t, []int{500}, nil)
	c := NewClient(ClientOptions{Hosts: NewHosts(), HostDelay: -1, MaxRetries: -1})
	_, err := c.Get(context.Background(), srv.URL+"/x?api_key=hunter22&gpu=4090", nil)
	if err == nil || strings.Contains(err.Error(), "hunter22") || !strings.Contains(err.Error(), "gpu=4090") {
		t.Errorf("got %v, want an error without the key but with the other parameters", err)
	}
	// A connection error: net/http's own error text repeats the URL.
	_, err = c.Get(context.Background(), "http://127.0.0.1:1/?token=hunter22", nil)
	if err == nil || strings.Contains(err.Error(), "hunter22") {
		t.Errorf("got %v, want an error without the token", err)
	}
}
