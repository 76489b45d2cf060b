package scrapers

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/listings-dev/listings"
)

// htmlFixture reads a file under fixtures/.
func htmlFixture(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", filepath.FromSlash(path)))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// htmlDoc parses page.
func htmlDoc(tb testing.TB, page []byte) *goquery.Document {
	tb.Helper()
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
	if err != nil {
		tb.Fatalf("parse html: %v", err)
	}
	return doc
}

// htmlAllowRobots is a robots.txt that allows everything.
const htmlAllowRobots = "User-agent: *\nAllow: /\n"

// htmlFixtureServer serves the fixture file at path and robots at
// /robots.txt on a loopback server closed with the test.
func htmlFixtureServer(tb testing.TB, path, fixture, robots string) *httptest.Server {
	tb.Helper()
	page := htmlFixture(tb, fixture)
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(robots))
	})
	mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return srv
}

// htmlRunOptions runs a source against url with a fast client of its own.
func htmlRunOptions(url string) RunOptions {
	return RunOptions{
		URL:     url,
		Timeout: 30 * time.Second,
		Client: ClientOptions{
			UserAgent:   UserAgent("test", "https://example.org/contact"),
			Hosts:       NewHosts(),
			HostDelay:   -1,
			BaseBackoff: time.Millisecond,
			MaxBackoff:  5 * time.Millisecond,
		},
	}
}

// wantHTMLListing is the part of a listing the HTML tests check.
type wantHTMLListing struct {
	id        string
	kind      listings.Kind
	gpu       string
	count     int
	price     string // per GPU-hour
	available bool
}

// checkListings compares got with want, in order, field by field.
func checkHTMLListings(t *testing.T, got []listings.Listing, want []wantHTMLListing, currency string) {
	t.Helper()
	if len(got) != len(want) {
		for _, l := range got {
			t.Logf("got %s %s %s x%d %s", l.ID, l.Kind, l.GPU, l.GPUCount, l.Price)
		}
		t.Fatalf("got %d listings, want %d", len(got), len(want))
	}
	for i, w := range want {
		l := got[i]
		if l.ID != w.id || l.Kind != w.kind || l.GPU != w.gpu || l.GPUCount != w.count ||
			l.Price.String() != w.price || l.Available != w.available || !l.Known || l.Currency != currency {
			t.Errorf("listing %d: got {%s %s %s x%d %s avail=%v known=%v %s}, want {%s %s %s x%d %s avail=%v known=true %s}",
				i, l.ID, l.Kind, l.GPU, l.GPUCount, l.Price, l.Available, l.Known, l.Currency,
				w.id, w.kind, w.gpu, w.count, w.price, w.available, currency)
		}
	}
}
