package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/listings-dev/listings"
	"github.com/listings-dev/listings/index"
	"github.com/listings-dev/listings/stats"
)

// The export fixture: two sources over four nights.
//
// vastai (USD), nightly at 03:00, a failed run at 15:00 after night 1:
//
//	A  RTX 4090 on-demand 0.40, all nights, region =HYPERLINK(...)
//	B  RTX 4090 on-demand 0.45, all nights, region with a comma, quotes and a newline, reliability unknown
//	C  RTX 4090 on-demand 0.50, all nights, 0.55 from night 2 (one presence, two segments)
//	D  RTX 4090 on-demand 0.10, night 1 only: a disappearing floor listing
//	F  RTX 4090 on-demand 0.12, nights 0-1 then gone at night 2 (lived 24 h: a floor listing, not disappearing)
//	E  RTX 3090 interruptible 0.15, all nights
//	G  RTX 4090 on-demand, sold out (never exported)
//
// cherry (EUR), nightly at 03:05: H RTX 4090 monthly 0.30 EUR; the runs of
// nights 0-1 carry the rate EUR = 1.08, nights 2-3 none.
var exportT0 = time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)

func night(n int) time.Time { return exportT0.Add(time.Duration(n) * 24 * time.Hour) }

func mustPrice(t testing.TB, s string) listings.Price {
	t.Helper()
	p, err := listings.ParsePrice(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func exportOffer(t testing.TB, src, id, gpu string, kind listings.Kind, price, currency string) listings.Listing {
	return listings.Listing{Source: src, ID: id, GPU: gpu, Known: true, RawGPU: gpu, GPUCount: 2, VRAMGB: 24,
		Kind: kind, Price: mustPrice(t, price), Currency: currency, Region: "EU-West", Reliability: 0.97,
		DiskGB: 100, Available: true}
}

const hyperlink = `=HYPERLINK("http://evil.example/x","click")`
const awkwardRegion = "Quebec, CA \"east\"\nrack 2"

// vastNight is the vastai offer list of night n.
func vastNight(t testing.TB, n int) []listings.Listing {
	a := exportOffer(t, "vastai", "A", "RTX 4090", listings.OnDemand, "0.40", "USD")
	a.Region = hyperlink
	b := exportOffer(t, "vastai", "B", "RTX 4090", listings.OnDemand, "0.45", "USD")
	b.Region, b.Reliability = awkwardRegion, -1
	c := exportOffer(t, "vastai", "C", "RTX 4090", listings.OnDemand, "0.50", "USD")
	if n >= 2 {
		c.Price = mustPrice(t, "0.55")
	}
	e := exportOffer(t, "vastai", "E", "RTX 3090", listings.Interruptible, "0.15", "USD")
	g := exportOffer(t, "vastai", "G", "RTX 4090", listings.OnDemand, "0.35", "USD")
	g.Available = false
	ls := []listings.Listing{a, b, c, e, g}
	if n == 1 {
		ls = append(ls, exportOffer(t, "vastai", "D", "RTX 4090", listings.OnDemand, "0.10", "USD"))
	}
	if n <= 1 {
		ls = append(ls, exportOffer(t, "vastai", "F", "RTX 4090", listings.OnDemand, "0.12", "USD"))
	}
	return ls
}

// buildExportIndex writes the fixture into a fresh index at path and
// returns the number of (listing, ok run) pairs an export must have.
func buildExportIndex(t testing.TB, path string) int {
	t.Helper()
	db, err := index.Open(path, index.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := 0
	write := func(run listings.Run, ls []listings.Listing) {
		t.Helper()
		if run.Status == listings.RunOK {
			// A run counts every listing; the export has the available
			// ones (a sold-out type is not in the market).
			run.Listings = len(ls)
			for _, l := range ls {
				if l.Available {
					want++
				}
			}
		}
		if _, err := db.WriteRun(run, ls, stats.Derive(stats.Params{}, run.Source)); err != nil {
			t.Fatalf("write run %s %s: %v", run.Source, run.Started, err)
		}
	}
	for n := 0; n < 4; n++ {
		write(listings.Run{Source: "vastai", Started: night(n), Finished: night(n).Add(time.Minute), Status: listings.RunOK}, vastNight(t, n))
		h := exportOffer(t, "cherry", "H", "RTX 4090", listings.Monthly, "0.30", "EUR")
		run := listings.Run{Source: "cherry", Started: night(n).Add(5 * time.Minute), Finished: night(n).Add(6 * time.Minute), Status: listings.RunOK}
		if n <= 1 {
			run.FX = map[string]listings.Price{"EUR": mustPrice(t, "1.08")}
		}
		write(run, []listings.Listing{h})
		if n == 1 {
			write(listings.Run{Source: "vastai", Started: night(1).Add(12 * time.Hour), Finished: night(1).Add(12 * time.Hour), Status: listings.RunFailed, Error: "http 500"}, nil)
		}
	}
	return want
}

// readCSV parses a CSV export into its header and records as maps.
func readCSV(t *testing.T, s string) ([]string, []map[string]string) {
	t.Helper()
	if strings.HasPrefix(s, "\ufeff") {
		t.Fatalf("csv starts with a BOM")
	}
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil {
		t.Fatalf("csv: %v\n%s", err, s)
	}
	if len(recs) == 0 {
		t.Fatalf("csv: no header")
	}
	var rows []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		rows = append(rows, m)
	}
	return recs[0], rows
}

func exportCLI(t *testing.T) (*cli, int) {
	t.Helper()
	c := newCLI(t)
	want := buildExportIndex(t, c.db)
	return c, want
}

func TestExportListingCSV(t *testing.T) {
	c, want := exportCLI(t)
	header, rows := readCSV(t, c.mustRun("export"))
	if got := strings.Join(header, ","); got != strings.Join(listingColumns, ",") {
		t.Fatalf("header = %s, want %s", got, strings.Join(listingColumns, ","))
	}
	if len(rows) != want {
		t.Fatalf("rows = %d, want %d (one per listing per ok run)", len(rows), want)
	}
	seen := map[string]int{}
	for _, r := range rows {
		seen[r["source"]+"/"+r["listing_id"]+"/"+r["observed_at"]]++
		if r["listing_id"] == "G" {
			t.Errorf("sold-out listing G exported: %v", r)
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s: %d rows, want 1", k, n)
		}
	}
	find := func(id string, n int) map[string]string {
		t.Helper()
		obs := night(n).Format(time.RFC3339)
		if id == "H" {
			obs = night(n).Add(5 * time.Minute).Format(time.RFC3339)
		}
		for _, r := range rows {
			if r["listing_id"] == id && r["observed_at"] == obs {
				return r
			}
		}
		t.Fatalf("no row for %s at night %d", id, n)
		return nil
	}
	t0s := night(0).Format(time.RFC3339)
	lastVast := night(3).Format(time.RFC3339)
	tests := []struct {
		id    string
		night int
		col   string
		want  string
	}{
		{"A", 0, "region", "'" + hyperlink},
		{"A", 0, "gpu", "RTX 4090"},
		{"A", 0, "gpu_count", "2"},
		{"A", 0, "vram_gb", "24"},
		{"A", 0, "kind", "on-demand"},
		{"A", 0, "price_usd_per_gpu_hour", "0.40"},
		{"A", 0, "price_original", "0.40"},
		{"A", 0, "currency", "USD"},
		{"A", 0, "reliability", "0.97"},
		{"A", 0, "first_seen", t0s},
		{"A", 0, "last_seen", lastVast},
		{"A", 0, "disappearing_floor", "false"},
		{"B", 2, "region", awkwardRegion},
		{"B", 2, "reliability", ""},
		{"C", 1, "price_usd_per_gpu_hour", "0.50"},
		{"C", 2, "price_usd_per_gpu_hour", "0.55"},
		{"C", 3, "first_seen", t0s},
		{"C", 0, "last_seen", lastVast},
		{"D", 1, "disappearing_floor", "true"},
		{"D", 1, "first_seen", night(1).Format(time.RFC3339)},
		{"D", 1, "last_seen", night(1).Format(time.RFC3339)},
		{"D", 1, "price_usd_per_gpu_hour", "0.10"},
		{"F", 0, "disappearing_floor", "false"},
		{"F", 0, "last_seen", night(1).Format(time.RFC3339)},
		{"E", 3, "kind", "interruptible"},
		{"H", 0, "price_usd_per_gpu_hour", "0.324"},
		{"H", 0, "price_original", "0.30"},
		{"H", 0, "currency", "EUR"},
		{"H", 2, "price_usd_per_gpu_hour", ""},
		{"H", 2, "price_original", "0.30"},
		{"H", 3, "kind", "monthly"},
	}
	for _, tc := range tests {
		if got := find(tc.id, tc.night)[tc.col]; got != tc.want {
			t.Errorf("%s night %d %s = %q, want %q", tc.id, tc.night, tc.col, got, tc.want)
		}
	}
	// Every disappearing floor listing the flags command reports is marked,
	// and nothing else is.
	c.mustRun("flags", "--json", "--since", "30d")
	var flags []struct {
		Source, ID string
		Status     string
	}
	if err := json.Unmarshal([]byte(c.stdout), &flags); err != nil {
		t.Fatalf("flags --json: %v\n%s", err, c.stdout)
	}
	flagged := map[string]bool{}
	for _, f := range flags {
		if f.Status == "disappeared" {
			flagged[f.Source+"/"+f.ID] = true
		}
	}
	if !flagged["vastai/D"] {
		t.Errorf("flags does not report D: %+v", flags)
	}
	for _, r := range rows {
		if got, want := r["disappearing_floor"] == "true", flagged[r["source"]+"/"+r["listing_id"]]; got != want {
			t.Errorf("%s/%s at %s: disappearing_floor %v, want %v", r["source"], r["listing_id"], r["observed_at"], got, want)
		}
	}
}

func TestExportListingWindowAndFilters(t *testing.T) {
	c, _ := exportCLI(t)
	tests := []struct {
		name string
		args []string
		want int // rows
		chk  func(t *testing.T, rows []map[string]string)
	}{
		{"gpu 3090", []string{"--gpu", "3090"}, 4, nil},
		{"kind monthly", []string{"--kind", "monthly"}, 4, nil},
		{"gpu 4090 on-demand", []string{"--gpu", "4090", "--kind", "on-demand"}, 3*4 + 1 + 2, nil},
		{"one date", []string{"--from", night(2).Format(time.DateOnly), "--to", night(2).Format(time.DateOnly)}, 5, nil},
		{"one night", []string{"--from", night(2).Format(time.RFC3339), "--to", night(2).Add(time.Hour).Format(time.RFC3339)}, 5, nil},
		{
			// As of the end of night 1, D has not yet vanished and A was
			// last seen at night 1.
			"to night 1", []string{"--to", night(1).Add(6 * time.Minute).Format(time.RFC3339)}, 6 + 7, func(t *testing.T, rows []map[string]string) {
				for _, r := range rows {
					if r["disappearing_floor"] != "false" {
						t.Errorf("%s at %s: disappearing_floor %s before it vanished", r["listing_id"], r["observed_at"], r["disappearing_floor"])
					}
					want := night(1).Format(time.RFC3339)
					if r["source"] == "cherry" {
						want = night(1).Add(5 * time.Minute).Format(time.RFC3339)
					}
					if r["last_seen"] != want {
						t.Errorf("%s at %s: last_seen %s, want %s", r["listing_id"], r["observed_at"], r["last_seen"], want)
					}
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, rows := readCSV(t, c.mustRun(append([]string{"export"}, tc.args...)...))
			if len(rows) != tc.want {
				t.Fatalf("rows = %d, want %d", len(rows), tc.want)
			}
			if tc.chk != nil {
				tc.chk(t, rows)
			}
		})
	}
}

func TestExportEmptyIndex(t *testing.T) {
	c := newCLI(t)
	for _, gran := range []string{"listing", "daily"} {
		header, rows := readCSV(t, c.mustRun("export", "--granularity", gran))
		if len(rows) != 0 || len(header) == 0 {
			t.Errorf("%s on a missing index: header %v, %d rows; want a header and no rows", gran, header, len(rows))
		}
	}
	if _, err := os.Stat(c.db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("export created the index file: %v", err)
	}
}

type medianJSON struct {
	GPU          string          `json:"gpu"`
	Kind         string          `json:"kind"`
	Currency     string          `json:"currency"`
	Listings     int             `json:"listings"`
	Median       *listings.Price `json:"median"`
	P10          *listings.Price `json:"p10"`
	P25          *listings.Price `json:"p25"`
	P75          *listings.Price `json:"p75"`
	P90          *listings.Price `json:"p90"`
	Floor        *listings.Price `json:"floor"`
	DurableFloor *listings.Price `json:"durable_floor"`
	Disappearing int             `json:"disappearing"`
}

func decimal(p *listings.Price) string {
	if p == nil {
		return ""
	}
	return p.Decimal()
}

// checkDailyAgainstMedian compares each daily row to `median --as-of`.
func checkDailyAgainstMedian(t *testing.T, c *cli, rows []map[string]string) {
	t.Helper()
	for _, r := range rows {
		c.mustRun("median", "--json", "--gpu", r["gpu"], "--kind", r["kind"], "--as-of", r["as_of"])
		var med []medianJSON
		if err := json.Unmarshal([]byte(c.stdout), &med); err != nil {
			t.Fatalf("median --json: %v\n%s", err, c.stdout)
		}
		var m *medianJSON
		for i := range med {
			if med[i].GPU == r["gpu"] && med[i].Currency == r["currency"] {
				m = &med[i]
			}
		}
		if m == nil {
			t.Fatalf("median --as-of %s has no %s %s %s row: %s", r["as_of"], r["gpu"], r["kind"], r["currency"], c.stdout)
		}
		got := []string{r["listings"], r["median"], r["p10"], r["p25"], r["p75"], r["p90"], r["floor"], r["durable_floor"], r["disappearing"]}
		want := []string{strconv.Itoa(m.Listings), decimal(m.Median), decimal(m.P10), decimal(m.P25), decimal(m.P75), decimal(m.P90),
			decimal(m.Floor), decimal(m.DurableFloor), strconv.Itoa(m.Disappearing)}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s %s %s %s: daily %v, median --as-of %v", r["date"], r["gpu"], r["kind"], r["currency"], got, want)
		}
	}
}

func TestExportDailyCSV(t *testing.T) {
	c, _ := exportCLI(t)
	header, rows := readCSV(t, c.mustRun("export", "--granularity", "daily"))
	if got := strings.Join(header, ","); got != strings.Join(dailyColumns, ",") {
		t.Fatalf("header = %s, want %s", got, strings.Join(dailyColumns, ","))
	}
	// Per night: RTX 4090 on-demand, RTX 3090 interruptible, RTX 4090
	// monthly in USD on nights 0-1; on nights 2-3 the monthly row is in EUR
	// without a rate, left out with a note.
	if len(rows) != 10 {
		t.Fatalf("rows = %d, want 10:\n%s", len(rows), c.stdout)
	}
	if want := "export: 2 daily rows in EUR left out: configure fx to include them\n"; c.stderr != want {
		t.Errorf("stderr = %q, want %q", c.stderr, want)
	}
	byKey := map[string]map[string]string{}
	for _, r := range rows {
		k := r["date"] + "/" + r["gpu"] + "/" + r["kind"]
		if byKey[k] != nil {
			t.Errorf("two daily rows for %s: %v and %v", k, byKey[k], r)
		}
		if r["currency"] != "USD" {
			t.Errorf("%s: currency %q, want USD", k, r["currency"])
		}
		byKey[k] = r
	}
	day := func(n int) string { return night(n).Format(time.DateOnly) }
	tests := []struct {
		key, col, want string
	}{
		{day(0) + "/RTX 4090/on-demand", "as_of", night(0).Add(5 * time.Minute).Format(time.RFC3339)},
		{day(0) + "/RTX 4090/on-demand", "listings", "4"},
		{day(0) + "/RTX 4090/on-demand", "floor", "0.12"},
		{day(0) + "/RTX 4090/on-demand", "durable_floor", ""},
		{day(1) + "/RTX 4090/on-demand", "listings", "5"},
		{day(1) + "/RTX 4090/on-demand", "floor", "0.10"},
		{day(1) + "/RTX 4090/on-demand", "durable_floor", "0.12"},
		{day(2) + "/RTX 4090/on-demand", "median", "0.45"},
		{day(2) + "/RTX 4090/on-demand", "disappearing", "1"},
		{day(0) + "/RTX 4090/monthly", "median", "0.324"},
		{day(1) + "/RTX 4090/monthly", "currency", "USD"},
		{day(3) + "/RTX 3090/interruptible", "p90", "0.15"},
	}
	for _, k := range []string{day(2) + "/RTX 4090/monthly", day(3) + "/RTX 4090/monthly"} {
		if r, ok := byKey[k]; ok {
			t.Errorf("daily row %s without an fx rate exported: %v", k, r)
		}
	}
	for _, tc := range tests {
		r, ok := byKey[tc.key]
		if !ok {
			t.Errorf("no daily row %s", tc.key)
			continue
		}
		if got := r[tc.col]; got != tc.want {
			t.Errorf("%s %s = %q, want %q", tc.key, tc.col, got, tc.want)
		}
	}
	checkDailyAgainstMedian(t, c, rows)
}

func TestExportParquet(t *testing.T) {
	c, want := exportCLI(t)
	_, csvRows := readCSV(t, c.mustRun("export"))
	out := filepath.Join(t.TempDir(), "listing")
	c.mustRun("export", "--format", "parquet", "--out", out)
	if c.stderr != "" {
		t.Errorf("parquet export of whole-second times: stderr %q, want nothing", c.stderr)
	}
	parts, err := filepath.Glob(filepath.Join(out, "dt=*", "part-0.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var gotDays []string
	var recs []listingRecord
	for _, p := range parts {
		day := strings.TrimPrefix(filepath.Base(filepath.Dir(p)), "dt=")
		gotDays = append(gotDays, day)
		rs, err := parquet.ReadFile[listingRecord](p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		for _, r := range rs {
			if d := r.ObservedAt.UTC().Format(time.DateOnly); d != day {
				t.Errorf("%s: a row observed at %s", p, r.ObservedAt)
			}
		}
		recs = append(recs, rs...)
	}
	wantDays := []string{night(0).Format(time.DateOnly), night(1).Format(time.DateOnly), night(2).Format(time.DateOnly), night(3).Format(time.DateOnly)}
	if strings.Join(gotDays, " ") != strings.Join(wantDays, " ") {
		t.Errorf("partitions = %v, want %v", gotDays, wantDays)
	}
	if len(recs) != want || len(recs) != len(csvRows) {
		t.Fatalf("parquet rows = %d, csv rows = %d, want %d", len(recs), len(csvRows), want)
	}
	// Row for row, the Parquet says what the CSV says.
	for i, r := range recs {
		cr := csvRows[i]
		opt := func(p *float64) string {
			if p == nil {
				return ""
			}
			return strconv.FormatFloat(*p, 'f', -1, 64)
		}
		num := func(s string) string {
			if s == "" {
				return ""
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("csv number %q: %v", s, err)
			}
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		region := ""
		if r.Region != nil {
			region = csvText(*r.Region)
		}
		last := ""
		if r.LastSeen != nil {
			last = r.LastSeen.UTC().Format(time.RFC3339)
		}
		got := []string{r.ObservedAt.UTC().Format(time.RFC3339), r.Source, r.ListingID, r.GPU, strconv.Itoa(int(r.GPUCount)), opt(r.VRAMGB),
			r.Kind, opt(r.PriceUSD), strconv.FormatFloat(r.PriceOriginal, 'f', -1, 64), r.Currency, region, opt(r.Reliability),
			r.FirstSeen.UTC().Format(time.RFC3339), last, strconv.FormatBool(r.DisappearingFloor)}
		wantRow := []string{cr["observed_at"], cr["source"], cr["listing_id"], cr["gpu"], cr["gpu_count"], num(cr["vram_gb"]),
			cr["kind"], num(cr["price_usd_per_gpu_hour"]), num(cr["price_original"]), cr["currency"], cr["region"], num(cr["reliability"]),
			cr["first_seen"], cr["last_seen"], cr["disappearing_floor"]}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", wantRow) {
			t.Errorf("row %d:\nparquet %q\ncsv     %q", i, got, wantRow)
		}
	}

	// Daily: one file, the same rows as the daily CSV.
	_, dailyCSV := readCSV(t, c.mustRun("export", "--granularity", "daily"))
	file := filepath.Join(t.TempDir(), "sub", "daily.parquet")
	c.mustRun("export", "--format", "parquet", "--granularity", "daily", "--out", file)
	daily, err := parquet.ReadFile[dailyRecord](file)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	if len(daily) != len(dailyCSV) {
		t.Fatalf("daily parquet rows = %d, csv rows = %d", len(daily), len(dailyCSV))
	}
	for i, d := range daily {
		cr := dailyCSV[i]
		med, _ := strconv.ParseFloat(cr["median"], 64)
		if time.Unix(int64(d.Date)*86400, 0).UTC().Format(time.DateOnly) != cr["date"] || d.GPU != cr["gpu"] || d.Kind != cr["kind"] || d.Median != med ||
			strconv.Itoa(int(d.Listings)) != cr["listings"] || d.Currency != cr["currency"] || (d.DurableFloor == nil) != (cr["durable_floor"] == "") {
			t.Errorf("daily row %d: parquet %+v, csv %v", i, d, cr)
		}
	}
}

func TestExportToFileIsWhole(t *testing.T) {
	c, want := exportCLI(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "nested", "listings.csv")
	c.mustRun("export", "--out", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, rows := readCSV(t, string(b)); len(rows) != want {
		t.Errorf("file rows = %d, want %d", len(rows), want)
	}
	ents, _ := os.ReadDir(filepath.Dir(out))
	if len(ents) != 1 {
		t.Errorf("%s holds %d entries, want the export alone (no temporary file left)", filepath.Dir(out), len(ents))
	}
}

func TestExportToNamedPipeWritesInPlace(t *testing.T) {
	c, want := exportCLI(t)
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // blocks until the export opens the pipe
		got <- b
	}()
	c.mustRun("export", "--out", fifo)
	if _, rows := readCSV(t, string(<-got)); len(rows) != want {
		t.Errorf("rows read from the pipe = %d, want %d", len(rows), want)
	}
	fi, err := os.Stat(fifo)
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("after the export %s is %v (%v), want the named pipe still there", fifo, fi.Mode(), err)
	}
}

func TestExportUsageErrors(t *testing.T) {
	c, _ := exportCLI(t)
	full := filepath.Join(t.TempDir(), "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "old.parquet"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"--format", "xml"}, 2, "--format"},
		{[]string{"--granularity", "hourly"}, 2, "--granularity"},
		{[]string{"--format", "parquet"}, 2, "parquet needs --out"},
		{[]string{"--gpu", "nosuchgpu"}, 2, "matches no known GPU"},
		{[]string{"--kind", "weekly"}, 2, "--kind"},
		{[]string{"--from", "yesterday"}, 2, "--from"},
		{[]string{"--from", "2026-11-28", "--to", "2026-11-27"}, 2, "before --from"},
		{[]string{"--format", "parquet", "--out", full}, 1, "not empty"},
	}
	for _, tc := range tests {
		code := c.run(append([]string{"export"}, tc.args...)...)
		if code != tc.code || !strings.Contains(c.stderr, tc.inStderr) || !strings.HasPrefix(c.stderr, "listings: error: ") {
			t.Errorf("export %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, c.stderr, tc.code, tc.inStderr)
		}
	}
}

// epipeWriter accepts limit bytes, then fails as a closed pipe does.
type epipeWriter struct {
	n, limit int
}

func (w *epipeWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
	}
	w.n += len(p)
	return len(p), nil
}

func TestExportClosedPipeInProcess(t *testing.T) {
	c := newCLI(t)
	db, err := index.Open(c.db, index.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Enough rows to overflow the CSV writer's buffer several times.
	for n := 0; n < 20; n++ {
		var ls []listings.Listing
		for i := 0; i < 50; i++ {
			ls = append(ls, exportOffer(t, "vastai", fmt.Sprint("offer-", i), "RTX 4090", listings.OnDemand, "0.40", "USD"))
		}
		run := listings.Run{Source: "vastai", Started: night(n), Finished: night(n), Status: listings.RunOK, Listings: len(ls)}
		if _, err := db.WriteRun(run, ls, nil); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	tests := []struct {
		name   string
		out    *epipeWriter
		format string
	}{
		{"listing", &epipeWriter{limit: 300}, "listing"},
		{"daily", &epipeWriter{limit: 100}, "daily"},
	}
	for _, tc := range tests {
		var errb bytes.Buffer
		code := runEnv(context.Background(), []string{"--db", c.db, "export", "--granularity", tc.format}, tc.out, &errb,
			func(k string) string { return c.env[k] }, func() time.Time { return c.now })
		if code != 0 || errb.Len() != 0 {
			t.Errorf("%s into a closed pipe: exit %d, stderr %q; want exit 0 and nothing", tc.name, code, errb.String())
		}
	}
}

func TestExportPipedIntoHead(t *testing.T) {
	c, _ := exportCLI(t)
	bin := filepath.Join(t.TempDir(), "listings")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// Many rows, so the export is still writing when head goes away.
	addBulkRuns(t, c.db, 4, 36)
	for _, out := range []string{"-", "/dev/stdout"} {
		t.Run(out, func(t *testing.T) {
			// The shell reports the status of a pipe's last command, so the
			// export's own status and stderr go to files.
			dir := t.TempDir()
			errFile, codeFile := filepath.Join(dir, "stderr"), filepath.Join(dir, "code")
			cmd := exec.Command("sh", "-c", `{ "$0" --db "$1" export --out "$4" 2>"$2"; echo $? >"$3"; } | head -n 3`, bin, c.db, errFile, codeFile, out)
			cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "LISTINGS_CONFIG=", "LISTINGS_DB=")
			got, err := cmd.Output()
			if err != nil {
				t.Fatalf("pipeline: %v", err)
			}
			if lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "observed_at,") {
				t.Errorf("head -n 3 printed %q", got)
			}
			stderr, _ := os.ReadFile(errFile)
			code, _ := os.ReadFile(codeFile)
			if strings.TrimSpace(string(code)) != "0" || len(stderr) != 0 {
				t.Errorf("export --out %s into head: exit %q, stderr %q; want exit 0 and nothing", out, strings.TrimSpace(string(code)), stderr)
			}
		})
	}
	// /dev/stdout redirected to a file (> and >>) is written in place, never
	// renamed over.
	t.Run("/dev/stdout to a file", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "out.csv")
		if err := os.WriteFile(file, []byte("kept\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		before, _ := os.Lstat("/dev/stdout")
		cmd := exec.Command("sh", "-c", `"$0" --db "$1" export --gpu 3090 --out /dev/stdout >>"$2"`, bin, c.db, file)
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "LISTINGS_CONFIG=", "LISTINGS_DB=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("export --out /dev/stdout >> file: %v\n%s", err, out)
		}
		b, _ := os.ReadFile(file)
		got, ok := strings.CutPrefix(string(b), "kept\n")
		if _, rows := readCSV(t, got); !ok || len(rows) != 4 {
			t.Errorf("file after >> = %q, want the old line and 4 rows", b)
		}
		if after, err := os.Lstat("/dev/stdout"); err != nil || before == nil || after.Mode() != before.Mode() {
			t.Errorf("/dev/stdout was %v, is now %v (%v)", before, after, err)
		}
	})
}

// addBulkRuns adds runs nightly ok runs of a source "bulk" of 200 RTX 4090
// listings, from night first on: about 130 bytes of CSV per listing and run,
// so a few runs overflow a pipe's buffer (64 KiB on Linux).
func addBulkRuns(t *testing.T, path string, first, runs int) int {
	t.Helper()
	db, err := index.Open(path, index.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ls []listings.Listing
	for i := 0; i < 200; i++ {
		ls = append(ls, exportOffer(t, "bulk", fmt.Sprint("offer-", i), "RTX 4090", listings.OnDemand, "0.40", "USD"))
	}
	for n := first; n < first+runs; n++ {
		run := listings.Run{Source: "bulk", Started: night(n), Finished: night(n), Status: listings.RunOK, Listings: len(ls)}
		if _, err := db.WriteRun(run, ls, nil); err != nil {
			t.Fatal(err)
		}
	}
	return len(ls) * runs
}

// fifoExport runs `listings export --out FIFO args...` in the background
// and opens the FIFO for reading once the export opens it for writing.
// wait returns the export's exit code and stderr.
func fifoExport(t *testing.T, c *cli, args ...string) (r *os.File, wait func() (int, string)) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := runEnv(context.Background(), append([]string{"--db", c.db, "export", "--out", fifo}, args...), &out, &errb,
			func(k string) string { return c.env[k] }, func() time.Time { return c.now })
		done <- result{code, errb.String()}
	}()
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.Open(fifo) // waits for the export to open its end
		if err != nil {
			t.Errorf("open %s: %v", fifo, err)
		}
		opened <- f
	}()
	select {
	case f := <-opened:
		if f == nil {
			t.FailNow()
		}
		return f, func() (int, string) { res := <-done; return res.code, res.stderr }
	case res := <-done:
		// Release the reader still waiting in open (O_RDWR never waits).
		if w, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
			w.Close()
		}
		if f := <-opened; f != nil {
			f.Close()
		}
		t.Fatalf("export ended before it opened the pipe: exit %d, stderr %q", res.code, res.stderr)
		return nil, nil
	}
}

