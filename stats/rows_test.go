package stats

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/listings-dev/listings"
)

var t0 = time.Date(2024, 11, 5, 3, 0, 0, 0, time.UTC)

// pr is a USD presence of a listing first seen at first, in the run started
// at run.
func pr(src, id, gpu string, kind listings.Kind, price string, first, run time.Time) listings.Presence {
	return listings.Presence{
		Segment: listings.Segment{
			Source: src, ID: id, GPU: gpu, Kind: kind, Price: P(price), Currency: listings.USD,
			Start: first, End: run, FirstSeen: first,
		},
		RunStarted: run,
	}
}

// in sets the presence's currency.
func in(p listings.Presence, cur string) listings.Presence { p.Currency = cur; return p }

// floorAt sets the presence's floor mark.
func floorAt(p listings.Presence, at time.Time) listings.Presence { p.FloorAt = at; return p }

// pp points at a price, for DurableFloor.
func pp(s string) *listings.Price { v := P(s); return &v }

const (
	od  = listings.OnDemand
	itr = listings.Interruptible
	mon = listings.Monthly
)

func TestRowsCountFloorPercentilesSources(t *testing.T) {
	h := time.Hour
	snap := &listings.Snapshot{
		AsOf: t0.Add(2 * h),
		Runs: map[string]listings.Run{
			"vastai": {Source: "vastai", Started: t0, Status: listings.RunOK},
			"runpod": {Source: "runpod", Started: t0.Add(-h), Status: listings.RunOK},
		},
		Present: []listings.Presence{
			pr("vastai", "v1", "RTX 4090", od, "0.30", t0.Add(-48*h), t0),
			pr("vastai", "v2", "RTX 4090", od, "0.40", t0, t0),
			pr("vastai", "v3", "RTX 4090", od, "0.50", t0, t0),
			pr("runpod", "r1", "RTX 4090", od, "0.35", t0.Add(-h), t0.Add(-h)),
			pr("runpod", "r2", "RTX 4090", od, "0.45", t0.Add(-h), t0.Add(-h)),
			pr("vastai", "v1", "RTX 4090", itr, "0.20", t0, t0),
			pr("vastai", "v9", "RTX 3090", od, "0.22", t0, t0),
		},
	}
	want := []listings.Row{
		{
			GPU: "RTX 3090", Kind: od, Currency: "USD", AsOf: t0.Add(2 * h), Live: true, Listings: 1,
			Median: P("0.22"), P10: P("0.22"), P25: P("0.22"), P75: P("0.22"), P90: P("0.22"), Floor: P("0.22"),
			Unconfirmed: 1, // at its row's p10 now and 0 h old
			LastOKRun:   t0,
			Sources:     []listings.SourceRow{{Source: "vastai", Listings: 1, Median: P("0.22"), LastOKRun: t0}},
		},
		{
			GPU: "RTX 4090", Kind: od, Currency: "USD", AsOf: t0.Add(2 * h), Live: true, Listings: 5,
			// sorted 0.30 0.35 0.40 0.45 0.50: h=0.4 → 0.32; h=1 → 0.35; h=3 → 0.45; h=3.6 → 0.48
			Median: P("0.40"), P10: P("0.32"), P25: P("0.35"), P75: P("0.45"), P90: P("0.48"), Floor: P("0.30"),
			DurableFloor: pp("0.30"), // v1 has been present 48 h
			LastOKRun:    t0,
			Sources: []listings.SourceRow{
				{Source: "runpod", Listings: 2, Median: P("0.40"), LastOKRun: t0.Add(-h)},
				{Source: "vastai", Listings: 3, Median: P("0.40"), LastOKRun: t0},
			},
		},
		{
			GPU: "RTX 4090", Kind: itr, Currency: "USD", AsOf: t0.Add(2 * h), Live: true, Listings: 1,
			Median: P("0.20"), P10: P("0.20"), P25: P("0.20"), P75: P("0.20"), P90: P("0.20"), Floor: P("0.20"),
			Unconfirmed: 1, LastOKRun: t0,
			Sources: []listings.SourceRow{{Source: "vastai", Listings: 1, Median: P("0.20"), LastOKRun: t0}},
		},
	}
	got := Rows(snap, Params{})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Rows:\n got %s\nwant %s", dumpRows(got), dumpRows(want))
	}
}

