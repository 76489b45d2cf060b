package recommend

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/listings-dev/listings"
)

var asOf = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// row is a USD statistics row; live rows have their last ok run an hour
// before asOf.
func row(t testing.TB, gpu string, kind listings.Kind, median string, n int) listings.Row {
	t.Helper()
	p := usd(t, median)
	last := asOf.Add(-time.Hour)
	return listings.Row{
		GPU: gpu, Kind: kind, Currency: listings.USD, AsOf: asOf, Live: true, Listings: n,
		Median: p, P10: p, P25: p, P75: p, P90: p, Floor: p, DurableFloor: &p, LastOKRun: last,
		Sources: []listings.SourceRow{{Source: "vastai", Listings: n, Median: p, LastOKRun: last}},
	}
}

// guideMarket is the market of issue 4: live medians RTX 4090 0.49, RTX
// 3090 0.17, H100 SXM 3.06, and a 0.14 floor listing of the 4090 that
// vanished (the floor left behind is 0.45).
func guideMarket(t testing.TB) Market {
	r4090 := row(t, "RTX 4090", listings.OnDemand, "0.49", 12)
	r4090.Floor = usd(t, "0.45")
	r4090.P10 = usd(t, "0.45")
	r4090.Disappearing = 1
	r4090.Sources = append(r4090.Sources, listings.SourceRow{Source: "runpod", Listings: 2, Median: usd(t, "0.59"), LastOKRun: asOf.Add(-2 * time.Hour)})
	return Market{AsOf: asOf, Rows: []listings.Row{
		r4090,
		row(t, "RTX 3090", listings.OnDemand, "0.17", 30),
		row(t, "H100 SXM", listings.OnDemand, "3.06", 8),
	}, Vanished: map[string][]listings.Price{VanishedKey("RTX 4090", listings.OnDemand): {usd(t, "0.14")}}}
}

func margin(v float64) *float64 { return &v }

func findOption(a Advice, gpu string, kind listings.Kind) *Option {
	for i := range a.Options {
		if a.Options[i].GPU == gpu && a.Options[i].Kind == kind {
			return &a.Options[i]
		}
	}
	return nil
}

func findUnpriced(a Advice, gpu string) *Unpriced {
	for i := range a.Unpriced {
		if a.Unpriced[i].GPU == gpu {
			return &a.Unpriced[i]
		}
	}
	return nil
}