// TestExportClosedNamedPipe: a reader of a named pipe that leaves early ends
// the export quietly, as `| head` does on stdout.
func TestExportClosedNamedPipe(t *testing.T) {
	c := newCLI(t)
	addBulkRuns(t, c.db, 0, 10) // about 260 KB of CSV: the export must meet the closed pipe
	r, wait := fifoExport(t, c)
	buf := make([]byte, 100)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatalf("read the pipe: %v", err)
	}
	r.Close()
	if code, stderr := wait(); code != 0 || stderr != "" {
		t.Errorf("export into a named pipe closed early: exit %d, stderr %q; want exit 0 and nothing", code, stderr)
	}
}

// TestExportStalledConsumerReleasesIndex: a consumer of the export that does
// not read does not keep a writer (collect) out of the index: the export
// spools, closes the index, and only then feeds the pipe.
func TestExportStalledConsumerReleasesIndex(t *testing.T) {
	c, want := exportCLI(t)
	want += addBulkRuns(t, c.db, 4, 10)
	r, wait := fifoExport(t, c)
	defer r.Close()
	// The consumer has opened the pipe but reads nothing yet; more than a
	// pipe's buffer is waiting to be written.
	db, err := index.Open(c.db, index.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Errorf("a writer while the export's consumer stalls: %v; want the index released", err)
	} else if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read the pipe: %v", err)
	}
	if code, stderr := wait(); code != 0 || stderr != "" {
		t.Errorf("export: exit %d, stderr %q", code, stderr)
	}
	if _, rows := readCSV(t, string(b)); len(rows) != want {
		t.Errorf("rows read from the pipe = %d, want %d", len(rows), want)
	}
}

