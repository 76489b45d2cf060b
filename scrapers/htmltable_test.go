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

// nimbusConfig is the worked example of fixtures/htmltable/README.md.
func nimbusConfig(url string) HTMLTableConfig {
	return HTMLTableConfig{
		URL:          url,
		TableHeader:  "On-demand price",
		GPUColumn:    "GPU",
		CountColumn:  "GPUs",
		PriceColumn:  "On-demand price",
		VRAMColumn:   "VRAM",
		IDColumn:     "Instance",
		RegionColumn: "Region",
		Unit:         "hourly",
		PerGPU:       false,
		Currency:     "USD",
	}
}

var nimbusWant = []wantHTMLListing{
	{"nb-1x-h100", listings.OnDemand, "H100 SXM", 1, "2.890000", true},
	{"nb-8x-h100", listings.OnDemand, "H100 SXM", 8, "2.790000", true}, // 22.32 / 8
	{"nb-1x-a100-80", listings.OnDemand, "A100 80GB SXM", 1, "1.690000", true},
	{"nb-4x-a100-80", listings.OnDemand, "A100 80GB SXM", 4, "1.590000", true}, // 6.36 / 4
	{"nb-1x-l40s", listings.OnDemand, "L40S", 1, "0.990000", true},
	{"nb-2x-rtx4090", listings.OnDemand, "RTX 4090", 2, "0.390000", true}, // 0.78 / 2
	{"nb-1x-a10", listings.OnDemand, "A10", 1, "0.750000", false},         // "Sold out" badge
}

func TestParseHTMLTableWorkedExample(t *testing.T) {
	doc := htmlDoc(t, htmlFixture(t, "htmltable/pricing.html"))
	ls, rejects, err := ParseHTMLTable(doc, nimbusConfig("https://nimbus.example/pricing"), 0)
	if err != nil {
		t.Fatalf("ParseHTMLTable: %v", err)
	}
	checkHTMLListings(t, ls, nimbusWant, "USD")
	wantRejects := []listings.Reject{
		{ID: "nb-1x-mi300x", Reason: listings.RejectZeroPrice},
		{ID: "nb-1x-b200", Reason: listings.RejectZeroPrice},
	}
	if len(rejects) != len(wantRejects) {
		t.Fatalf("rejects: got %+v, want %+v", rejects, wantRejects)
	}
	for i, w := range wantRejects {
		if rejects[i].ID != w.ID || rejects[i].Reason != w.Reason {
			t.Errorf("reject %d: got %+v, want %+v", i, rejects[i], w)
		}
	}
	h := ls[1]
	if h.Source != HTMLTableKind || h.VRAMGB != 80 || h.Region != "us-east" || h.Listed != `price="$22.32" gpus=8 unit=hourly per_gpu=false` {
		t.Errorf("8x H100: got source %q vram %v region %q listed %q", h.Source, h.VRAMGB, h.Region, h.Listed)
	}
}

func TestParseHTMLTableOptions(t *testing.T) {
	page := []byte(`<html><body>
<table id="t"><caption>Monthly GPU servers</caption>
<tr><th>Model</th><th>VRAM</th><th>Price per GPU</th><th>Where</th></tr>
<tr><td>2x RTX A6000</td><td>48</td><td>CA$730.00</td><td>Toronto</td></tr>
<tr><td>RTX 4090</td><td>24 GB</td><td>€1.460,00</td><td>Paris</td></tr>
<tr><td colspan="4">Coming soon</td></tr>
<tr><td></td><td></td><td></td><td></td></tr>
</table>
<div id="other"><table><tr><th>Model</th><th>Price per GPU</th></tr><tr><td>A40</td><td>$1</td></tr></table></div>
</body></html>`)
	c := HTMLTableConfig{
		URL: "http://example.org/", Table: "#t", GPUColumn: "model", PriceColumn: "price",
		VRAMColumn: "vram", RegionColumn: "where", Unit: "Monthly", PerGPU: true, Currency: "cad",
	}
	ls, rejects, err := ParseHTMLTable(htmlDoc(t, page), c, 0)
	if err != nil {
		t.Fatalf("ParseHTMLTable: %v", err)
	}
	if len(rejects) != 0 || len(ls) != 2 {
		t.Fatalf("got %d listings, rejects %+v; want 2 and none", len(ls), rejects)
	}
	tests := []struct {
		id, gpu, price, currency string
		count                    int
		vram                     float64
	}{
		{"2x-rtx-a6000-2x-toronto", "RTX A6000", "1.000000", "CAD", 2, 48}, // per GPU: 730 / 730, "$" is the configured dollar
		{"rtx-4090-1x-paris", "RTX 4090", "2.000000", "EUR", 1, 24},        // 1460 / 730 in the cell's euro
	}
	for i, tt := range tests {
		l := ls[i]
		if l.ID != tt.id || l.GPU != tt.gpu || l.Price.String() != tt.price || l.Currency != tt.currency ||
			l.GPUCount != tt.count || l.VRAMGB != tt.vram || l.Kind != listings.Monthly {
			t.Errorf("listing %d: got {%s %s %s %s x%d %vGB %s}, want {%s %s %s %s x%d %vGB monthly}",
				i, l.ID, l.GPU, l.Price, l.Currency, l.GPUCount, l.VRAMGB, l.Kind, tt.id, tt.gpu, tt.price, tt.currency, tt.count, tt.vram)
		}
	}
}

