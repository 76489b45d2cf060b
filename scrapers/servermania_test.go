package scrapers

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/listings-dev/listings"
)

func TestParseServerManiaFixture(t *testing.T) {
	ls, rejects, err := ParseServerMania(htmlDoc(t, htmlFixture(t, "servermania/gpu-servers.html")), 0)
	if err != nil {
		t.Fatalf("ParseServerMania: %v", err)
	}
	// monthly / 730 / GPUs, by hand.
	want := []wantHTMLListing{
		{"single-nvidia-rtx-4090-buffalo-ny", listings.Monthly, "RTX 4090", 1, "0.752055", true},   // 549/730
		{"dual-nvidia-rtx-4090-buffalo-ny", listings.Monthly, "RTX 4090", 2, "0.752740", true},     // 1099/1460
		{"quad-nvidia-rtx-3090-dallas-tx", listings.Monthly, "RTX 3090", 4, "0.513695", true},      // 1499.99/2920, not the struck 1899
		{"nvidia-rtx-a6000-los-angeles-ca", listings.Monthly, "RTX A6000", 1, "0.957534", true},    // 699/730
		{"dual-nvidia-l40s-montreal-qc", listings.Monthly, "L40S", 2, "1.506164", false},           // 2199/1460, sold out
		{"nvidia-a100-80gb-amsterdam-nl", listings.Monthly, "A100 80GB PCIe", 1, "2.464384", true}, // 1799/730
	}
	checkHTMLListings(t, ls, want, "USD")
	if len(rejects) != 1 || rejects[0].Reason != listings.RejectZeroPrice || rejects[0].ID != "custom-multi-gpu-cluster" {
		t.Errorf("rejects: got %+v, want one %q for the custom cluster card", rejects, listings.RejectZeroPrice)
	}
	dual := ls[1]
	if dual.VRAMGB != 24 || dual.DiskGB != 3840 || dual.Region != "Buffalo, NY" || dual.RawGPU != "2x RTX 4090 24GB" {
		t.Errorf("dual 4090: got vram %v disk %v region %q raw %q, want 24, 3840, %q, %q",
			dual.VRAMGB, dual.DiskGB, dual.Region, dual.RawGPU, "Buffalo, NY", "2x RTX 4090 24GB")
	}
	if want := `price="$1,099/mo" gpus=2`; dual.Listed != want {
		t.Errorf("dual 4090 listed: got %q, want %q", dual.Listed, want)
	}
}

func TestParseServerManiaChangedMarkup(t *testing.T) {
	for _, page := range []string{"servermania/changed.html", "cherryservers/gpu-servers.html", "htmltable/pricing.html"} {
		t.Run(page, func(t *testing.T) {
			ls, _, err := ParseServerMania(htmlDoc(t, htmlFixture(t, page)), 0)
			if !errors.Is(err, ErrMarkupChanged) || len(ls) != 0 {
				t.Fatalf("got %d listings, err %v; want none and %q", len(ls), err, ErrMarkupChanged)
			}
		})
	}
}

// smCard is a plan card in the fixture's shape.
func smCard(title, gpu, price string) string {
	return `<div class="c"><h3>` + title + `</h3><ul><li><b>GPU:</b> ` + gpu + `</li><li><b>Location:</b> Dallas</li></ul><div>` + price + `</div></div>`
}