// TestExportDemoSeries is the acceptance of issue 5 on the four-night
// Vast.ai demo series.
func TestExportDemoSeries(t *testing.T) {
	c := newCLI(t)
	c.mustRun("demo", "--db", c.db)
	c.mustRun("runs", "--json")
	var runs []struct {
		Source   string    `json:"source"`
		Started  time.Time `json:"started"`
		Status   string    `json:"status"`
		Listings int       `json:"listings"`
	}
	if err := json.Unmarshal([]byte(c.stdout), &runs); err != nil {
		t.Fatalf("runs --json: %v\n%s", err, c.stdout)
	}
	// The Vast.ai series: every offer is rentable, so the rows of each night
	// are the run's listing count.
	wantVast := 0
	var nights []time.Time
	for _, r := range runs {
		if r.Status == "ok" && r.Source == "vastai" {
			wantVast += r.Listings
			nights = append(nights, r.Started)
		}
	}
	if len(nights) != 4 {
		t.Fatalf("demo has %d ok vastai runs, want 4", len(nights))
	}
	_, rows := readCSV(t, c.mustRun("export"))
	perRun := map[string]int{} // source/observed_at -> rows
	for _, r := range rows {
		perRun[r["source"]+"/"+r["observed_at"]]++
	}
	gotVast := 0
	for _, n := range nights {
		gotVast += perRun["vastai/"+n.UTC().Format(time.RFC3339)]
	}
	if gotVast != wantVast {
		t.Errorf("vastai listing rows = %d, want %d (the ok runs' listing counts)", gotVast, wantVast)
	}
	// Every source, every night: the rows are the listings the market
	// snapshot at that run counts (sold-out types, which a run's count
	// includes, are in neither).
	for _, r := range runs {
		if r.Status != "ok" {
			continue
		}
		at := r.Started.UTC().Format(time.RFC3339)
		c.mustRun("gpus", "--json", "--kind", "any", "--as-of", at)
		var market []struct {
			Sources []struct {
				Source   string `json:"source"`
				Listings int    `json:"listings"`
			} `json:"sources"`
		}
		if err := json.Unmarshal([]byte(c.stdout), &market); err != nil {
			t.Fatalf("gpus --json: %v\n%s", err, c.stdout)
		}
		want := 0
		for _, m := range market {
			for _, s := range m.Sources {
				if s.Source == r.Source {
					want += s.Listings
				}
			}
		}
		if got := perRun[r.Source+"/"+at]; got != want || got == 0 || got > r.Listings {
			t.Errorf("%s at %s: %d rows, want %d (the snapshot's listings; the run counted %d)", r.Source, at, got, want, r.Listings)
		}
	}
	perNight := map[string]int{}
	hyper := 0
	for _, r := range rows {
		perNight[r["source"]+"/"+r["listing_id"]+"/"+r["kind"]+"/"+r["observed_at"]]++
		if strings.HasPrefix(r["region"], "=") || strings.HasPrefix(r["region"], "+") || strings.HasPrefix(r["region"], "@") {
			t.Errorf("region %q not neutralised", r["region"])
		}
		if strings.HasPrefix(r["region"], "'=HYPERLINK(") {
			hyper++
		}
	}
	for k, n := range perNight {
		if n != 1 {
			t.Errorf("%s: %d rows, want exactly 1", k, n)
		}
	}
	if hyper == 0 {
		t.Errorf("no region came out as '=HYPERLINK(...)")
	}
	// The vanished floor listings are the ones flags reports.
	c.mustRun("flags", "--json", "--since", "30d")
	var flags []struct {
		Source, ID, Kind string
		Status           string
	}
	if err := json.Unmarshal([]byte(c.stdout), &flags); err != nil {
		t.Fatalf("flags --json: %v\n%s", err, c.stdout)
	}
	vanished := map[string]bool{}
	for _, f := range flags {
		if f.Status == "disappeared" {
			vanished[f.Source+"/"+f.ID+"/"+f.Kind] = true
		}
	}
	if len(vanished) == 0 {
		t.Fatalf("the demo series has no vanished floor listing: %s", c.stdout)
	}
	for _, r := range rows {
		k := r["source"] + "/" + r["listing_id"] + "/" + r["kind"]
		if got := r["disappearing_floor"] == "true"; got != vanished[k] {
			t.Errorf("%s at %s: disappearing_floor %s, want %v", k, r["observed_at"], r["disappearing_floor"], vanished[k])
		}
	}
	// The 4090 row of the third night equals `median --as-of` that night.
	_, daily := readCSV(t, c.mustRun("export", "--granularity", "daily"))
	dailyStderr := c.stderr
	sort.Slice(nights, func(i, j int) bool { return nights[i].Before(nights[j]) })
	third := nights[2].UTC().Format(time.DateOnly)
	var rows4090 []map[string]string
	for _, r := range daily {
		if r["date"] == third && r["gpu"] == "RTX 4090" && r["kind"] == "on-demand" {
			rows4090 = append(rows4090, r)
		}
	}
	if len(rows4090) != 1 {
		t.Fatalf("daily rows for RTX 4090 on-demand on %s: %d, want 1", third, len(rows4090))
	}
	checkDailyAgainstMedian(t, c, rows4090)
	checkDailyAgainstMedian(t, c, daily)
	c.stderr = dailyStderr
	checkDailyOnePerKey(t, c, daily)
}

