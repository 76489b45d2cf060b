package scrapers

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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

func TestParseGPUSpec(t *testing.T) {
	tests := []struct {
		in      string
		model   string
		count   int
		vram    float64
		wantErr bool
		gpu     string // the catalog name Normalize gives the model; "" → not checked
	}{
		{"2x NVIDIA RTX A6000 48GB", "NVIDIA RTX A6000 48GB", 2, 48, false, "RTX A6000"},
		{"Dual RTX 4090", "RTX 4090", 2, 0, false, "RTX 4090"},
		{"8 x H100 SXM", "H100 SXM", 8, 0, false, "H100 SXM"},
		{"2× A40", "A40", 2, 0, false, "A40"},
		{"GPU: 1x RTX 4090 24GB", "RTX 4090 24GB", 1, 24, false, "RTX 4090"},
		{"RTX 4090", "RTX 4090", 1, 0, false, "RTX 4090"},
		{"NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090", 1, 0, false, "RTX 3090"},
		{"RTX A6000 x2", "RTX A6000", 2, 0, false, "RTX A6000"},
		{"A100 80GB PCIe (4x)", "A100 80GB PCIe", 4, 80, false, "A100 80GB PCIe"},
		{"4 NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe", 4, 80, false, "A100 80GB PCIe"},
		{"Quad-NVIDIA L40S", "NVIDIA L40S", 4, 0, false, "L40S"},
		{"Octa A40", "A40", 8, 0, false, "A40"},
		{"A100X", "A100X", 1, 0, false, "A100 80GB PCIe"},
		{"  1x   NVIDIA\u00a0A40 ", "NVIDIA A40", 1, 0, false, "A40"},
		{"0x RTX 4090", "RTX 4090", 0, 0, false, ""},
		{"80 GB A100", "80 GB A100", 1, 80, false, ""}, // "80 GB" is memory, not a count of 80
		{"99x A40", "", 0, 0, true, ""},
		{"2x", "", 0, 0, true, ""},
		{"", "", 0, 0, true, ""},
		{"–", "", 0, 0, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			model, count, vram, err := parseGPUSpec(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseGPUSpec(%q): got err %v, want error %v", tt.in, err, tt.wantErr)
			}
			if model != tt.model || count != tt.count || vram != tt.vram {
				t.Errorf("parseGPUSpec(%q): got %q x%d %vGB, want %q x%d %vGB", tt.in, model, count, vram, tt.model, tt.count, tt.vram)
			}
			if tt.gpu != "" {
				if got, known := gpuOf(model, vram); got != tt.gpu || !known {
					t.Errorf("gpuOf(%q): got %q known=%v, want %q", model, got, known, tt.gpu)
				}
			}
		})
	}
}

func TestParseMoney(t *testing.T) {
	tests := []struct {
		in, def  string
		price    string // "" → no price
		currency string
		offered  bool
		reason   string
	}{
		{"€1,234.56", "EUR", "1234.560000", "EUR", true, ""},
		{"$1,099/mo", "USD", "1099.000000", "USD", true, ""},
		{"1.234,56 €", "USD", "1234.560000", "EUR", true, ""},
		{"1\u00a0234,56 €", "EUR", "1234.560000", "EUR", true, ""},
		{"CHF 1'234.50", "USD", "1234.500000", "CHF", true, ""},
		{"€0,845", "EUR", "0.845000", "EUR", true, ""},
		{"12,50", "EUR", "12.500000", "EUR", true, ""},
		{"€1.234", "EUR", "1.234000", "EUR", true, ""}, // a single dot is a decimal point
		{"1.234.567,8", "EUR", "1234567.800000", "EUR", true, ""},
		{"$2.49", "CAD", "2.490000", "CAD", true, ""},
		{"£3", "USD", "3.000000", "GBP", true, ""},
		{"0.36", "EUR", "0.360000", "EUR", true, ""},
		{"€1.69 per hour (min. 24 h)", "EUR", "1.690000", "EUR", true, ""},
		{"<del>x</del> 2,199.00 EUR", "USD", "2199.000000", "EUR", true, ""},
		{"–", "EUR", "", "", false, ""},
		{"", "EUR", "", "", false, ""},
		{"N/A", "EUR", "", "", false, ""},
		{"Call us", "EUR", "", "", true, listings.RejectZeroPrice},
		{"€0.00", "EUR", "", "", true, listings.RejectZeroPrice},
		{"-€5.00", "EUR", "", "", true, listings.RejectNegative},
		{"€100 or €90", "EUR", "", "", true, listings.RejectBadPrice},
		{"from 100 to 200", "EUR", "", "", true, listings.RejectBadPrice},
		{"1,23,456", "EUR", "", "", true, listings.RejectBadPrice},
		{"1.2.3", "EUR", "", "", true, listings.RejectBadPrice},
		{"$9999999999999", "USD", "", "", true, listings.RejectBadPrice},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			pc := parseMoney(tt.in, tt.def)
			got := ""
			if pc.reason == "" && pc.offered {
				got = pc.price.String()
			}
			if got != tt.price || pc.offered != tt.offered || pc.reason != tt.reason || (tt.price != "" && pc.currency != tt.currency) {
				t.Errorf("parseMoney(%q, %s): got price %q %s offered=%v reason %q, want %q %s offered=%v reason %q",
					tt.in, tt.def, got, pc.currency, pc.offered, pc.reason, tt.price, tt.currency, tt.offered, tt.reason)
			}
		})
	}
}