func hasNote(a Advice, sub string) bool {
	for _, n := range a.Notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

func mustRecommend(t *testing.T, j Job, m Market) Advice {
	t.Helper()
	a, err := Recommend(j, m)
	if err != nil {
		t.Fatalf("Recommend(%+v): %v", j, err)
	}
	return a
}

// TestRecommend24GB pins issue 4: a 24 GB, 10-hour training job budgets
// 4.90 on the 4090 (6.125 with margin) and 1.70 on the 3090, never 1.40.
func TestRecommend24GB(t *testing.T) {
	a := mustRecommend(t, Job{Task: "train", VRAMGB: 24, Hours: 10}, guideMarket(t))
	if a.Advice != AdviceServer || a.Tier != Tier24 {
		t.Errorf("advice %q tier %q, want %q %q", a.Advice, a.Tier, AdviceServer, Tier24)
	}
	tests := []struct {
		gpu, budget, margin, price string
	}{
		{"RTX 3090", "1.70", "2.125", "0.17"},
		{"RTX 4090", "4.90", "6.125", "0.49"},
	}
	for _, tt := range tests {
		o := findOption(a, tt.gpu, listings.OnDemand)
		if o == nil {
			t.Errorf("no on-demand option for %s in %+v", tt.gpu, a.Options)
			continue
		}
		if got, want := o.Budget, usd(t, tt.budget); got != want {
			t.Errorf("%s budget = %s, want %s", tt.gpu, got.Decimal(), want.Decimal())
		}
		if got, want := o.BudgetMargin, usd(t, tt.margin); got != want {
			t.Errorf("%s budget with margin = %s, want %s", tt.gpu, got.Decimal(), want.Decimal())
		}
		if got, want := o.Price, usd(t, tt.price); got != want {
			t.Errorf("%s price = %s, want %s", tt.gpu, got.Decimal(), want.Decimal())
		}
		if !o.Live || o.Listings == 0 || o.LastOKRun.IsZero() || len(o.Sources) == 0 {
			t.Errorf("%s provenance = live %v, listings %d, last ok run %v, sources %v; want all set", tt.gpu, o.Live, o.Listings, o.LastOKRun, o.Sources)
		}
	}
	if len(a.Options) != 2 || a.Options[0].GPU != "RTX 3090" || a.Options[1].GPU != "RTX 4090" {
		t.Errorf("options = %+v, want RTX 3090 then RTX 4090 (cheapest budget first)", a.Options)
	}
	// A 24 GB job is offered cards of its tier, not the H100 the market also prices.
	for _, o := range a.Options {
		if o.VRAMGB > 24 {
			t.Errorf("a 24 GB job is offered %s (%d GB), above its tier", o.GPU, o.VRAMGB)
		}
	}
	for _, o := range a.Options {
		if o.Budget == usd(t, "1.40") || o.BudgetMargin == usd(t, "1.40") {
			t.Errorf("%s budgets 1.40: the vanished floor listing was used", o.GPU)
		}
	}
	o := findOption(a, "RTX 4090", listings.OnDemand)
	if o.Floor != usd(t, "0.45") || o.Disappearing != 1 {
		t.Errorf("4090 floor %s disappearing %d, want 0.45 and 1 as information", o.Floor.Decimal(), o.Disappearing)
	}
	if got := strings.Join(o.Sources, ","); got != "runpod,vastai" {
		t.Errorf("4090 sources = %q, want runpod,vastai", got)
	}
	// The warning quotes the vanished listing's price, not the floor left.
	if !hasNote(a, "RTX 4090 on-demand: 1 floor listing disappeared within a day in the last 7 days (at $0.14): budget at the median") {
		t.Errorf("notes %q: want the disappearing floor warning at $0.14", a.Notes)
	}
	if hasNote(a, "$0.45") {
		t.Errorf("notes %q: the warning quotes the floor left behind", a.Notes)
	}
	if len(a.Unpriced) != 0 {
		t.Errorf("unpriced = %+v, want none (both named cards are live)", a.Unpriced)
	}
	if !strings.Contains(a.Summary, "RTX 3090") || !strings.Contains(a.Summary, "$1.70") || !strings.Contains(a.Summary, "$2.125") {
		t.Errorf("summary %q: want the 3090 at $1.70 ($2.125 with margin)", a.Summary)
	}
}

// TestRecommend80GB pins issue 4: an 80 GB job budgets 30.60 on the H100
// SXM and lists the A100 80GB cards as unpriced, "no live price"; once A100
// 80GB rows are live the same question prices them.
func TestRecommend80GB(t *testing.T) {
	j := Job{Task: "train", VRAMGB: 80, Hours: 10}
	m := guideMarket(t)
	a := mustRecommend(t, j, m)
	if a.Tier != Tier80 {
		t.Errorf("tier = %q, want %q", a.Tier, Tier80)
	}
	if len(a.Options) != 1 {
		t.Fatalf("options = %+v, want the H100 SXM alone", a.Options)
	}
	if o := a.Options[0]; o.GPU != "H100 SXM" || o.Budget != usd(t, "30.60") || o.BudgetMargin != usd(t, "38.25") {
		t.Errorf("option = %s %s (%s), want H100 SXM 30.60 (38.25)", o.GPU, o.Budget.Decimal(), o.BudgetMargin.Decimal())
	}
	for _, gpu := range []string{"A100 80GB SXM", "A100 80GB PCIe"} {
		u := findUnpriced(a, gpu)
		if u == nil {
			t.Errorf("%s missing from unpriced %+v", gpu, a.Unpriced)
			continue
		}
		if u.Reason != "no live price (never listed)" {
			t.Errorf("%s reason = %q, want %q", gpu, u.Reason, "no live price (never listed)")
		}
	}
	if findUnpriced(a, "RTX 4090") != nil || findOption(a, "RTX 4090", listings.OnDemand) != nil {
		t.Errorf("the 24 GB 4090 appears for an 80 GB job")
	}

	// An A100 80GB SXM row last seen 21 days ago says its age.
	old := row(t, "A100 80GB SXM", listings.OnDemand, "1.10", 4)
	old.Live, old.LastOKRun = false, asOf.Add(-21*24*time.Hour)
	m.Rows = append(m.Rows, old)
	a = mustRecommend(t, j, m)
	if u := findUnpriced(a, "A100 80GB SXM"); u == nil || u.Reason != "no live price (last price 21 days old)" || !u.LastOKRun.Equal(old.LastOKRun) {
		t.Errorf("A100 80GB SXM unpriced = %+v, want \"no live price (last price 21 days old)\"", u)
	}
	if findOption(a, "A100 80GB SXM", listings.OnDemand) != nil {
		t.Errorf("a stale A100 row was priced")
	}

	// Collected again: the same question prices both A100 80GB cards live.
	m.Rows = append(m.Rows[:len(m.Rows)-1],
		row(t, "A100 80GB SXM", listings.OnDemand, "1.19", 6),
		row(t, "A100 80GB PCIe", listings.OnDemand, "1.05", 3))
	a = mustRecommend(t, j, m)
	if len(a.Unpriced) != 0 {
		t.Errorf("unpriced = %+v, want none", a.Unpriced)
	}
	want := []struct{ gpu, budget string }{{"A100 80GB PCIe", "10.50"}, {"A100 80GB SXM", "11.90"}, {"H100 SXM", "30.60"}}
	if len(a.Options) != len(want) {
		t.Fatalf("options = %+v, want %d", a.Options, len(want))
	}
	for i, w := range want {
		if o := a.Options[i]; o.GPU != w.gpu || o.Budget != usd(t, w.budget) || !o.Live {
			t.Errorf("option %d = %s %s live %v, want %s %s live", i, o.GPU, o.Budget.Decimal(), o.Live, w.gpu, w.budget)
		}
	}
}

// TestRecommendNothingLive pins issue 4: three weeks after the last ok run
// nothing is live, and the answer says so instead of pricing anything.
func TestRecommendNothingLive(t *testing.T) {
	m := guideMarket(t)
	for i := range m.Rows {
		m.Rows[i].Live = false
		m.Rows[i].LastOKRun = asOf.Add(-21 * 24 * time.Hour)
	}
	a := mustRecommend(t, Job{Task: "train", VRAMGB: 24, Hours: 10}, m)
	if a.Advice != AdviceServer || a.Tier != Tier24 {
		t.Errorf("advice %q tier %q, want advice still given", a.Advice, a.Tier)
	}
	if len(a.Options) != 0 {
		t.Errorf("options = %+v, want none priced", a.Options)
	}
	for _, gpu := range named24 {
		if u := findUnpriced(a, gpu); u == nil || u.Reason != "no live price (last price 21 days old)" {
			t.Errorf("%s unpriced = %+v, want the 21-day age", gpu, u)
		}
	}
	if !hasNote(a, "no live prices: the newest run is 21 days old — run `listings collect`") {
		t.Errorf("notes %q: want the no-live-prices note", a.Notes)
	}
	if !strings.Contains(a.Summary, "no live price") {
		t.Errorf("summary %q: want it to say no live price", a.Summary)
	}

	// An empty index says it has no run.
	a = mustRecommend(t, Job{VRAMGB: 24, Hours: 10}, Market{AsOf: asOf})
	if !hasNote(a, "no ok run") || len(a.Unpriced) != 2 || a.Unpriced[0].Reason != "no live price (never listed)" {
		t.Errorf("empty market: unpriced %+v notes %q", a.Unpriced, a.Notes)
	}
}

func TestRecommendAdviceKinds(t *testing.T) {
	m := guideMarket(t)
	tests := []struct {
		name       string
		job        Job
		wantAdvice string
		wantTier   string
		wantNote   string
	}{
		{"image job", Job{Task: "image", Hours: 2}, AdviceJob, Tier24, "stop the clock when the files land"},
		{"video job sized", Job{Task: "video", VRAMGB: 40, Hours: 2}, AdviceJob, Tier80, "storage may be ephemeral"},
		{"7B qlora fits 24 GB", Job{Task: "finetune", Params: 7e9, Method: "qlora", Hours: 10}, AdviceServer, Tier24, "budgets use the live median"},
		{"7B full over 80 GB", Job{Task: "train", Params: 7e9, Hours: 10}, AdviceServer, TierOver80, "no card of the over 80 GB tier has a live price"},
		{"70B full multi-gpu", Job{Task: "train", Params: 70e9, Hours: 10}, AdviceMultiGPU, TierMulti, "interconnect"},
		{"resumable training", Job{Task: "train", VRAMGB: 20, Hours: 10, Resumable: true}, AdviceServer, Tier24, "storage that outlives the instance"},
		{"inference", Job{Task: "inference", Params: 13e9, Hours: 5}, AdviceServer, Tier80, "budgets use the live median"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mustRecommend(t, tt.job, m)
			if a.Advice != tt.wantAdvice || a.Tier != tt.wantTier {
				t.Errorf("advice %q tier %q, want %q %q (need %+v)", a.Advice, a.Tier, tt.wantAdvice, tt.wantTier, a.Need)
			}
			if !hasNote(a, tt.wantNote) {
				t.Errorf("notes %q: want one containing %q", a.Notes, tt.wantNote)
			}
		})
	}
}

