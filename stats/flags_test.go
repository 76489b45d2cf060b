package stats

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/listings-dev/listings"
)

// gone is a floor listing (FloorAt = first) of vastai's RTX 4090 on-demand
// row, present from first to last and gone at goneAt.
func gone(id, price string, first, last, goneAt time.Time) listings.Gone {
	return listings.Gone{
		Source: "vastai", ID: id, GPU: "RTX 4090", Kind: od, Price: P(price), Currency: "USD",
		FirstSeen: first, LastSeen: last, GoneAt: goneAt, FloorAt: first,
	}
}

// flagIDs summarises flags as "id:status:lifetime".
func flagIDs(fs []Flag) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s:%s:%s", f.ID, f.Status, f.Lifetime))
	}
	return out
}

func TestFlagsDisappeared(t *testing.T) {
	h, d := time.Hour, 24*time.Hour
	notFloor := gone("nf", "0.10", t0.Add(-2*d), t0.Add(-2*d), t0.Add(-d))
	notFloor.FloorAt = time.Time{}
	tests := []struct {
		name   string
		gone   listings.Gone
		window time.Duration
		want   []string
	}{
		{"seen once, gone next run: lifetime 0", gone("once", "0.10", t0.Add(-2*d), t0.Add(-2*d), t0.Add(-d)), 0, []string{"once:disappeared:0s"}},
		{"lived 23h", gone("short", "0.10", t0.Add(-3*d), t0.Add(-3*d+23*h), t0.Add(-2*d)), 0, []string{"short:disappeared:23h0m0s"}},
		{"lived 24h: not disappearing", gone("long", "0.10", t0.Add(-3*d), t0.Add(-2*d), t0.Add(-d)), 0, nil},
		{"never a floor listing", notFloor, 0, nil},
		{"gone exactly 7d before as_of: inside", gone("edge", "0.10", t0.Add(-8*d), t0.Add(-8*d), t0.Add(-7*d)), 0, []string{"edge:disappeared:0s"}},
		{"gone 8d before as_of: outside", gone("old", "0.10", t0.Add(-9*d), t0.Add(-9*d), t0.Add(-8*d)), 0, nil},
		{"gone after as_of: outside", gone("future", "0.10", t0, t0, t0.Add(h)), 0, nil},
		{"gone at as_of: inside", gone("now", "0.10", t0.Add(-h), t0.Add(-h), t0), 0, []string{"now:disappeared:0s"}},
		{"window is a parameter", gone("old", "0.10", t0.Add(-9*d), t0.Add(-9*d), t0.Add(-8*d)), 10 * d, []string{"old:disappeared:0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &listings.Snapshot{
				AsOf:       t0,
				Runs:       map[string]listings.Run{"vastai": {Started: t0}},
				Gone:       []listings.Gone{tt.gone},
				LastListed: map[string]time.Time{listings.RowKey("RTX 4090", od, "USD"): t0.Add(-d)},
			}
			p := Params{Window: tt.window}
			if got := flagIDs(Flags(snap, p, false)); !slices.Equal(got, tt.want) {
				t.Errorf("Flags = %q, want %q", got, tt.want)
			}
			rows := Rows(snap, p)
			if len(rows) != 1 {
				t.Fatalf("Rows: got %d rows, want the not-live RTX 4090 row", len(rows))
			}
			if got, want := rows[0].Disappearing, len(tt.want); got != want {
				t.Errorf("row Disappearing = %d, want %d", got, want)
			}
		})
	}
}

func TestFlagsDisappearedFields(t *testing.T) {
	d := 24 * time.Hour
	g := gone("v7", "0.50", t0.Add(-2*d), t0.Add(-2*d), t0.Add(-d))
	g.Currency = "EUR"
	snap := &listings.Snapshot{
		AsOf: t0,
		Runs: map[string]listings.Run{"vastai": {Started: t0, FX: map[string]listings.Price{"EUR": P("1.08")}}},
		Gone: []listings.Gone{g},
	}
	got := Flags(snap, Params{}, false)
	if len(got) != 1 {
		t.Fatalf("Flags: got %d, want 1", len(got))
	}
	f := got[0]
	if f.Source != "vastai" || f.ID != "v7" || f.GPU != "RTX 4090" || f.Kind != od || f.Status != Disappeared {
		t.Errorf("flag identity = %+v, want vastai v7 RTX 4090 on-demand disappeared", f)
	}
	if f.Price != P("0.54") || f.Currency != "USD" {
		t.Errorf("flag price = %v %s, want 0.54 USD (converted at the run's rate)", f.Price, f.Currency)
	}
	if f.GoneAt == nil || !f.GoneAt.Equal(t0.Add(-d)) || !f.LastSeen.Equal(t0.Add(-2*d)) || !f.FirstSeen.Equal(t0.Add(-2*d)) {
		t.Errorf("flag times = first %v last %v gone %v, want first=last=%v gone %v", f.FirstSeen, f.LastSeen, f.GoneAt, t0.Add(-2*d), t0.Add(-d))
	}
}

