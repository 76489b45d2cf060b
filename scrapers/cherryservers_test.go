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

func TestParseCherryServersFixture(t *testing.T) {
	doc := htmlDoc(t, htmlFixture(t, "cherryservers/gpu-servers.html"))
	ls, rejects, err := ParseCherryServers(doc, 0)
	if err != nil {
		t.Fatalf("ParseCherryServers: %v", err)
	}
	// Prices computed by hand: monthly / 730 / GPUs and hourly / GPUs,
	// rounded to the micro-euro.
	want := []wantHTMLListing{
		{"rtx-a4000-server-eu-nord-1-lithuania", listings.Monthly, "RTX A4000", 1, "0.354795", true},  // 259.00/730
		{"rtx-a4000-server-eu-nord-1-lithuania", listings.OnDemand, "RTX A4000", 1, "0.360000", true}, // 0.36
		{"rtx-a5000-server-eu-nord-1-lithuania", listings.Monthly, "RTX A5000", 1, "0.478082", true},  // 349.00/730
		{"rtx-a5000-server-eu-nord-1-lithuania", listings.OnDemand, "RTX A5000", 1, "0.480000", true},
		{"dual-rtx-a6000-eu-nord-1-lithuania", listings.Monthly, "RTX A6000", 2, "0.845589", true},  // 1234.56/730/2
		{"dual-rtx-a6000-eu-nord-1-lithuania", listings.OnDemand, "RTX A6000", 2, "0.845000", true}, // 1.69/2
		{"a40-server-eu-nord-1-lithuania", listings.Monthly, "A40", 1, "0.957534", true},            // 699/730; no hourly
		{"a100-80gb-pcie-server-eu-nord-1-lithuania", listings.Monthly, "A100 80GB PCIe", 1, "1.916438", true},
		{"a100-80gb-pcie-server-eu-nord-1-lithuania", listings.OnDemand, "A100 80GB PCIe", 1, "1.920000", true},
		{"dual-a100-80gb-pcie-eu-nord-1-lithuania", listings.Monthly, "A100 80GB PCIe", 2, "1.882877", false}, // 2749/1460
		{"dual-a100-80gb-pcie-eu-nord-1-lithuania", listings.OnDemand, "A100 80GB PCIe", 2, "1.885000", false},
		{"dual-l40s-eu-nord-1-lithuania", listings.Monthly, "L40S", 2, "1.300685", true}, // 1899/1460
		{"dual-l40s-eu-nord-1-lithuania", listings.OnDemand, "L40S", 2, "1.300000", true},
		{"h100-pcie-server-eu-nord-1-lithuania", listings.Monthly, "H100 PCIe", 1, "3.012329", true}, // 2199/730, not the struck 2399
		{"h100-pcie-server-eu-nord-1-lithuania", listings.OnDemand, "H100 PCIe", 1, "3.010000", true},
	}
	checkHTMLListings(t, ls, want, "EUR")
	if len(rejects) != 1 || rejects[0].Reason != listings.RejectZeroPrice || rejects[0].ID != "8x-h100-sxm-hgx-eu-nord-1-lithuania" {
		t.Errorf("rejects: got %+v, want one %q for the 8x H100 'Call us' row", rejects, listings.RejectZeroPrice)
	}
	a6000 := ls[4]
	if a6000.VRAMGB != 48 || a6000.DiskGB != 3840 || a6000.Region != "EU-Nord-1 (Lithuania)" || a6000.RawGPU != "2x NVIDIA RTX A6000 48GB" {
		t.Errorf("dual A6000: got vram %v disk %v region %q raw %q, want 48, 3840, %q, %q",
			a6000.VRAMGB, a6000.DiskGB, a6000.Region, a6000.RawGPU, "EU-Nord-1 (Lithuania)", "2x NVIDIA RTX A6000 48GB")
	}
	if want := `price_month="€1,234.56" gpus=2`; a6000.Listed != want {
		t.Errorf("dual A6000 listed: got %q, want %q", a6000.Listed, want)
	}
	for _, l := range ls {
		if l.Source != "cherryservers" || l.Reliability != -1 {
			t.Errorf("%s: got source %q reliability %v, want cherryservers, -1", l.ID, l.Source, l.Reliability)
		}
	}
}

func TestParseCherryServersChangedMarkup(t *testing.T) {
	for _, page := range []string{"cherryservers/changed.html", "servermania/gpu-servers.html", "servermania/changed.html"} {
		t.Run(page, func(t *testing.T) {
			ls, _, err := ParseCherryServers(htmlDoc(t, htmlFixture(t, page)), 0)
			if !errors.Is(err, ErrMarkupChanged) || len(ls) != 0 {
				t.Fatalf("got %d listings, err %v; want none and %q", len(ls), err, ErrMarkupChanged)
			}
			if !strings.Contains(err.Error(), "0 listings: markup changed?") {
				t.Errorf("error %q does not say %q", err, "0 listings: markup changed?")
			}
		})
	}
}