func TestRecommendImageUnsizedNote(t *testing.T) {
	a := mustRecommend(t, Job{Task: "image", Hours: 1}, guideMarket(t))
	if a.Need.GB != 24 || !hasNote(a, "sized at the 24 GB tier") {
		t.Errorf("need %+v notes %q: want 24 GB and a note saying so", a.Need, a.Notes)
	}
	if !strings.Contains(a.Summary, "per job") || !strings.Contains(a.Summary, "files land") {
		t.Errorf("summary %q: want a per-job rental", a.Summary)
	}
}

func TestRecommendMultiGPU(t *testing.T) {
	a := mustRecommend(t, Job{Task: "train", Params: 70e9, Hours: 100}, guideMarket(t))
	if len(a.Options) != 0 || len(a.Unpriced) != 0 {
		t.Errorf("options %+v unpriced %+v: want no cluster priced", a.Options, a.Unpriced)
	}
	want := []ClusterSize{{"H100 SXM", 80, 17}, {"MI300X", 192, 7}} // 1344 GB
	if len(a.Cluster) != len(want) {
		t.Fatalf("cluster = %+v, want %+v", a.Cluster, want)
	}
	for i := range want {
		if a.Cluster[i] != want[i] {
			t.Errorf("cluster[%d] = %+v, want %+v", i, a.Cluster[i], want[i])
		}
	}
	if !strings.Contains(a.Summary, "17 × H100 SXM") || !strings.Contains(a.Summary, "interconnect") {
		t.Errorf("summary %q: want the GPU count and the interconnect", a.Summary)
	}
	if !hasNote(a, "NVLink") || !hasNote(a, "InfiniBand") {
		t.Errorf("notes %q: want NVLink/InfiniBand", a.Notes)
	}
}