func TestFlagsUnconfirmed(t *testing.T) {
	h := time.Hour
	run := t0
	// Eleven older listings at 0.50 … 1.50 fix the row's p10 at 0.60 (h = 1),
	// then the listings under test.
	var present []listings.Presence
	for i := 5; i <= 15; i++ {
		present = append(present, pr("vastai", fmt.Sprintf("base%02d", i), "RTX 4090", od, fmt.Sprintf("%.2f", float64(i)/10), run.Add(-48*h), run))
	}
	present = append(present,
		floorAt(pr("vastai", "young-marked", "RTX 4090", od, "0.90", run.Add(-2*h), run), run.Add(-2*h)),    // marked at an earlier run
		pr("vastai", "young-cheap", "RTX 4090", od, "0.40", run, run),                                       // at/below p10 now
		floorAt(pr("vastai", "old-marked", "RTX 4090", od, "0.90", run.Add(-24*h), run), run.Add(-24*h)),    // 24h: confirmed
		pr("vastai", "young-dear", "RTX 4090", od, "0.95", run, run),                                        // not a floor listing
		floorAt(pr("vastai", "marked-later", "RTX 4090", od, "0.95", run.Add(-h), run), run.Add(time.Hour)), // mark from after this run
	)
	// Adding the young ones moves p10: recompute it and check the premise.
	snap := &listings.Snapshot{
		AsOf:    run.Add(3 * h),
		Runs:    map[string]listings.Run{"vastai": {Started: run}},
		Present: present,
		Gone: []listings.Gone{
			gone("gone1", "0.10", run.Add(-26*h), run.Add(-26*h), run.Add(-2*h)),
		},
	}
	rows := Rows(snap, Params{})
	if len(rows) != 1 || rows[0].P10 >= P("0.90") || rows[0].P10 < P("0.40") {
		t.Fatalf("premise: want one row with 0.40 <= p10 < 0.90, got %s", dumpRows(rows))
	}

	got := flagIDs(Flags(snap, Params{}, true))
	want := []string{
		"young-cheap:unconfirmed:0s",
		"young-marked:unconfirmed:2h0m0s",
		"gone1:disappeared:0s",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Flags(pending) = %q, want %q", got, want)
	}
	if got := flagIDs(Flags(snap, Params{}, false)); !slices.Equal(got, want[2:]) {
		t.Errorf("Flags(not pending) = %q, want only the disappeared %q", got, want[2:])
	}
	if got := rows[0].Unconfirmed; got != 2 {
		t.Errorf("row Unconfirmed = %d, want 2", got)
	}
	for _, f := range Flags(snap, Params{}, true) {
		if f.Status == Unconfirmed && (f.GoneAt != nil || !f.LastSeen.Equal(run)) {
			t.Errorf("unconfirmed %s: GoneAt %v LastSeen %v, want nil and the run start %v", f.ID, f.GoneAt, f.LastSeen, run)
		}
	}
}

func TestFlagsOrder(t *testing.T) {
	d := 24 * time.Hour
	mk := func(src, id string, goneAt time.Time) listings.Gone {
		g := gone(id, "0.1", goneAt.Add(-d/2), goneAt.Add(-d/2), goneAt)
		g.Source = src
		return g
	}
	snap := &listings.Snapshot{
		AsOf: t0,
		Gone: []listings.Gone{
			mk("vastai", "b", t0.Add(-3*d)),
			mk("vastai", "a", t0.Add(-3*d)),
			mk("runpod", "z", t0.Add(-3*d)),
			mk("vastai", "c", t0.Add(-d)),
			mk("runpod", "y", t0.Add(-5*d)),
		},
	}
	var got []string
	for _, f := range Flags(snap, Params{}, false) {
		got = append(got, f.Source+"/"+f.ID)
	}
	want := []string{"vastai/c", "runpod/z", "vastai/a", "vastai/b", "runpod/y"}
	if !slices.Equal(got, want) {
		t.Errorf("flag order = %q, want %q", got, want)
	}
}