// cherryPage wraps table rows in the fixture's header row.
func cherryPage(rows string) []byte {
	return []byte(`<html><body><table><thead><tr><th>Server</th><th>GPU</th><th>Storage</th>
<th>Price / month</th><th>Price / hour</th><th>Stock</th></tr></thead><tbody>` + rows + `</tbody></table></body></html>`)
}

func TestParseCherryServersBadRows(t *testing.T) {
	good := `<tr><td>Good</td><td>1x RTX A4000</td><td></td><td>€73.00</td><td></td><td>In stock</td></tr>`
	tests := []struct {
		name       string
		row        string
		wantReason string
		wantKept   int // listings kept besides the good row's
	}{
		{"call us", `<tr><td>X</td><td>1x RTX A5000</td><td></td><td>Call us</td><td>Call us</td><td>-</td></tr>`, listings.RejectZeroPrice, 0},
		{"no price at all", `<tr><td>X</td><td>1x RTX A5000</td><td></td><td></td><td>–</td><td>In stock</td></tr>`, listings.RejectZeroPrice, 0},
		{"zero gpus", `<tr><td>X</td><td>0x RTX A5000</td><td></td><td>€100.00</td><td></td><td></td></tr>`, listings.RejectZeroGPUs, 0},
		{"no gpu", `<tr><td>X</td><td>-</td><td></td><td>€100.00</td><td></td><td></td></tr>`, listings.RejectBadRow, 0},
		{"zero price", `<tr><td>X</td><td>1x A40</td><td></td><td>€0.00</td><td></td><td></td></tr>`, listings.RejectZeroPrice, 0},
		{"absurd price", `<tr><td>X</td><td>1x A40</td><td></td><td>€9,999,999.00</td><td></td><td></td></tr>`, listings.RejectAboveCap, 0},
		{"two amounts", `<tr><td>X</td><td>1x A40</td><td></td><td>€100.00 or €90.00</td><td></td><td></td></tr>`, listings.RejectBadPrice, 0},
		{"bad hourly, good monthly", `<tr><td>X</td><td>1x A40</td><td></td><td>€730.00</td><td>1.2.3</td><td></td></tr>`, listings.RejectBadPrice, 1},
		{"duplicate name", `<tr><td>Good</td><td>1x A40</td><td></td><td>€730.00</td><td></td><td></td></tr>`, listings.RejectDuplicateID, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ls, rejects, err := ParseCherryServers(htmlDoc(t, cherryPage(good+tt.row)), 0)
			if err != nil {
				t.Fatalf("ParseCherryServers: %v", err)
			}
			if len(ls) != 1+tt.wantKept || ls[0].ID != "good" || ls[0].Price.String() != "0.100000" {
				t.Errorf("got %d listings (first %+v), want the good row (0.100000) and %d more", len(ls), ls[0], tt.wantKept)
			}
			if len(rejects) != 1 || rejects[0].Reason != tt.wantReason {
				t.Errorf("rejects: got %+v, want one %q", rejects, tt.wantReason)
			}
		})
	}
}

func TestParseCherryServersLayouts(t *testing.T) {
	tests := []struct {
		name  string
		page  string
		want  []wantHTMLListing
		curr  string
		disk  float64
		avail bool
	}{
		{
			name: "no thead, th header row, caption row, european number, lone price column",
			page: `<table><tr><th>Configuration</th><th>GPUs</th><th>Disk</th><th>Price</th><th>Availability</th></tr>
<tr><td colspan="5">Amsterdam</td></tr>
<tr><td>Big box</td><td>Dual RTX A6000</td><td>2x 1.92TB NVMe + 4TB HDD</td><td>1.234,56 €</td><td>0 available</td></tr></table>`,
			want: []wantHTMLListing{{"big-box", listings.Monthly, "RTX A6000", 2, "0.845589", false}},
			curr: "EUR", disk: 7840,
		},
		{
			name: "two header rows with a spanning price header, dollars",
			page: `<table><thead><tr><th rowspan="2">Server</th><th rowspan="2">GPU</th><th colspan="2">Price</th></tr>
<tr><th>Monthly</th><th>Hourly</th></tr></thead>
<tbody><tr><td>S1</td><td>RTX A4000 x2</td><td>$1,460.00</td><td>$2.00</td></tr></tbody></table>`,
			want: []wantHTMLListing{
				{"s1", listings.Monthly, "RTX A4000", 2, "1.000000", true},
				{"s1", listings.OnDemand, "RTX A4000", 2, "1.000000", true},
			},
			curr: "USD", avail: true,
		},
		{
			name: "rowspan server name shared by two configurations, location column",
			page: `<table><thead><tr><th>Server</th><th>Location</th><th>GPU</th><th>€/mo</th></tr></thead>
<tbody><tr><td rowspan="2">GPU box</td><td>Vilnius</td><td>1x A40</td><td>€730</td></tr>
<tr><td>Frankfurt</td><td>1x A40</td><td>€1,460</td></tr></tbody></table>`,
			want: []wantHTMLListing{
				{"gpu-box-vilnius", listings.Monthly, "A40", 1, "1.000000", true},
				{"gpu-box-frankfurt", listings.Monthly, "A40", 1, "2.000000", true},
			},
			curr: "EUR", avail: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ls, rejects, err := ParseCherryServers(htmlDoc(t, []byte(tt.page)), 0)
			if err != nil {
				t.Fatalf("ParseCherryServers: %v (rejects %+v)", err, rejects)
			}
			checkHTMLListings(t, ls, tt.want, tt.curr)
			if len(rejects) != 0 {
				t.Errorf("rejects: got %+v, want none", rejects)
			}
			if tt.disk != 0 && ls[0].DiskGB != tt.disk {
				t.Errorf("disk: got %v, want %v", ls[0].DiskGB, tt.disk)
			}
		})
	}
}