func TestRecommendInterruptible(t *testing.T) {
	m := guideMarket(t)
	m.Rows = append(m.Rows, row(t, "RTX 4090", listings.Interruptible, "0.25", 5))
	j := Job{Task: "train", VRAMGB: 24, Hours: 10}

	a := mustRecommend(t, j, m)
	if findOption(a, "RTX 4090", listings.Interruptible) != nil {
		t.Errorf("an interruptible option for a job that cannot resume")
	}
	if !hasNote(a, "not resumable") {
		t.Errorf("notes %q: want why interruptible offers are left out", a.Notes)
	}

	j.Resumable = true
	a = mustRecommend(t, j, m)
	o := findOption(a, "RTX 4090", listings.Interruptible)
	if o == nil || o.Spot == nil {
		t.Fatalf("interruptible 4090 = %+v, want an option with its spot cost", o)
	}
	if o.Budget != usd(t, "2.50") || o.BudgetMargin != usd(t, "3.125") {
		t.Errorf("spot budget = %s (%s), want 2.50 (3.125)", o.Budget.Decimal(), o.BudgetMargin.Decimal())
	}
	if got, want := o.Spot.BreakEvenHours, 4.90/0.25; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("break-even hours = %v, want %v", got, want)
	}
	if o.Spot.OnDemand.Rate != usd(t, "0.49") {
		t.Errorf("spot compared with on-demand %s, want 0.49", o.Spot.OnDemand.Rate.Decimal())
	}
	if !hasNote(a, "assume no interruptions") {
		t.Errorf("notes %q: want the no-interruption assumption said", a.Notes)
	}

	// Modelled interruptions bill more hours.
	j.InterruptRate, j.CheckpointMin, j.RestartMin = 0.05, 6, 10
	a = mustRecommend(t, j, m)
	o = findOption(a, "RTX 4090", listings.Interruptible)
	if o == nil || o.Hours <= 10 || o.Spot.SpotHoursFrom != HoursModelled {
		t.Errorf("modelled interruptible 4090 = %+v, want more than 10 billable hours", o)
	}
}