// checkDailyOnePerKey asserts that the daily export has one USD row per
// (date, gpu, kind) and that its stderr note (c.stderr of the daily export)
// counts the rows `gpus --as-of` reports in a currency without a rate.
func checkDailyOnePerKey(t *testing.T, c *cli, daily []map[string]string) {
	t.Helper()
	note := c.stderr
	seen := map[string]bool{}
	asOfs := map[string]bool{}
	for _, r := range daily {
		k := r["date"] + "/" + r["gpu"] + "/" + r["kind"]
		if seen[k] {
			t.Errorf("more than one daily row for %s", k)
		}
		seen[k] = true
		if r["currency"] != "USD" {
			t.Errorf("daily row %s in %q, want USD", k, r["currency"])
		}
		asOfs[r["as_of"]] = true
	}
	left := map[string]int{}
	for at := range asOfs {
		c.mustRun("gpus", "--json", "--kind", "any", "--as-of", at)
		var market []medianJSON
		if err := json.Unmarshal([]byte(c.stdout), &market); err != nil {
			t.Fatalf("gpus --json: %v\n%s", err, c.stdout)
		}
		for _, m := range market {
			if m.Currency != "USD" && m.Listings > 0 {
				left[m.Currency]++
			}
		}
	}
	n, curs := 0, []string{}
	for cur, k := range left {
		n += k
		curs = append(curs, cur)
	}
	sort.Strings(curs)
	want := fmt.Sprintf("export: %d daily rows in %s left out: configure fx to include them\n", n, strings.Join(curs, ", "))
	if n == 0 || note != want {
		t.Errorf("daily export stderr = %q, want %q (the demo's Cherry Servers rows are EUR without a rate)", note, want)
	}
}