func TestParseHTMLTableBadRows(t *testing.T) {
	tests := []struct {
		name, row, reason string
	}{
		{"count column disagrees", `<tr><td>x</td><td>2x A40</td><td>4</td><td>$4</td></tr>`, listings.RejectBadRow},
		{"count not a number", `<tr><td>x</td><td>A40</td><td>many</td><td>$4</td></tr>`, listings.RejectBadRow},
		{"zero gpus", `<tr><td>x</td><td>A40</td><td>0</td><td>$4</td></tr>`, listings.RejectZeroGPUs},
		{"no gpu", `<tr><td>x</td><td></td><td>1</td><td>$4</td></tr>`, listings.RejectBadRow},
		{"no price", `<tr><td>x</td><td>A40</td><td>1</td><td>–</td></tr>`, listings.RejectZeroPrice},
		{"call us", `<tr><td>x</td><td>A40</td><td>1</td><td>Call us</td></tr>`, listings.RejectZeroPrice},
		{"negative", `<tr><td>x</td><td>A40</td><td>1</td><td>-$4</td></tr>`, listings.RejectNegative},
		{"above cap", `<tr><td>x</td><td>A40</td><td>1</td><td>$1,000.01</td></tr>`, listings.RejectAboveCap},
		{"no id", `<tr><td></td><td>A40</td><td>1</td><td>$4</td></tr>`, listings.RejectNoID},
		{"duplicate id", `<tr><td>Good</td><td>A40</td><td>1</td><td>$4</td></tr>`, listings.RejectDuplicateID},
	}
	c := HTMLTableConfig{URL: "https://example.org/p", GPUColumn: "GPU", CountColumn: "Count", PriceColumn: "Price", IDColumn: "ID", Unit: "hourly"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<table><tr><th>ID</th><th>GPU</th><th>Count</th><th>Price</th></tr>
<tr><td>Good</td><td>RTX 4090</td><td>2</td><td>$1.00</td></tr>` + tt.row + `</table>`
			ls, rejects, err := ParseHTMLTable(htmlDoc(t, []byte(page)), c, 0)
			if err != nil {
				t.Fatalf("ParseHTMLTable: %v", err)
			}
			if len(ls) != 1 || ls[0].ID != "good" || ls[0].Price.String() != "0.500000" {
				t.Errorf("got %+v, want only the good row at 0.500000", ls)
			}
			if len(rejects) != 1 || rejects[0].Reason != tt.reason {
				t.Errorf("rejects: got %+v, want one %q", rejects, tt.reason)
			}
		})
	}
}

func TestParseHTMLTableChangedMarkup(t *testing.T) {
	page := htmlFixture(t, "htmltable/pricing.html")
	tests := []struct {
		name   string
		page   []byte
		mutate func(*HTMLTableConfig)
		want   string
	}{
		{"no table with the header", page, func(c *HTMLTableConfig) { c.TableHeader = "Spot price" }, `no table with header "Spot price"`},
		{"selector matches nothing", page, func(c *HTMLTableConfig) { c.Table = "table.pricing" }, `no table "table.pricing"`},
		{"configured column gone", page, func(c *HTMLTableConfig) { c.CountColumn = "GPU count" }, `no column "GPU count"`},
		{"page without tables", htmlFixture(t, "servermania/gpu-servers.html"), func(*HTMLTableConfig) {}, "no table with header"},
		{"every row rejected", []byte(`<table><tr><th>Instance</th><th>GPU</th><th>GPUs</th><th>VRAM</th><th>Region</th><th>On-demand price</th></tr>
<tr><td>a</td><td>A40</td><td>1</td><td></td><td></td><td>Call us</td></tr></table>`), func(*HTMLTableConfig) {}, "1 rows rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := nimbusConfig("https://nimbus.example/pricing")
			tt.mutate(&c)
			ls, _, err := ParseHTMLTable(htmlDoc(t, tt.page), c, 0)
			if !errors.Is(err, ErrMarkupChanged) || len(ls) != 0 || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %d listings, err %v; want none and %q mentioning %q", len(ls), err, ErrMarkupChanged, tt.want)
			}
		})
	}
}

func TestNewHTMLTableValidates(t *testing.T) {
	ok := nimbusConfig("https://nimbus.example/pricing")
	tests := []struct {
		name    string
		srcName string
		mutate  func(*HTMLTableConfig)
		want    string // "" → valid
	}{
		{"valid", "nimbus", func(*HTMLTableConfig) {}, ""},
		{"valid, defaults", "my.cloud_2", func(c *HTMLTableConfig) { c.Currency = ""; c.Unit = " Monthly " }, ""},
		{"no url", "nimbus", func(c *HTMLTableConfig) { c.URL = "" }, "url is required"},
		{"not http", "nimbus", func(c *HTMLTableConfig) { c.URL = "file:///etc/passwd" }, "want an http or https URL"},
		{"no gpu column", "nimbus", func(c *HTMLTableConfig) { c.GPUColumn = " " }, "gpu_column is required"},
		{"no price column", "nimbus", func(c *HTMLTableConfig) { c.PriceColumn = "" }, "price_column is required"},
		{"no unit", "nimbus", func(c *HTMLTableConfig) { c.Unit = "" }, "unit is required"},
		{"bad unit", "nimbus", func(c *HTMLTableConfig) { c.Unit = "daily" }, `unit "daily"`},
		{"bad currency", "nimbus", func(c *HTMLTableConfig) { c.Currency = "dollars" }, "three-letter code"},
		{"bad selector", "nimbus", func(c *HTMLTableConfig) { c.Table = "table[" }, "table selector"},
		{"bad name", "my cloud", func(*HTMLTableConfig) {}, "the name must be"},
		{"built-in name", "cherryservers", func(*HTMLTableConfig) {}, "built-in source"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mutate(&c)
			src, err := NewHTMLTable(tt.srcName, c)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("NewHTMLTable: got %v, want no error", err)
			case tt.want == "":
				if src.Name() != tt.srcName || src.DefaultURL() != c.URL {
					t.Errorf("got name %q url %q, want %q %q", src.Name(), src.DefaultURL(), tt.srcName, c.URL)
				}
			case err == nil || !strings.Contains(err.Error(), tt.want):
				t.Errorf("NewHTMLTable: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, registered := Get("nimbus"); registered {
		t.Error("NewHTMLTable registered the source; the CLI builds it from the config instead")
	}
}

func TestHTMLTableCollect(t *testing.T) {
	srv := htmlFixtureServer(t, "/pricing", "htmltable/pricing.html", htmlAllowRobots)
	src, err := NewHTMLTable("nimbus", nimbusConfig("https://nimbus.example/pricing"))
	if err != nil {
		t.Fatal(err)
	}
	run, ls := Collect(context.Background(), src, htmlRunOptions(srv.URL+"/pricing"))
	if run.Status != listings.RunOK || run.Source != "nimbus" {
		t.Fatalf("run: got %s %s error %q, want nimbus ok", run.Source, run.Status, run.Error)
	}
	checkHTMLListings(t, ls, nimbusWant, "USD")
	for _, l := range ls {
		if l.Source != "nimbus" {
			t.Errorf("%s: got source %q, want nimbus", l.ID, l.Source)
		}
	}
	if run.Rejects[listings.RejectZeroPrice] != 2 {
		t.Errorf("rejects: got %v, want {zero price: 2}", run.Rejects)
	}

	blocked := htmlFixtureServer(t, "/pricing", "htmltable/pricing.html", "User-agent: *\nDisallow: /pricing\n")
	run, ls = Collect(context.Background(), src, htmlRunOptions(blocked.URL+"/pricing"))
	if run.Status != listings.RunFailed || len(ls) != 0 || !strings.Contains(run.Error, "robots.txt disallows") {
		t.Errorf("disallowed run: got %s, %d listings, error %q; want failed by robots.txt", run.Status, len(ls), run.Error)
	}
}

func FuzzParseHTMLTable(f *testing.F) {
	for _, p := range []string{"htmltable/pricing.html", "cherryservers/gpu-servers.html", "servermania/gpu-servers.html"} {
		f.Add(htmlFixture(f, p))
	}
	f.Add([]byte(`<table><tr><th>GPU</th><th>GPUs</th><th>On-demand price</th></tr><tr><td>8 x</td><td>99999999999999999999</td><td>$1'234.5</td></tr></table>`))
	c := nimbusConfig("https://nimbus.example/pricing")
	c.TableHeader, c.CountColumn, c.VRAMColumn, c.IDColumn, c.RegionColumn = "", "GPUs", "", "", ""
	f.Fuzz(func(t *testing.T, page []byte) {
		doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
		if err != nil {
			return
		}
		ls, _, err := ParseHTMLTable(doc, c, 0)
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

func BenchmarkParseHTMLTable(b *testing.B) {
	doc := htmlDoc(b, htmlFixture(b, "htmltable/pricing.html"))
	c := nimbusConfig("https://nimbus.example/pricing")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseHTMLTable(doc, c, 0); err != nil {
			b.Fatal(err)
		}
	}
}