// dumpRows prints rows readably for failure messages.
func dumpRows(rows []listings.Row) string {
	var b strings.Builder
	for _, r := range rows {
		df := "nil"
		if r.DurableFloor != nil {
			df = r.DurableFloor.String()
		}
		fmt.Fprintf(&b, "\n  %s/%s/%s live=%v n=%d med=%v p10=%v p25=%v p75=%v p90=%v floor=%v durable=%s dis=%d unc=%d last=%s as_of=%s src=%v",
			r.GPU, r.Kind, r.Currency, r.Live, r.Listings, r.Median, r.P10, r.P25, r.P75, r.P90, r.Floor, df,
			r.Disappearing, r.Unconfirmed, r.LastOKRun.Format(time.RFC3339), r.AsOf.Format(time.RFC3339), r.Sources)
	}
	return b.String()
}

func TestConvert(t *testing.T) {
	fx := map[string]listings.Price{"EUR": P("1.08"), "JPY": P("0.0067"), "XXX": 0}
	tests := []struct {
		name     string
		price    listings.Price
		currency string
		wantUSD  listings.Price
		wantOK   bool
	}{
		{"usd passes through", P("0.49"), "USD", P("0.49"), true},
		{"empty currency is usd", P("0.49"), "", P("0.49"), true},
		{"eur at 1.08", P("0.50"), "EUR", P("0.54"), true},
		{"lower-case code", P("0.50"), "eur", P("0.54"), true},
		{"rounds to the micro", P("0.333333"), "EUR", P("0.36"), true}, // 0.35999964
		{"jpy", P("100"), "JPY", P("0.67"), true},
		{"no rate keeps the price", P("0.40"), "GBP", P("0.40"), false},
		{"zero rate is no rate", P("0.40"), "XXX", P("0.40"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Convert(tt.price, tt.currency, fx)
			if got != tt.wantUSD || ok != tt.wantOK {
				t.Errorf("Convert(%v, %q) = %v, %v; want %v, %v", tt.price, tt.currency, got, ok, tt.wantUSD, tt.wantOK)
			}
		})
	}
	if got, ok := Convert(P("0.5"), "EUR", nil); ok || got != P("0.5") {
		t.Errorf("Convert with nil rates = %v, %v; want 0.5, false", got, ok)
	}
}

func TestRowsFXConversionAndNoRateRows(t *testing.T) {
	snap := &listings.Snapshot{
		AsOf: t0,
		Runs: map[string]listings.Run{
			"vastai":        {Source: "vastai", Started: t0},
			"cherryservers": {Source: "cherryservers", Started: t0, FX: map[string]listings.Price{"EUR": P("1.08")}},
			"other":         {Source: "other", Started: t0}, // no rates recorded with this run
		},
		Present: []listings.Presence{
			pr("vastai", "a", "RTX 4090", od, "0.60", t0, t0),
			in(pr("cherryservers", "c1", "RTX 4090", od, "0.50", t0, t0), "EUR"), // 0.54 USD
			in(pr("cherryservers", "c2", "RTX 4090", od, "0.40", t0, t0), "GBP"), // no GBP rate
			in(pr("other", "o1", "RTX 4090", od, "0.70", t0, t0), "EUR"),         // no rate at that run
		},
	}
	type summary struct {
		Currency string
		Listings int
		Median   listings.Price
		Floor    listings.Price
		Sources  string
	}
	want := []summary{
		{"USD", 2, P("0.57"), P("0.54"), "cherryservers:1@0.540000 vastai:1@0.600000"},
		{"EUR", 1, P("0.70"), P("0.70"), "other:1@0.700000"},
		{"GBP", 1, P("0.40"), P("0.40"), "cherryservers:1@0.400000"},
	}
	var got []summary
	for _, r := range Rows(snap, Params{}) {
		var src []string
		for _, s := range r.Sources {
			src = append(src, fmt.Sprintf("%s:%d@%v", s.Source, s.Listings, s.Median))
		}
		got = append(got, summary{r.Currency, r.Listings, r.Median, r.Floor, strings.Join(src, " ")})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Rows by currency:\n got %+v\nwant %+v", got, want)
	}
}