func TestFlagJSON(t *testing.T) {
	gone := t0.In(time.FixedZone("X", 3600))
	tests := []struct {
		name string
		flag Flag
		want string
	}{
		{
			name: "disappeared",
			flag: Flag{Source: "vastai", ID: "1", GPU: "RTX 4090", Kind: od, Price: P("0.16"), Currency: "USD",
				FirstSeen: t0.Add(-90 * time.Minute), LastSeen: t0.Add(-time.Hour), GoneAt: &gone, Lifetime: 30 * time.Minute, Status: Disappeared},
			want: `{"source":"vastai","id":"1","gpu":"RTX 4090","kind":"on-demand","price":0.16,"currency":"USD",` +
				`"first_seen":"2024-11-05T01:30:00Z","last_seen":"2024-11-05T02:00:00Z","gone_at":"2024-11-05T03:00:00Z","lifetime_s":1800,"status":"disappeared"}`,
		},
		{
			name: "unconfirmed has a null gone_at",
			flag: Flag{Source: "vastai", ID: "2", GPU: "RTX 3090", Kind: itr, Price: P("0.1"), Currency: "USD",
				FirstSeen: t0, LastSeen: t0, Status: Unconfirmed},
			want: `{"source":"vastai","id":"2","gpu":"RTX 3090","kind":"interruptible","price":0.10,"currency":"USD",` +
				`"first_seen":"2024-11-05T03:00:00Z","last_seen":"2024-11-05T03:00:00Z","gone_at":null,"lifetime_s":0,"status":"unconfirmed"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.flag)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if got := string(b); got != tt.want {
				t.Errorf("json:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestResample(t *testing.T) {
	h := time.Hour
	day := time.Date(2024, 11, 5, 0, 0, 0, 0, time.UTC)
	row := func(gpu string, at time.Time, median string) listings.Row {
		return listings.Row{GPU: gpu, Kind: od, Currency: "USD", AsOf: at, Median: P(median)}
	}
	points := []listings.Row{
		row("RTX 4090", day.Add(1*h), "0.41"),
		row("RTX 4090", day.Add(5*h), "0.42"),
		row("RTX 3090", day.Add(6*h), "0.20"),
		row("RTX 4090", day.Add(23*h), "0.43"),
		row("RTX 4090", day.Add(25*h), "0.44"),
		row("RTX 4090", day.Add(26*h), "0.45"),
	}
	medians := func(rows []listings.Row) string {
		var s []string
		for _, r := range rows {
			s = append(s, r.Median.Decimal())
		}
		return strings.Join(s, " ")
	}
	tests := []struct {
		name  string
		every time.Duration
		want  string
	}{
		{"zero keeps all", 0, "0.41 0.42 0.20 0.43 0.44 0.45"},
		{"negative keeps all", -h, "0.41 0.42 0.20 0.43 0.44 0.45"},
		{"hourly buckets keep all distinct hours", h, "0.41 0.42 0.20 0.43 0.44 0.45"},
		{"daily: last of each UTC day, per gpu", 24 * h, "0.20 0.43 0.45"},
		{"12h buckets aligned to the epoch", 12 * h, "0.42 0.20 0.43 0.45"},
		{"weekly", 7 * 24 * h, "0.20 0.45"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := medians(Resample(points, tt.every)); got != tt.want {
				t.Errorf("Resample(%v) medians = %q, want %q", tt.every, got, tt.want)
			}
		})
	}
}

func TestFloorDiv(t *testing.T) {
	tests := []struct{ a, b, want int64 }{
		{7, 2, 3}, {6, 2, 3}, {0, 5, 0}, {-1, 5, -1}, {-5, 5, -1}, {-6, 5, -2},
	}
	for _, tt := range tests {
		if got := floorDiv(tt.a, tt.b); got != tt.want {
			t.Errorf("floorDiv(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