func TestCSVTime(t *testing.T) {
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC), "2026-11-28T03:00:00Z"},
		{time.Date(2026, 11, 28, 3, 0, 0, 500_000_000, time.UTC), "2026-11-28T03:00:00.5Z"},
		{time.Date(2026, 11, 28, 3, 0, 0, 123_456_789, time.UTC), "2026-11-28T03:00:00.123456789Z"},
		{time.Date(2026, 11, 28, 4, 0, 0, 1000, time.FixedZone("CET", 3600)), "2026-11-28T03:00:00.000001Z"},
	}
	for _, tc := range tests {
		got := csvTime(tc.in)
		if got != tc.want {
			t.Errorf("csvTime(%v) = %q, want %q", tc.in, got, tc.want)
		}
		if back, err := parseTime(got); err != nil || !back.Equal(tc.in) {
			t.Errorf("parseTime(%q) = %v, %v; want %v", got, back, err, tc.in)
		}
	}
}

// TestExportSubSecondTimes: runs that started at sub-second times export
// times that parse back to the same instants, so a daily row's as_of given
// to `median --as-of` sees that very run.
func TestExportSubSecondTimes(t *testing.T) {
	c := newCLI(t)
	db, err := index.Open(c.db, index.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	starts := []time.Time{night(0).Add(123_456_789 * time.Nanosecond), night(1).Add(500 * time.Millisecond)}
	offers := [][]listings.Listing{
		{exportOffer(t, "vastai", "A", "RTX 4090", listings.OnDemand, "0.40", "USD"),
			exportOffer(t, "vastai", "B", "RTX 4090", listings.OnDemand, "0.50", "USD"),
			exportOffer(t, "vastai", "C", "RTX 4090", listings.OnDemand, "0.60", "USD")},
		{exportOffer(t, "vastai", "A", "RTX 4090", listings.OnDemand, "0.40", "USD"),
			exportOffer(t, "vastai", "B", "RTX 4090", listings.OnDemand, "0.50", "USD"),
			exportOffer(t, "vastai", "C", "RTX 4090", listings.OnDemand, "0.90", "USD"),
			exportOffer(t, "vastai", "D", "RTX 4090", listings.OnDemand, "0.20", "USD")},
	}
	for i, start := range starts {
		run := listings.Run{Source: "vastai", Started: start, Finished: start.Add(time.Minute), Status: listings.RunOK, Listings: len(offers[i])}
		if _, err := db.WriteRun(run, offers[i], stats.Derive(stats.Params{}, run.Source)); err != nil {
			t.Fatalf("write run at %s: %v", start, err)
		}
	}
	db.Close()

	_, rows := readCSV(t, c.mustRun("export"))
	if len(rows) != 7 {
		t.Fatalf("listing rows = %d, want 7", len(rows))
	}
	for _, r := range rows {
		for _, col := range []string{"observed_at", "first_seen", "last_seen"} {
			got, err := parseTime(r[col])
			if err != nil {
				t.Fatalf("%s %s %q: %v", r["listing_id"], col, r[col], err)
			}
			var want time.Time
			switch col {
			case "observed_at":
				want = starts[0]
				if r["observed_at"] != csvTime(starts[0]) {
					want = starts[1]
				}
			case "first_seen":
				want = starts[0]
				if r["listing_id"] == "D" {
					want = starts[1]
				}
			case "last_seen":
				want = starts[1]
			}
			if !got.Equal(want) {
				t.Errorf("%s %s = %q, want %s", r["listing_id"], col, r[col], want.Format(time.RFC3339Nano))
			}
		}
	}

	_, daily := readCSV(t, c.mustRun("export", "--granularity", "daily"))
	if len(daily) != 2 {
		t.Fatalf("daily rows = %d, want 2:\n%s", len(daily), c.stdout)
	}
	for i, r := range daily {
		if want := starts[i].Format(time.RFC3339Nano); r["as_of"] != want {
			t.Errorf("day %d as_of = %q, want %q", i, r["as_of"], want)
		}
	}
	if got := daily[1]["median"] + " " + daily[1]["durable_floor"]; got != "0.45 0.40" {
		t.Errorf("night 1 median and durable floor = %s, want 0.45 0.40", got)
	}
	checkDailyAgainstMedian(t, c, daily)

	// Parquet keeps microseconds and says so when a time is finer.
	c.mustRun("export", "--format", "parquet", "--out", filepath.Join(t.TempDir(), "p"))
	if !strings.Contains(c.stderr, "parquet timestamps cut to the microsecond") {
		t.Errorf("parquet export of nanosecond times: stderr %q, want a note that they were cut", c.stderr)
	}
}