func TestCherryServersCollect(t *testing.T) {
	srv := htmlFixtureServer(t, "/dedicated-gpu-servers", "cherryservers/gpu-servers.html", htmlAllowRobots)
	run, ls := Collect(context.Background(), CherryServers{}, htmlRunOptions(srv.URL+"/dedicated-gpu-servers"))
	if run.Status != listings.RunOK || run.Error != "" {
		t.Fatalf("run: got status %s error %q, want ok", run.Status, run.Error)
	}
	if len(ls) != 15 || run.Listings != 15 || run.Rejected() != 1 || run.Rejects[listings.RejectZeroPrice] != 1 {
		t.Errorf("got %d listings (run %d), rejects %v; want 15 and {zero price: 1}", len(ls), run.Listings, run.Rejects)
	}
	if run.Pages < 2 {
		t.Errorf("pages: got %d, want at least 2 (robots.txt and the page)", run.Pages)
	}
}

func TestCherryServersCollectRobotsDisallow(t *testing.T) {
	srv := htmlFixtureServer(t, "/dedicated-gpu-servers", "cherryservers/gpu-servers.html", "User-agent: *\nDisallow: /dedicated-gpu-servers\n")
	run, ls := Collect(context.Background(), CherryServers{}, htmlRunOptions(srv.URL+"/dedicated-gpu-servers"))
	if run.Status != listings.RunFailed || len(ls) != 0 {
		t.Fatalf("run: got status %s with %d listings, want failed with none", run.Status, len(ls))
	}
	if !strings.Contains(run.Error, "robots.txt disallows") || !strings.HasPrefix(run.Error, "cherryservers: ") {
		t.Errorf("error: got %q, want a cherryservers robots.txt error", run.Error)
	}
}

func TestCherryServersCollectChangedMarkup(t *testing.T) {
	srv := htmlFixtureServer(t, "/dedicated-gpu-servers", "cherryservers/changed.html", htmlAllowRobots)
	run, _ := Collect(context.Background(), CherryServers{}, htmlRunOptions(srv.URL+"/dedicated-gpu-servers"))
	if run.Status != listings.RunFailed || !strings.Contains(run.Error, "0 listings: markup changed?") {
		t.Errorf("run: got status %s error %q, want failed with %q", run.Status, run.Error, "0 listings: markup changed?")
	}
}

func FuzzParseCherryServers(f *testing.F) {
	for _, p := range []string{"cherryservers/gpu-servers.html", "cherryservers/changed.html", "htmltable/pricing.html"} {
		f.Add(htmlFixture(f, p))
	}
	f.Add(cherryPage(`<tr><td rowspan="9999" colspan="9999">x</td><td>2x A40</td><td>€1.234,5</td></tr>`))
	f.Fuzz(func(t *testing.T, page []byte) {
		doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
		if err != nil {
			return
		}
		ls, _, err := ParseCherryServers(doc, 0)
		if err == nil && len(ls) == 0 {
			t.Fatal("no error and no listings")
		}
		for _, l := range ls {
			if l.Price <= 0 || l.Price > DefaultPriceCap || l.GPUCount < 1 || l.ID == "" {
				t.Fatalf("bad listing kept: %+v", l)
			}
		}
	})
}

func BenchmarkParseCherryServers(b *testing.B) {
	doc := htmlDoc(b, htmlFixture(b, "cherryservers/gpu-servers.html"))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseCherryServers(doc, 0); err != nil {
			b.Fatal(err)
		}
	}
}