func TestPerGPUHour(t *testing.T) {
	tests := []struct {
		listed  string
		gpus    int
		monthly bool
		want    string
		reason  string
	}{
		{"1234.56", 2, true, "0.845589", ""}, // 1234.56 / 730 / 2
		{"1.69", 2, false, "0.845000", ""},
		{"0.000001", 2, false, "0.000001", ""},               // half a micro-unit rounds away from zero
		{"0.000001", 3, false, "", listings.RejectZeroPrice}, // a third rounds to nothing
		{"730000.73", 1, true, "", listings.RejectAboveCap},
		{"730000", 1, true, "1000.000000", ""},
	}
	for _, tt := range tests {
		p, err := listings.ParsePrice(tt.listed)
		if err != nil {
			t.Fatal(err)
		}
		got, reason := perGPUHour(p, tt.gpus, tt.monthly, 0)
		gotS := ""
		if reason == "" {
			gotS = got.String()
		}
		if gotS != tt.want || reason != tt.reason {
			t.Errorf("perGPUHour(%s, %d, monthly=%v): got %q %q, want %q %q", tt.listed, tt.gpus, tt.monthly, gotS, reason, tt.want, tt.reason)
		}
	}
}

func TestTextHelpers(t *testing.T) {
	long := strings.Repeat("é", 300)
	tests := []struct {
		name, got, want string
	}{
		{"cleanText collapses and trims", cleanText(" a\u00a0\u202f b\n\tc\u200b\x00 "), "a b c"},
		{"cleanText caps at 200 runes", cleanText(long), strings.Repeat("é", 200)},
		{"cleanText repairs utf-8", cleanText("a\xffb"), "a\uFFFDb"},
		{"slug", slug("Dual RTX A6000", "EU-Nord-1 (Lithuania)"), "dual-rtx-a6000-eu-nord-1-lithuania"},
		{"slug keeps letters", slug("  Ünïcode — GPU  "), "ünïcode-gpu"},
		{"slug caps", slug(strings.Repeat("ab ", 100)), strings.TrimSuffix(strings.Repeat("ab-", 27), "-")},
		{"slug empty", slug("—"), ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	disks := []struct {
		in   string
		want float64
	}{
		{"2x 1.92TB NVMe + 4TB HDD", 7840},
		{"960GB SSD", 960},
		{"2 x 3.84 TB", 7680},
		{"none", 0},
	}
	for _, d := range disks {
		if got := parseDiskGB(d.in); got != d.want {
			t.Errorf("parseDiskGB(%q): got %v, want %v", d.in, got, d.want)
		}
	}
	stock := []struct {
		in   string
		want bool
	}{
		{"Out of stock", true}, {"SOLD OUT", true}, {"0", true}, {"0 available", true},
		{"In stock", false}, {"Only 2 left", false}, {"10 available", false}, {"", false},
	}
	for _, s := range stock {
		if got := soldOut(s.in); got != s.want {
			t.Errorf("soldOut(%q): got %v, want %v", s.in, got, s.want)
		}
	}
}