func TestRowsDurableFloor(t *testing.T) {
	h := time.Hour
	tests := []struct {
		name    string
		minLife time.Duration
		present []listings.Presence
		want    *listings.Price
	}{
		{
			name: "a 24h-old listing sets it",
			present: []listings.Presence{
				pr("vastai", "old", "RTX 4090", od, "0.30", t0.Add(-24*h), t0),
				pr("vastai", "new", "RTX 4090", od, "0.10", t0, t0),
			},
			want: pp("0.30"),
		},
		{
			name: "a 23h-old listing does not",
			present: []listings.Presence{
				pr("vastai", "young", "RTX 4090", od, "0.10", t0.Add(-23*h), t0),
				pr("vastai", "old", "RTX 4090", od, "0.50", t0.Add(-25*h), t0),
			},
			want: pp("0.50"),
		},
		{
			name: "nil when none has lasted min_life",
			present: []listings.Presence{
				pr("vastai", "a", "RTX 4090", od, "0.10", t0.Add(-23*h), t0),
				pr("vastai", "b", "RTX 4090", od, "0.20", t0, t0),
			},
			want: nil,
		},
		{
			name: "lowest of the durable ones",
			present: []listings.Presence{
				pr("vastai", "a", "RTX 4090", od, "0.40", t0.Add(-30*h), t0),
				pr("vastai", "b", "RTX 4090", od, "0.35", t0.Add(-90*h), t0),
				pr("vastai", "c", "RTX 4090", od, "0.20", t0.Add(-2*h), t0),
			},
			want: pp("0.35"),
		},
		{
			name:    "min_life is a parameter",
			minLife: 2 * h,
			present: []listings.Presence{
				pr("vastai", "c", "RTX 4090", od, "0.20", t0.Add(-2*h), t0),
				pr("vastai", "d", "RTX 4090", od, "0.10", t0.Add(-1*h), t0),
			},
			want: pp("0.20"),
		},
		{
			name: "age counts to the listing's own run, not as_of",
			present: []listings.Presence{
				// First seen 20h before its run; as_of is 10h after the run.
				pr("vastai", "a", "RTX 4090", od, "0.20", t0.Add(-20*h), t0),
			},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &listings.Snapshot{AsOf: t0.Add(10 * h), Runs: map[string]listings.Run{"vastai": {Started: t0}}, Present: tt.present}
			rows := Rows(snap, Params{MinLife: tt.minLife})
			if len(rows) != 1 {
				t.Fatalf("Rows: got %d rows, want 1", len(rows))
			}
			if got := rows[0].DurableFloor; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DurableFloor = %s, want %s", fmtPtr(got), fmtPtr(tt.want))
			}
		})
	}
}

func fmtPtr(p *listings.Price) string {
	if p == nil {
		return "nil"
	}
	return p.String()
}

// eleven RTX 4090 on-demand listings at 0.10 … 1.10 from vastai, plus any extra.
func elevenAndMore(extra ...listings.Presence) []listings.Presence {
	var out []listings.Presence
	for i := 1; i <= 11; i++ {
		out = append(out, pr("vastai", fmt.Sprintf("v%02d", i), "RTX 4090", od, fmt.Sprintf("%.2f", float64(i)/10), t0, t0))
	}
	return append(out, extra...)
}

func TestFloorKeys(t *testing.T) {
	tests := []struct {
		name    string
		present []listings.Presence
		source  string
		want    []string
	}{
		{
			// p10 of 0.1…1.1 is exactly 0.2 (h = 1): at or below takes both.
			name:    "at or below p10",
			present: elevenAndMore(),
			source:  "vastai",
			want:    []string{"v01\x00on-demand", "v02\x00on-demand"},
		},
		{
			// p10 of 0.1…1.0 is 0.19: only 0.1.
			name:    "strictly above p10 is not floor",
			present: elevenAndMore()[:10],
			source:  "vastai",
			want:    []string{"v01\x00on-demand"},
		},
		{
			name: "only the source asked for, but tested against the whole row",
			present: elevenAndMore(
				pr("runpod", "r1", "RTX 4090", od, "0.05", t0, t0),
			), // sorted 0.05 0.1 0.2 …: p10 = 0.1 + 0.2·0.1 = 0.12
			source: "vastai",
			want:   []string{"v01\x00on-demand"},
		},
		{
			name: "each kind is its own row",
			present: elevenAndMore(
				pr("vastai", "v05", "RTX 4090", itr, "0.25", t0, t0),
			),
			source: "vastai",
			want:   []string{"v01\x00on-demand", "v02\x00on-demand", "v05\x00interruptible"},
		},
		{
			name:    "no listings of the source",
			present: elevenAndMore(),
			source:  "runpod",
			want:    nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &listings.Snapshot{AsOf: t0, Runs: map[string]listings.Run{"vastai": {Started: t0}, "runpod": {Started: t0}}, Present: tt.present}
			rows := Rows(snap, Params{})
			if got := FloorKeys(snap, rows, tt.source); !slices.Equal(got, tt.want) {
				t.Errorf("FloorKeys(%s) = %q, want %q", tt.source, got, tt.want)
			}
		})
	}
}