func TestRecommendStorage(t *testing.T) {
	m := guideMarket(t)
	m.Disks = map[string][]float64{"RTX 3090": {50, 200, 0}, "RTX 4090": {100}}
	a := mustRecommend(t, Job{Task: "train", VRAMGB: 24, Hours: 10, Resumable: true, DatasetGB: 100, CheckpointGB: 10}, m)
	s := a.Storage
	if s == nil {
		t.Fatal("storage = nil, want the disk check")
	}
	if s.NeedGB != 130 {
		t.Errorf("need = %v GB, want 130 (100 + 3 × 10)", s.NeedGB)
	}
	want := map[string]DiskFit{
		"RTX 3090": {GPU: "RTX 3090", Listings: 3, Enough: 1, Unknown: 1, MaxGB: 200},
		"RTX 4090": {GPU: "RTX 4090", Listings: 1, Enough: 0, Unknown: 0, MaxGB: 100},
	}
	for _, f := range s.GPUs {
		if w, ok := want[f.GPU]; ok && f != w {
			t.Errorf("disk fit = %+v, want %+v", f, w)
		}
	}
	if !hasNote(a, "no RTX 4090 listing says it has 130 GB of disk") {
		t.Errorf("notes %q: want the 4090 disk shortfall", a.Notes)
	}
	if !hasNote(a, "write checkpoints to storage that outlives the instance") {
		t.Errorf("notes %q: want the checkpoint storage note", a.Notes)
	}
	if a := mustRecommend(t, Job{VRAMGB: 24, Hours: 10}, m); a.Storage != nil {
		t.Errorf("storage = %+v, want nil without sizes", a.Storage)
	}
}

func TestRecommendForeignCurrency(t *testing.T) {
	m := guideMarket(t)
	eur := row(t, "RTX 3090", listings.OnDemand, "0.10", 4)
	eur.Currency = "EUR"
	m.Rows = append([]listings.Row{eur}, m.Rows...)
	a := mustRecommend(t, Job{VRAMGB: 24, Hours: 10}, m)
	if o := findOption(a, "RTX 3090", listings.OnDemand); o == nil || o.Budget != usd(t, "1.70") {
		t.Errorf("3090 option = %+v, want the USD median budget 1.70", o)
	}
	if !hasNote(a, "RTX 3090: 4 EUR listing(s) without an exchange rate") {
		t.Errorf("notes %q: want the EUR rows said", a.Notes)
	}
}