func TestParseServerManiaCards(t *testing.T) {
	good := smCard("Good", "1x RTX 4090", "$730/mo")
	tests := []struct {
		name       string
		cards      string
		wantReason string // "" → no reject
		wantExtra  []wantHTMLListing
	}{
		{"contact sales", smCard("Big", "8x H100 SXM", "Contact sales"), listings.RejectZeroPrice, nil},
		{"zero gpus", smCard("Zero", "0x RTX 4090", "$100/mo"), listings.RejectZeroGPUs, nil},
		{"no gpu line, heading not a gpu", `<div><h3>Storage box</h3><p>$50/mo</p></div>`, listings.RejectBadRow, nil},
		{"two prices in one card", `<div><h3>Two</h3><p>GPU: 1x A40</p><p>$100/mo</p><p>$90/mo</p></div>`, listings.RejectBadRow, nil},
		{"price outside any card", `<p>RTX 4090 from $549/mo</p>`, listings.RejectBadRow, nil},
		{"duplicate plan", smCard("Good", "1x A40", "$730/mo"), listings.RejectDuplicateID, nil},
		{"gpu from the heading, dt/dd spec elsewhere", `<div><h3>Dual NVIDIA RTX 4090</h3><p>$1,460 per month</p></div>` +
			`<article><h2>Box</h2><dl><dt>GPU</dt><dd>Octa A40</dd></dl><span>€5,840.00 / month</span><button>Sold out</button></article>`, "",
			[]wantHTMLListing{
				{"dual-nvidia-rtx-4090", listings.Monthly, "RTX 4090", 2, "1.000000", true},
				{"box", listings.Monthly, "A40", 8, "1.000000", false},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<html><body><header><h1>Site</h1><p>GPU: 1x RTX 4090 $1/mo</p></header><main><section><h2>Plans</h2><div>` +
				good + tt.cards + `</div></section></main></body></html>`
			ls, rejects, err := ParseServerMania(htmlDoc(t, []byte(page)), 0)
			if err != nil {
				t.Fatalf("ParseServerMania: %v", err)
			}
			want := append([]wantHTMLListing{{"good-dallas", listings.Monthly, "RTX 4090", 1, "1.000000", true}}, tt.wantExtra...)
			curr := "USD"
			if len(tt.wantExtra) > 1 {
				// The last card is priced in euro: compare it apart.
				if ls[len(ls)-1].Currency != "EUR" {
					t.Errorf("euro card: got currency %q, want EUR", ls[len(ls)-1].Currency)
				}
				ls[len(ls)-1].Currency = curr
			}
			checkHTMLListings(t, ls, want, curr)
			switch {
			case tt.wantReason == "" && len(rejects) != 0:
				t.Errorf("rejects: got %+v, want none", rejects)
			case tt.wantReason != "" && (len(rejects) != 1 || rejects[0].Reason != tt.wantReason):
				t.Errorf("rejects: got %+v, want one %q", rejects, tt.wantReason)
			}
		})
	}
}

func TestServerManiaCollect(t *testing.T) {
	srv := htmlFixtureServer(t, "/gpu-servers.htm", "servermania/gpu-servers.html", htmlAllowRobots)
	run, ls := Collect(context.Background(), ServerMania{}, htmlRunOptions(srv.URL+"/gpu-servers.htm"))
	if run.Status != listings.RunOK || run.Error != "" {
		t.Fatalf("run: got status %s error %q, want ok", run.Status, run.Error)
	}
	if len(ls) != 6 || run.Rejects[listings.RejectZeroPrice] != 1 || run.Rejected() != 1 {
		t.Errorf("got %d listings, rejects %v; want 6 and {zero price: 1}", len(ls), run.Rejects)
	}
}

func TestServerManiaCollectFailures(t *testing.T) {
	tests := []struct {
		name, fixture, robots, want string
	}{
		{"robots.txt disallows", "servermania/gpu-servers.html", "User-agent: *\nDisallow: /\n", "robots.txt disallows"},
		{"markup changed", "servermania/changed.html", htmlAllowRobots, "0 listings: markup changed?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := htmlFixtureServer(t, "/gpu-servers.htm", tt.fixture, tt.robots)
			run, ls := Collect(context.Background(), ServerMania{}, htmlRunOptions(srv.URL+"/gpu-servers.htm"))
			if run.Status != listings.RunFailed || len(ls) != 0 || !strings.Contains(run.Error, tt.want) {
				t.Errorf("run: got status %s, %d listings, error %q; want failed, none, %q", run.Status, len(ls), run.Error, tt.want)
			}
		})
	}
}

func FuzzParseServerMania(f *testing.F) {
	for _, p := range []string{"servermania/gpu-servers.html", "servermania/changed.html", "cherryservers/gpu-servers.html"} {
		f.Add(htmlFixture(f, p))
	}
	f.Add([]byte(`<h3>x</h3><dl><dt>GPU</dt><dd>99x A40</dd></dl><p>$1,0,0/mo</p>`))
	f.Fuzz(func(t *testing.T, page []byte) {
		doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
		if err != nil {
			return
		}
		ls, _, err := ParseServerMania(doc, 0)
		if err == nil && len(ls) == 0 {
			t.Fatal("no error and no listings")
		}
		for _, l := range ls {
			if l.Price <= 0 || l.Price > DefaultPriceCap || l.GPUCount < 1 || l.ID == "" || l.Kind != listings.Monthly {
				t.Fatalf("bad listing kept: %+v", l)
			}
		}
	})
}

func BenchmarkParseServerMania(b *testing.B) {
	doc := htmlDoc(b, htmlFixture(b, "servermania/gpu-servers.html"))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseServerMania(doc, 0); err != nil {
			b.Fatal(err)
		}
	}
}
