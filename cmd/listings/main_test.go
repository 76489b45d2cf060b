package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listings-dev/listings/fixtures"
	"github.com/listings-dev/listings/index"
)

// cli runs the whole CLI in-process.
type cli struct {
	t      *testing.T
	db     string
	env    map[string]string
	now    time.Time
	stdout string
	stderr string
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	dir := t.TempDir()
	return &cli{
		t:   t,
		db:  filepath.Join(dir, "listings.db"),
		env: map[string]string{"HOME": dir, "XDG_CONFIG_HOME": filepath.Join(dir, "config")},
		now: time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC),
	}
}

func (c *cli) run(args ...string) int {
	c.t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string { return c.env[k] }
	code := runEnv(context.Background(), append([]string{"--db", c.db}, args...), &out, &errb, getenv, func() time.Time { return c.now })
	c.stdout, c.stderr = out.String(), errb.String()
	return code
}

func (c *cli) mustRun(args ...string) string {
	c.t.Helper()
	if code := c.run(args...); code != 0 {
		c.t.Fatalf("listings %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, c.stdout, c.stderr)
	}
	return c.stdout
}

// wrappedVast serves the real 1,396-offer recording as the API does:
// {"offers": [...]}.
func wrappedVast(t testing.TB) []byte {
	t.Helper()
	raw, err := fs.ReadFile(fixtures.FS, "vastai/vast-search-offers-full-2024-11-05.json")
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]byte(`{"offers": `), raw...), '}')
}

// switchable is a loopback server whose answer the test changes between runs.
type switchable struct {
	handler atomic.Value // http.HandlerFunc
	srv     *httptest.Server
}