func TestRecommendErrors(t *testing.T) {
	m := guideMarket(t)
	tests := []struct {
		name string
		job  Job
		m    Market
		want string
	}{
		{"no hours", Job{VRAMGB: 24}, m, "hours"},
		{"no as-of", Job{VRAMGB: 24, Hours: 1}, Market{}, "as-of"},
		{"no size", Job{Task: "train", Hours: 1}, m, "model size"},
		{"negative margin", Job{VRAMGB: 24, Hours: 1, RerunMargin: margin(-0.1)}, m, "rerun margin"},
		{"margin above 1", Job{VRAMGB: 24, Hours: 1, RerunMargin: margin(25)}, m, "above 1"},
		{"nan margin", Job{VRAMGB: 24, Hours: 1, RerunMargin: margin(math.NaN())}, m, "rerun margin"},
		{"nan hours", Job{VRAMGB: 24, Hours: math.NaN()}, m, "hours"},
		{"hours 1e13", Job{VRAMGB: 24, Hours: 1e13}, m, "hours"},
		{"inf vram", Job{VRAMGB: math.Inf(1), Hours: 1}, m, "vram"},
		{"spot hours below hours", Job{VRAMGB: 24, Hours: 10, Resumable: true, SpotHours: 5}, m, "fewer than the useful hours"},
		{"rate without minutes", Job{VRAMGB: 24, Hours: 10, Resumable: true, InterruptRate: 0.05}, m, "restart time"},
		{"spot hours and a rate", Job{VRAMGB: 24, Hours: 10, Resumable: true, SpotHours: 12, InterruptRate: 0.05, CheckpointMin: 6, RestartMin: 10}, m, "not both"},
		{"negative extras", Job{VRAMGB: 24, Hours: 10, Extras: Extras{Ops: -1}}, m, "ops"},
		{"negative dataset", Job{VRAMGB: 24, Hours: 1, DatasetGB: -1}, m, "dataset"},
		{"bad task", Job{Task: "mine", VRAMGB: 24, Hours: 1}, m, "unknown task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Recommend(tt.job, tt.m)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "recommend: ") {
				t.Errorf("Recommend error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestAge(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{21 * 24 * time.Hour, "21 days"},
		{50 * time.Hour, "2 days"},
		{30 * time.Hour, "30 hours"},
		{90 * time.Minute, "90 minutes"},
		{30 * time.Second, "30 seconds"},
	}
	for _, tt := range tests {
		if got := Age(tt.d); got != tt.want {
			t.Errorf("Age(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestAdviceJSON pins the field names of DESIGN §6 and prices as exact
// numbers.
func TestAdviceJSON(t *testing.T) {
	a := mustRecommend(t, Job{VRAMGB: 80, Hours: 10}, guideMarket(t))
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	for _, want := range []string{`"advice":"server"`, `"tier":"80 GB"`, `"budget":30.60`, `"budget_with_margin":38.25`,
		`"price":3.06`, `"last_ok_run":"2026-03-02T11:00:00Z"`, `"unpriced":[{"gpu":"A100 80GB PCIe"`, `"reason":"no live price (never listed)"`,
		`"storage":null`, `"notes":[`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("json %s\nwant it to contain %s", b, want)
		}
	}
}

func BenchmarkRecommend(b *testing.B) {
	m := guideMarket(b)
	for _, g := range listings.Catalog() {
		m.Rows = append(m.Rows, row(b, g.Name, listings.Interruptible, "0.30", 3))
	}
	j := Job{Task: "finetune", Params: 7e9, Method: "qlora", Hours: 10, Resumable: true, DatasetGB: 20, CheckpointGB: 2}
	for b.Loop() {
		if _, err := Recommend(j, m); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRecommendHeadline pins the honesty of the headline: an interruptible
// option billed its useful hours (no spot hours, no interruption model) is
// ranked but not headlined, and the summary says spot is assumed
// uninterrupted; with a model it may be the headline.
func TestRecommendHeadline(t *testing.T) {
	m := guideMarket(t)
	m.Rows = append(m.Rows, row(t, "RTX 3090", listings.Interruptible, "0.10", 6))
	j := Job{Task: "train", VRAMGB: 24, Hours: 10, Resumable: true}

	a := mustRecommend(t, j, m)
	if len(a.Options) == 0 || a.Options[0].GPU != "RTX 3090" || a.Options[0].Kind != listings.Interruptible {
		t.Fatalf("options = %+v, want the 3090 interruptible ranked first (1.00)", a.Options)
	}
	if !a.Options[0].AssumesNoInterruptions || a.Options[0].Headline {
		t.Errorf("3090 interruptible assumes %v headline %v, want true false", a.Options[0].AssumesNoInterruptions, a.Options[0].Headline)
	}
	o := findOption(a, "RTX 3090", listings.OnDemand)
	if o == nil || !o.Headline {
		t.Errorf("3090 on-demand = %+v, want the headline", o)
	}
	for _, want := range []string{"the RTX 3090 at $0.17/GPU-hr budgets $1.70", "the RTX 3090 interruptible ($1.00) budgets less only if spot is never interrupted"} {
		if !strings.Contains(a.Summary, want) {
			t.Errorf("summary %q: want %q", a.Summary, want)
		}
	}
	if !hasNote(a, "assume no interruptions") {
		t.Errorf("notes %q: want the assumption said", a.Notes)
	}

	// Modelled interruptions: the spot option may lead.
	j.InterruptRate, j.CheckpointMin, j.RestartMin = 0.05, 6, 10
	a = mustRecommend(t, j, m)
	if h := a.Options[0]; h.GPU != "RTX 3090" || h.Kind != listings.Interruptible || !h.Headline || h.AssumesNoInterruptions {
		t.Errorf("headline = %+v, want the modelled 3090 interruptible", h)
	}
	if !strings.Contains(a.Summary, "the interruptible RTX 3090") || strings.Contains(a.Summary, "never interrupted") {
		t.Errorf("summary %q: want the modelled interruptible 3090 without the assumption", a.Summary)
	}

	// Only an unmodelled spot option priced: it is the headline, said so.
	only := Market{AsOf: asOf, Rows: []listings.Row{row(t, "RTX 4090", listings.Interruptible, "0.25", 5)}}
	a = mustRecommend(t, Job{VRAMGB: 24, Hours: 10, Resumable: true}, only)
	if len(a.Options) != 1 || !a.Options[0].Headline || !strings.Contains(a.Summary, "assuming it is never interrupted") {
		t.Errorf("options %+v summary %q: want the spot option headlined with the assumption said", a.Options, a.Summary)
	}
}

// TestRecommendThin pins thin markets: an option priced from fewer than 3
// listings is marked, and not headlined while a better supported one
// exists.
func TestRecommendThin(t *testing.T) {
	m := guideMarket(t)
	m.Rows[1] = row(t, "RTX 3090", listings.OnDemand, "0.17", 1)
	a := mustRecommend(t, Job{VRAMGB: 24, Hours: 10}, m)
	o3090, o4090 := findOption(a, "RTX 3090", listings.OnDemand), findOption(a, "RTX 4090", listings.OnDemand)
	if o3090 == nil || o4090 == nil {
		t.Fatalf("options = %+v, want both cards", a.Options)
	}
	if !o3090.Thin || o3090.Headline || o4090.Thin || !o4090.Headline {
		t.Errorf("3090 thin %v headline %v, 4090 thin %v headline %v; want true false false true", o3090.Thin, o3090.Headline, o4090.Thin, o4090.Headline)
	}
	if a.Options[0].GPU != "RTX 3090" {
		t.Errorf("options = %+v, want the thin 3090 still ranked first", a.Options)
	}
	if !strings.Contains(a.Summary, "the RTX 4090 at $0.49/GPU-hr budgets $4.90") || !strings.Contains(a.Summary, "from 1 listing budgets less but is too thin") {
		t.Errorf("summary %q: want the 4090 headlined and the thin 3090 said", a.Summary)
	}
	if !hasNote(a, "RTX 3090 on-demand is priced from 1 listing, a thin market: not the headline") {
		t.Errorf("notes %q: want the thin-market note", a.Notes)
	}
	b, err := json.Marshal(o3090)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if !strings.Contains(string(b), `"thin":true`) || !strings.Contains(string(b), `"headline":false`) {
		t.Errorf("json %s: want thin true, headline false", b)
	}

	// Every option thin: the cheapest is the headline, and it says so.
	m.Rows[0].Listings = 2
	a = mustRecommend(t, Job{VRAMGB: 24, Hours: 10}, m)
	if !a.Options[0].Headline || a.Options[0].GPU != "RTX 3090" || !strings.Contains(a.Summary, "priced from only 1 listing") {
		t.Errorf("options %+v summary %q: want the thin 3090 headlined with a warning", a.Options, a.Summary)
	}
}

// TestRecommendExtras pins that the spot extras go into every
// interruptible option's total, budget and break-even.
func TestRecommendExtras(t *testing.T) {
	m := guideMarket(t)
	m.Rows = append(m.Rows, row(t, "RTX 4090", listings.Interruptible, "0.25", 5), row(t, "RTX 3090", listings.Interruptible, "0.10", 5))
	m.Rows = m.Rows[:len(m.Rows):len(m.Rows)]
	j := Job{VRAMGB: 24, Hours: 10, Resumable: true, SpotHours: 12, Extras: Extras{Storage: usd(t, "0.50"), Ops: usd(t, "0.50")}}
	a := mustRecommend(t, j, m)
	o := findOption(a, "RTX 4090", listings.Interruptible)
	if o == nil || o.Spot == nil || o.Spot.Spot.Total == nil {
		t.Fatalf("4090 interruptible = %+v, want a spot cost", o)
	}
	// 0.25 × 12 = 3.00 + 1.00 extras.
	if got, want := *o.Spot.Spot.Total, usd(t, "4.00"); got != want {
		t.Errorf("spot total = %s, want %s", got.Decimal(), want.Decimal())
	}
	if o.Budget != usd(t, "4.00") || o.BudgetMargin != usd(t, "5.00") {
		t.Errorf("budget %s (%s), want 4.00 (5.00)", o.Budget.Decimal(), o.BudgetMargin.Decimal())
	}
	// (4.90 − 1.00) / 0.25 = 15.6 billable hours.
	if math.Abs(o.Spot.BreakEvenHours-15.6) > 1e-9 {
		t.Errorf("break-even = %v h, want 15.6", o.Spot.BreakEvenHours)
	}
	if o.Spot.Spot.Storage != usd(t, "0.50") || o.Spot.Spot.Ops != usd(t, "0.50") {
		t.Errorf("extras = %+v, want storage 0.50 and ops 0.50", o.Spot.Spot)
	}
	// An interruptible card with no live on-demand price still pays the extras.
	m.Rows = append(m.Rows, row(t, "RTX 3080", listings.Interruptible, "0.05", 4))
	a = mustRecommend(t, Job{VRAMGB: 10, Hours: 10, Resumable: true, SpotHours: 10, Extras: Extras{Recovery: usd(t, "2")}}, m)
	if o := findOption(a, "RTX 3080", listings.Interruptible); o == nil || o.Budget != usd(t, "2.50") {
		t.Errorf("3080 interruptible = %+v, want 0.05 × 10 + 2 = 2.50", o)
	}
}

func TestRecommendMargin(t *testing.T) {
	tests := []struct {
		name   string
		margin *float64
		want   string
	}{
		{"default", nil, "6.125"},
		{"none", margin(0), "4.90"},
		{"half", margin(0.5), "7.35"},
		{"all", margin(1), "9.80"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mustRecommend(t, Job{VRAMGB: 24, Hours: 10, RerunMargin: tt.margin}, guideMarket(t))
			o := findOption(a, "RTX 4090", listings.OnDemand)
			if o == nil || o.BudgetMargin != usd(t, tt.want) || o.Budget != usd(t, "4.90") {
				t.Errorf("4090 = %+v, want budget 4.90 with margin %s", o, tt.want)
			}
		})
	}
}

func TestParseRerunMargin(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr string
	}{
		{"0.25", 0.25, ""},
		{"25%", 0.25, ""},
		{" 10 % ", 0.10, ""},
		{"0", 0, ""},
		{"0%", 0, ""},
		{"1", 1, ""},
		{"100%", 1, ""},
		{"25", 0, "above 1"},
		{"150%", 0, "above 1"},
		{"-0.1", 0, "from 0 to 1"},
		{"NaN", 0, "from 0 to 1"},
		{"Inf", 0, "from 0 to 1"},
		{"lots", 0, "want a fraction"},
		{"", 0, "want a fraction"},
	}
	for _, tt := range tests {
		got, err := ParseRerunMargin(tt.in)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseRerunMargin(%q) = %v, %v; want an error about %q", tt.in, got, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || math.Abs(got-tt.want) > 1e-12):
			t.Errorf("ParseRerunMargin(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// TestRecommendTierNotes pins that notes speak only of the tier's cards,
// and that a named card listed only in a currency without an fx rate says
// so instead of "never listed".
func TestRecommendTierNotes(t *testing.T) {
	m := guideMarket(t)
	h100eur := row(t, "H100 SXM", listings.OnDemand, "2.80", 5)
	h100eur.Currency = "EUR"
	m.Rows = append(m.Rows, h100eur, row(t, "H100 SXM", listings.Interruptible, "1.50", 5))
	a := mustRecommend(t, Job{VRAMGB: 24, Hours: 10}, m)
	if hasNote(a, "H100") {
		t.Errorf("notes %q: a 24 GB job hears of the H100, above its tier", a.Notes)
	}
	if hasNote(a, "interruptible offers are left out") {
		t.Errorf("notes %q: no card of the tier has interruptible offers", a.Notes)
	}
	// The same rows speak to an 80 GB job.
	a = mustRecommend(t, Job{VRAMGB: 80, Hours: 10}, m)
	if !hasNote(a, "H100 SXM: 5 EUR listing(s) without an exchange rate") || !hasNote(a, "interruptible offers are left out") {
		t.Errorf("notes %q: want the EUR and interruptible notes for the 80 GB tier", a.Notes)
	}

	// A named card listed only in EUR.
	eur := row(t, "RTX 4090", listings.OnDemand, "0.40", 4)
	eur.Currency = "EUR"
	only := Market{AsOf: asOf, Rows: []listings.Row{eur, row(t, "RTX 3090", listings.OnDemand, "0.17", 30)}}
	a = mustRecommend(t, Job{VRAMGB: 24, Hours: 10}, only)
	if u := findUnpriced(a, "RTX 4090"); u == nil || u.Reason != "listed only in EUR, no fx rate configured" {
		t.Errorf("RTX 4090 unpriced = %+v, want \"listed only in EUR, no fx rate configured\"", u)
	}
}

// TestRecommendAmounts checks that budgets beyond 1e12 are an error, not
// a wrapped negative number.
func TestRecommendAmounts(t *testing.T) {
	m := Market{AsOf: asOf, Rows: []listings.Row{row(t, "RTX 4090", listings.OnDemand, "999999999999", 3)}}
	_, err := Recommend(Job{VRAMGB: 24, Hours: 1e6}, m)
	if !errors.Is(err, ErrAmountTooLarge) || !strings.Contains(err.Error(), "amount too large") {
		t.Errorf("Recommend error = %v, want amount too large", err)
	}
}

// TestThinNotesOnlyForTemptations: a thin option dearer than the headline
// gets no note; one cheaper than it does.
func TestThinNotesOnlyForTemptations(t *testing.T) {
	opts := []Option{
		{GPU: "A30", Kind: listings.OnDemand, Listings: 1, Thin: true, Budget: 100},
		{GPU: "RTX 3090", Kind: listings.OnDemand, Listings: 26, Headline: true, Budget: 110},
		{GPU: "A10", Kind: listings.OnDemand, Listings: 1, Thin: true, Budget: 750},
	}
	notes := strings.Join(thinNotes(opts), "\n")
	if !strings.Contains(notes, "A30") || strings.Contains(notes, "A10") {
		t.Errorf("thin notes:\n%s\nwant the cheaper A30 named and the dearer A10 left out", notes)
	}
}