func TestFloorKeysConvertsLikeRows(t *testing.T) {
	snap := &listings.Snapshot{
		AsOf: t0,
		Runs: map[string]listings.Run{
			"vastai":        {Started: t0},
			"cherryservers": {Started: t0, FX: map[string]listings.Price{"EUR": P("1.10")}},
		},
		// EUR 0.10 → USD 0.11, the lowest of the USD row.
		Present: elevenAndMore(in(pr("cherryservers", "c1", "RTX 4090", od, "0.10", t0, t0), "EUR")),
	}
	rows := Rows(snap, Params{})
	if got, want := FloorKeys(snap, rows, "cherryservers"), []string{"c1\x00on-demand"}; !slices.Equal(got, want) {
		t.Errorf("FloorKeys(cherryservers) = %q, want %q", got, want)
	}
}

func TestDerive(t *testing.T) {
	snap := &listings.Snapshot{AsOf: t0, Runs: map[string]listings.Run{"vastai": {Started: t0}}, Present: elevenAndMore()}
	rows, floor := Derive(Params{}, "vastai")(snap)
	if want := Rows(snap, Params{}); !reflect.DeepEqual(rows, want) {
		t.Errorf("Derive rows:\n got %s\nwant %s", dumpRows(rows), dumpRows(want))
	}
	if want := []string{"v01\x00on-demand", "v02\x00on-demand"}; !slices.Equal(floor, want) {
		t.Errorf("Derive floor = %q, want %q", floor, want)
	}
}

func TestRowsNotLiveFromLastListed(t *testing.T) {
	last := t0.Add(-72 * time.Hour)
	snap := &listings.Snapshot{
		AsOf: t0,
		Runs: map[string]listings.Run{"vastai": {Started: t0}},
		Present: []listings.Presence{
			pr("vastai", "v1", "RTX 4090", od, "0.30", t0, t0),
		},
		LastListed: map[string]time.Time{
			listings.RowKey("A100 80GB SXM", od, "USD"): last,
			listings.RowKey("RTX 4090", od, "USD"):      t0, // live: no second row
		},
	}
	rows := Rows(snap, Params{})
	if len(rows) != 2 {
		t.Fatalf("Rows: got %d rows, want 2:%s", len(rows), dumpRows(rows))
	}
	got := rows[1] // A100 comes after the RTX 4090 in catalog order
	want := listings.Row{GPU: "A100 80GB SXM", Kind: od, Currency: "USD", AsOf: t0, Live: false, Listings: 0, LastOKRun: last, Sources: []listings.SourceRow{}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("not-live row:\n got %s\nwant %s", dumpRows([]listings.Row{got}), dumpRows([]listings.Row{want}))
	}
	if !rows[0].Live || rows[0].GPU != "RTX 4090" || rows[0].Listings != 1 {
		t.Errorf("live row: got %s, want RTX 4090 live with 1 listing", dumpRows(rows[:1]))
	}
}

func TestRowsOrder(t *testing.T) {
	var present []listings.Presence
	for i, g := range []struct {
		gpu  string
		kind listings.Kind
		cur  string
	}{
		{"Mystery GPU", od, "USD"},
		{"H100 SXM", itr, "USD"},
		{"RTX 4090", mon, "USD"},
		{"H100 SXM", od, "USD"},
		{"RTX 4090", od, "EUR"},
		{"Another Unknown", od, "USD"},
		{"RTX 3090", od, "USD"},
		{"RTX 4090", od, "USD"},
		{"RTX 4090", itr, "USD"},
		{"RTX 4090", od, "CHF"},
	} {
		present = append(present, in(pr("vastai", fmt.Sprint(i), g.gpu, g.kind, "1", t0, t0), g.cur))
	}
	snap := &listings.Snapshot{AsOf: t0, Runs: map[string]listings.Run{"vastai": {Started: t0}}, Present: present}
	var got []string
	for _, r := range Rows(snap, Params{}) {
		got = append(got, fmt.Sprintf("%s/%s/%s", r.GPU, r.Kind, r.Currency))
	}
	want := []string{
		"RTX 3090/on-demand/USD",
		"RTX 4090/on-demand/USD",
		"RTX 4090/on-demand/CHF",
		"RTX 4090/on-demand/EUR",
		"RTX 4090/interruptible/USD",
		"RTX 4090/monthly/USD",
		"H100 SXM/on-demand/USD",
		"H100 SXM/interruptible/USD",
		"Another Unknown/on-demand/USD",
		"Mystery GPU/on-demand/USD",
	}
	if !slices.Equal(got, want) {
		t.Errorf("row order:\n got %q\nwant %q", got, want)
	}
}

func TestRowsEmptySnapshot(t *testing.T) {
	if got := Rows(&listings.Snapshot{AsOf: t0}, Params{}); len(got) != 0 {
		t.Errorf("Rows(empty) = %s, want no rows", dumpRows(got))
	}
}