func newSwitchable(t *testing.T, h http.HandlerFunc) *switchable {
	s := &switchable{}
	s.handler.Store(h)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.handler.Load().(http.HandlerFunc)(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *switchable) set(h http.HandlerFunc) { s.handler.Store(h) }

func bodyHandler(b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
}

type medianRow struct {
	GPU          string   `json:"gpu"`
	Kind         string   `json:"kind"`
	Live         bool     `json:"live"`
	Listings     int      `json:"listings"`
	Median       *float64 `json:"median"`
	Floor        *float64 `json:"floor"`
	P10          *float64 `json:"p10"`
	DurableFloor *float64 `json:"durable_floor"`
	Disappearing int      `json:"disappearing"`
	LastOKRun    *string  `json:"last_ok_run"`
	Sources      []struct {
		Source   string  `json:"source"`
		Listings int     `json:"listings"`
		Median   float64 `json:"median"`
	} `json:"sources"`
}

func (c *cli) median(args ...string) []medianRow {
	c.t.Helper()
	c.run(append([]string{"median", "--json"}, args...)...)
	var rows []medianRow
	if err := json.Unmarshal([]byte(c.stdout), &rows); err != nil {
		c.t.Fatalf("median --json: %v\n%s\n%s", err, c.stdout, c.stderr)
	}
	return rows
}

// TestCollectToMedianOnRealRecording is the foundation's acceptance: the
// real Vast.ai recording, collected through the real fetch path, gives the
// 4090 numbers worked out from the file (311 listings, median
// 0.4221863…, floor 0.16) and four A100 rows.
func TestCollectToMedianOnRealRecording(t *testing.T) {
	c := newCLI(t)
	srv := newSwitchable(t, bodyHandler(wrappedVast(t)))
	c.mustRun("collect", "--source", "vastai", "--source-url", "vastai="+srv.srv.URL, "--observed-at", "2026-11-30T03:00:00Z")
	if !strings.Contains(c.stdout, "vastai") || !strings.Contains(c.stdout, "ok") {
		t.Fatalf("collect output lacks the ok run:\n%s", c.stdout)
	}
	rows := c.median("--gpu", "4090")
	if len(rows) != 1 {
		t.Fatalf("median --gpu 4090: %d rows, want 1: %+v", len(rows), rows)
	}
	r := rows[0]
	if r.GPU != "RTX 4090" || !r.Live || r.Listings != 311 {
		t.Errorf("4090 row = %s live=%v listings=%d; want RTX 4090 live 311", r.GPU, r.Live, r.Listings)
	}
	if r.Median == nil || *r.Median != 0.422186 {
		t.Errorf("4090 median = %v, want 0.422186 ($0.4222)", r.Median)
	}
	if r.Floor == nil || *r.Floor != 0.16 {
		t.Errorf("4090 floor = %v, want 0.16", r.Floor)
	}
	if len(r.Sources) != 1 || r.Sources[0].Source != "vastai" || r.Sources[0].Listings != 311 {
		t.Errorf("4090 sources = %+v", r.Sources)
	}
	a100 := c.median("--gpu", "a100")
	var names []string
	for _, r := range a100 {
		names = append(names, r.GPU)
		if !r.Live || r.Listings == 0 {
			t.Errorf("%s: live=%v listings=%d; the recording has offers of every A100 variant", r.GPU, r.Live, r.Listings)
		}
	}
	if got, want := strings.Join(names, ","), "A100 40GB PCIe,A100 40GB SXM,A100 80GB PCIe,A100 80GB SXM"; got != want {
		t.Errorf("median --gpu a100 rows = %s, want %s", got, want)
	}
	// The human table names the units and the as-of time.
	out := c.mustRun("median", "--gpu", "4090")
	for _, want := range []string{"$/GPU-hr", "as of 2026-11-30 04:00Z", "$0.4222", "RTX 4090"} {
		if !strings.Contains(out, want) {
			t.Errorf("median table lacks %q:\n%s", want, out)
		}
	}
	// Re-running the same import changes nothing (idempotent per source, started).
	c.mustRun("collect", "--source", "vastai", "--source-url", "vastai="+srv.srv.URL, "--observed-at", "2026-11-30T03:00:00Z")
	if again := c.median("--gpu", "4090"); again[0].Listings != 311 {
		t.Errorf("after re-import: %d listings, want 311", again[0].Listings)
	}
	if code := c.run("check"); code != 0 {
		t.Errorf("check: exit %d\n%s%s", code, c.stdout, c.stderr)
	}
}

// TestFailedRunsChangeNothing: HTTP 500, a hang past --timeout and
// truncated JSON each exit 1, are stored as failed runs with their reason,
// and leave the market of the last ok run standing with nothing marked
// disappeared.
func TestFailedRunsChangeNothing(t *testing.T) {
	c := newCLI(t)
	good := wrappedVast(t)
	srv := newSwitchable(t, bodyHandler(good))
	url := "vastai=" + srv.srv.URL
	c.mustRun("collect", "--source", "vastai", "--source-url", url, "--observed-at", "2026-11-29T03:00:00Z")
	before := c.median("--gpu", "4090")

	hang := make(chan struct{})
	defer close(hang)
	cases := []struct {
		name    string
		handler http.HandlerFunc
		args    []string
		reason  string
	}{
		{"http 500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }, nil, "500"},
		{"hang", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}, []string{"--timeout", "300ms"}, "timeout"},
		{"truncated", bodyHandler(good[:len(good)/2]), nil, ""},
	}
	for i, tc := range cases {
		srv.set(tc.handler)
		observed := time.Date(2026, 11, 29, 6+i, 0, 0, 0, time.UTC).Format(time.RFC3339)
		args := append([]string{"collect", "--source", "vastai", "--source-url", url, "--observed-at", observed}, tc.args...)
		if code := c.run(args...); code != 1 {
			t.Errorf("%s: collect exit %d, want 1\n%s%s", tc.name, code, c.stdout, c.stderr)
		}
		if !strings.Contains(c.stdout, "failed") || !strings.Contains(c.stdout, tc.reason) {
			t.Errorf("%s: collect output lacks the failure and its reason %q:\n%s", tc.name, tc.reason, c.stdout)
		}
	}
	after := c.median("--gpu", "4090")
	if after[0].Listings != before[0].Listings || *after[0].Median != *before[0].Median || after[0].Disappearing != 0 {
		t.Errorf("failed runs changed the market: before %+v after %+v", before[0], after[0])
	}
	c.mustRun("runs", "--json")
	var runs []struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal([]byte(c.stdout), &runs); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, r := range runs {
		if r.Status == "failed" {
			failed++
			if r.Error == "" {
				t.Errorf("a failed run without its reason: %+v", r)
			}
		}
	}
	if len(runs) != 4 || failed != 3 {
		t.Errorf("runs: %d stored, %d failed; want 4 and 3: %+v", len(runs), failed, runs)
	}
	// The next ok run, with the same market, still marks nothing gone.
	srv.set(bodyHandler(good))
	c.mustRun("collect", "--source", "vastai", "--source-url", url, "--observed-at", "2026-11-30T03:00:00Z")
	c.mustRun("flags", "--json", "--since", "30d")
	if strings.TrimSpace(c.stdout) != "[]" {
		t.Errorf("flags after failed runs and an unchanged ok run: %s, want []", c.stdout)
	}
}

func TestUsageAndEmptyIndex(t *testing.T) {
	c := newCLI(t)
	if code := c.run("median", "--gpu", "voodoo"); code != 2 || !strings.Contains(c.stderr, "listings: error:") {
		t.Errorf("unknown --gpu: exit %d stderr %q; want 2 and an error line", code, c.stderr)
	}
	if code := c.run("median"); code != 2 {
		t.Errorf("median without --gpu: exit %d, want 2", code)
	}
	if code := c.run("frobnicate"); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
	// A missing index is an empty index to every reader, and nothing creates it.
	if code := c.run("check"); code != 0 {
		t.Errorf("check on a missing index: exit %d, want 0: %s", code, c.stderr)
	}
	for _, cmd := range [][]string{{"gpus", "--json"}, {"runs", "--json"}, {"flags", "--json"}} {
		if code := c.run(cmd...); code != 0 || strings.TrimSpace(c.stdout) != "[]" {
			t.Errorf("%v on a missing index: exit %d, stdout %q; want 0 and []", cmd, code, c.stdout)
		}
	}
	rows := c.median("--gpu", "4090")
	if len(rows) != 1 || rows[0].Live || rows[0].Median != nil {
		t.Errorf("median on an empty index: %+v; want one row, not live, no price", rows)
	}
	if c.run("median", "--gpu", "4090") != 1 {
		t.Error("median with no live row: want exit 1")
	}
	if _, err := filepath.Glob(c.db); err != nil {
		t.Fatal(err)
	}
	if db, err := index.OpenReadOnly(c.db, index.Options{}); err == nil {
		db.Close()
	}
}

func TestConfigUnknownKey(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(t.TempDir(), "listings.toml")
	writeFile(t, cfg, "max_age = \"36h\"\n\n[source.vastai]\nenabled = true\nurll = \"x\"\n")
	if code := c.run("--config", cfg, "runs"); code != 1 || !strings.Contains(c.stderr, "line 5") || !strings.Contains(c.stderr, "urll") {
		t.Errorf("unknown key: exit %d stderr %q; want exit 1 naming line 5 and the key", code, c.stderr)
	}
}

func TestParseDuration(t *testing.T) {
	cases := map[string]time.Duration{"36h": 36 * time.Hour, "7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, "90m": 90 * time.Minute}
	for s, want := range cases {
		got, err := parseDuration(s)
		if err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "7days", "-d"} {
		if _, err := parseDuration(s); err == nil {
			t.Errorf("parseDuration(%q): no error", s)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCollectGuards: a run dated in the future is refused (it would block
// every real run after it); a response that collapsed to a fraction of the
// market is a failed run that changes nothing, unless --accept-drop; a
// collection that cannot get the index lock says so after printing its runs.
func TestCollectGuards(t *testing.T) {
	c := newCLI(t)
	full := wrappedVast(t)
	srv := newSwitchable(t, bodyHandler(full))
	url := "vastai=" + srv.srv.URL
	if code := c.run("collect", "--source", "vastai", "--source-url", url, "--observed-at", "2027-01-01T00:00:00Z"); code != 2 || !strings.Contains(c.stderr, "in the future") {
		t.Errorf("future --observed-at: exit %d stderr %q; want 2 and 'in the future'", code, c.stderr)
	}
	c.mustRun("collect", "--source", "vastai", "--source-url", url, "--observed-at", "2026-11-29T03:00:00Z")
	before := c.median("--gpu", "4090")[0]

	// Three offers where there were 1,396.
	var offers []json.RawMessage
	if err := json.Unmarshal(fixture(t, "vastai/vast-search-offers-full-2024-11-05.json"), &offers); err != nil {
		t.Fatal(err)
	}
	few, _ := json.Marshal(map[string]any{"offers": offers[:3]})
	srv.set(bodyHandler(few))
	if code := c.run("collect", "--source", "vastai", "--source-url", url, "--observed-at", "2026-11-29T09:00:00Z"); code != 1 || !strings.Contains(c.stdout, "under a quarter") {
		t.Errorf("collapsed response: exit %d\n%s; want exit 1 and the reason", code, c.stdout)
	}
	after := c.median("--gpu", "4090")[0]
	if after.Listings != before.Listings || after.Disappearing != 0 || len(c.flags()) != 0 {
		t.Errorf("a collapsed response changed the market: before %+v after %+v", before, after)
	}
	c.mustRun("collect", "--source", "vastai", "--source-url", url, "--observed-at", "2026-11-29T10:00:00Z", "--accept-drop")
	if r := c.median("--gpu", "4090")[0]; r.Listings >= before.Listings {
		t.Errorf("--accept-drop: the 4090 row still has %d listings", r.Listings)
	}

	// A reader holds the lock: the run is not recorded, and collect says why.
	old := writeWait
	writeWait = 200 * time.Millisecond
	defer func() { writeWait = old }()
	ro, err := index.OpenReadOnly(c.db, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv.set(bodyHandler(full))
	code := c.run("collect", "--source", "vastai", "--source-url", url, "--observed-at", "2026-11-29T11:00:00Z")
	ro.Close()
	if code != 1 || !strings.Contains(c.stdout, "SOURCE") || !strings.Contains(c.stderr, "index locked by another process") ||
		!strings.Contains(c.stderr, "for the next collect") {
		t.Errorf("locked index: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1, the runs table and the lock message", code, c.stdout, c.stderr)
	}
	// The next collection writes the kept run first, then its own.
	c.mustRun("collect", "--source", "vastai", "--source-url", url, "--observed-at", "2026-11-29T12:00:00Z")
	if !strings.Contains(c.stdout, "kept while the index was locked") {
		t.Errorf("the kept run was not replayed:\n%s", c.stdout)
	}
	c.mustRun("runs", "--json", "--source", "vastai")
	var runs []struct {
		Started string `json:"started"`
		Status  string `json:"status"`
	}
	if err := json.Unmarshal([]byte(c.stdout), &runs); err != nil {
		t.Fatal(err)
	}
	last := runs[len(runs)-2:]
	if last[0].Started != "2026-11-29T11:00:00Z" || last[0].Status != "ok" || last[1].Started != "2026-11-29T12:00:00Z" {
		t.Errorf("the last runs are %+v; want the kept 11:00 run, ok, then 12:00", last)
	}
	if entries, _ := os.ReadDir(c.db + ".pending"); len(entries) != 0 {
		t.Errorf("pending runs left behind: %v", entries)
	}
}

func TestHelpOnce(t *testing.T) {
	c := newCLI(t)
	for _, cmd := range []string{"median", "gpus", "flags", "history", "runs", "check", "collect", "demo"} {
		if code := c.run(cmd, "-h"); code != 0 {
			t.Errorf("%s -h: exit %d", cmd, code)
		}
		if n := strings.Count(c.stdout, "usage: listings "+cmd); n != 1 {
			t.Errorf("%s -h prints its usage %d times:\n%s", cmd, n, c.stdout)
		}
	}
	if code := c.run("history", "--gpu", "4090", "--json", "--csv"); code != 2 {
		t.Errorf("history --json --csv: exit %d, want 2", code)
	}
	if code := c.run("runs", "--source", "nope"); code != 2 || !strings.Contains(c.stderr, "unknown source") {
		t.Errorf("runs --source nope: exit %d %q, want 2 naming the unknown source", code, c.stderr)
	}
}
