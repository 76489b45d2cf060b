package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/listings-dev/listings"
	"github.com/listings-dev/listings/index"
	"github.com/listings-dev/listings/stats"
)

// recOffer is an available USD listing of one GPU at one source.
func recOffer(t *testing.T, id, gpu string, kind listings.Kind, price string, disk float64) listings.Listing {
	t.Helper()
	p, err := listings.ParsePrice(price)
	if err != nil {
		t.Fatalf("ParsePrice(%q): %v", price, err)
	}
	g, ok := listings.Lookup(gpu)
	if !ok {
		t.Fatalf("%s is not in the catalog", gpu)
	}
	return listings.Listing{
		Source: "vastai", ID: id, GPU: gpu, Known: true, RawGPU: gpu, GPUCount: 1, VRAMGB: float64(g.VRAMGB),
		Kind: kind, Price: p, Currency: listings.USD, Reliability: 0.99, DiskGB: disk, Available: true,
	}
}

// recWrite writes one ok vastai run started at `at` with ls into the test's
// index, through the same derive step as collect.
func recWrite(t *testing.T, c *cli, at time.Time, ls []listings.Listing) {
	t.Helper()
	db, err := index.Open(c.db, index.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("index.Open: %v", err)
	}
	defer db.Close()
	run := listings.Run{Source: "vastai", Started: at, Finished: at.Add(time.Minute), Status: listings.RunOK, Listings: len(ls)}
	if _, err := db.WriteRun(run, ls, stats.Derive(stats.Params{}, "vastai")); err != nil {
		t.Fatalf("WriteRun: %v", err)
	}
}

// recGuideIndex builds the market of issue 4: live medians RTX 4090 0.49,
// RTX 3090 0.17, H100 SXM 3.06, a 4090 interruptible at 0.25, and a 0.14
// 4090 floor listing seen once and gone at the next run.
func recGuideIndex(t *testing.T) *cli {
	c := newCLI(t)
	market := func(withFloor bool) []listings.Listing {
		ls := []listings.Listing{
			recOffer(t, "a", "RTX 4090", listings.OnDemand, "0.45", 500),
			recOffer(t, "b", "RTX 4090", listings.OnDemand, "0.49", 100),
			recOffer(t, "c", "RTX 4090", listings.OnDemand, "0.53", 0),
			recOffer(t, "a", "RTX 4090", listings.Interruptible, "0.25", 500),
			recOffer(t, "d", "RTX 3090", listings.OnDemand, "0.16", 200),
			recOffer(t, "e", "RTX 3090", listings.OnDemand, "0.17", 200),
			recOffer(t, "f", "RTX 3090", listings.OnDemand, "0.18", 50),
			recOffer(t, "g", "H100 SXM", listings.OnDemand, "3.00", 1000),
			recOffer(t, "h", "H100 SXM", listings.OnDemand, "3.06", 1000),
			recOffer(t, "i", "H100 SXM", listings.OnDemand, "3.12", 1000),
		}
		if withFloor {
			ls = append(ls, recOffer(t, "floor", "RTX 4090", listings.OnDemand, "0.14", 100))
		}
		return ls
	}
	recWrite(t, c, c.now.Add(-26*time.Hour), market(true))
	recWrite(t, c, c.now.Add(-2*time.Hour), market(false))
	return c
}

// recJSON runs a command that prints one JSON object and decodes it.
func recJSON(t *testing.T, c *cli, wantCode int, args ...string) map[string]any {
	t.Helper()
	if code := c.run(args...); code != wantCode {
		t.Fatalf("listings %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, c.stdout, c.stderr)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(c.stdout), &v); err != nil {
		t.Fatalf("listings %s: %v\n%s", strings.Join(args, " "), err, c.stdout)
	}
	return v
}

// recOptions indexes the JSON options by "gpu/kind".
func recOptions(t *testing.T, v map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	opts, ok := v["options"].([]any)
	if !ok {
		t.Fatalf("options = %v, want an array", v["options"])
	}
	for _, o := range opts {
		m := o.(map[string]any)
		out[fmt.Sprint(m["gpu"], "/", m["kind"])] = m
	}
	return out
}

func recUnpriced(v map[string]any) map[string]string {
	out := map[string]string{}
	for _, u := range v["unpriced"].([]any) {
		m := u.(map[string]any)
		out[m["gpu"].(string)] = m["reason"].(string)
	}
	return out
}

func recNotes(v map[string]any) string {
	var s []string
	for _, n := range v["notes"].([]any) {
		s = append(s, n.(string))
	}
	return strings.Join(s, "\n")
}

// TestRecommendCommand24GB pins issue 4 through the CLI: a 24 GB, 10-hour
// training job budgets 4.90 on the 4090 (6.125 with margin) and 1.70 on
// the 3090, never 1.40.
func TestRecommendCommand24GB(t *testing.T) {
	c := recGuideIndex(t)
	v := recJSON(t, c, 0, "recommend", "--vram", "24", "--hours", "10", "--json")
	if v["advice"] != "server" || v["tier"] != "24 GB" {
		t.Errorf("advice %v tier %v, want server, 24 GB", v["advice"], v["tier"])
	}
	opts := recOptions(t, v)
	tests := []struct {
		key            string
		price, budget  float64
		margin         float64
		listings, gone float64
	}{
		{"RTX 3090/on-demand", 0.17, 1.70, 2.125, 3, 0},
		{"RTX 4090/on-demand", 0.49, 4.90, 6.125, 3, 1},
	}
	if _, ok := opts["H100 SXM/on-demand"]; ok {
		t.Errorf("a 24 GB job is offered the H100 SXM, above its tier")
	}
	for _, tt := range tests {
		o := opts[tt.key]
		if o == nil {
			t.Errorf("no option %s in %v", tt.key, c.stdout)
			continue
		}
		if o["price"] != tt.price || o["budget"] != tt.budget || o["budget_with_margin"] != tt.margin {
			t.Errorf("%s price %v budget %v margin %v, want %v %v %v", tt.key, o["price"], o["budget"], o["budget_with_margin"], tt.price, tt.budget, tt.margin)
		}
		if o["live"] != true || o["listings"] != tt.listings || o["last_ok_run"] != "2026-11-30T02:00:00Z" {
			t.Errorf("%s provenance live %v listings %v last_ok_run %v, want true %v 2026-11-30T02:00:00Z", tt.key, o["live"], o["listings"], o["last_ok_run"], tt.listings)
		}
		if o["disappearing"] != tt.gone {
			t.Errorf("%s disappearing = %v, want %v", tt.key, o["disappearing"], tt.gone)
		}
	}
	if _, ok := opts["RTX 4090/interruptible"]; ok {
		t.Errorf("an interruptible option without --resumable")
	}
	if strings.Contains(c.stdout, `"budget": 1.40`) || strings.Contains(c.stdout, `"budget": 1.4,`) {
		t.Errorf("a budget of 1.40: the vanished floor listing was used\n%s", c.stdout)
	}

	// The human answer: one sentence, then the table, then the notes.
	out := c.mustRun("recommend", "--vram", "24", "--hours", "10")
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "For 24 GB per card, rent a server on the 24 GB tier: the RTX 3090 at $0.17/GPU-hr budgets $1.70 for 10 h ($2.125 with a 25% rerun margin).") {
		t.Errorf("first line = %q, want the advice sentence", lines[0])
	}
	// The disappearing warning quotes the vanished listing (0.14), not the
	// floor left behind (0.45).
	for _, want := range []string{"BUDGET", "WITH 25% MARGIN", "$4.90", "$6.125", "notes:", "* RTX 3090",
		"RTX 4090 on-demand: 1 floor listing disappeared within a day in the last 7 days (at $0.14): budget at the median"} {
		if !strings.Contains(out, want) {
			t.Errorf("human output lacks %q:\n%s", want, out)
		}
	}
	if n := recNotes(v); strings.Contains(n, "$0.45") || !strings.Contains(n, "(at $0.14)") {
		t.Errorf("notes %q: want the vanished $0.14 quoted, not the $0.45 floor", n)
	}
}

// TestRecommendCommand80GB pins issue 4: an 80 GB job budgets 30.60 on the
// H100 SXM and lists the A100 as "no live price"; once A100 80GB listings
// are collected the same question prices it live.
func TestRecommendCommand80GB(t *testing.T) {
	c := recGuideIndex(t)
	args := []string{"recommend", "--vram", "80", "--hours", "10", "--json"}
	v := recJSON(t, c, 0, args...)
	opts := recOptions(t, v)
	if len(opts) != 1 || opts["H100 SXM/on-demand"]["budget"] != 30.60 {
		t.Errorf("options = %v, want H100 SXM at 30.60 alone", opts)
	}
	un := recUnpriced(v)
	for _, g := range []string{"A100 80GB SXM", "A100 80GB PCIe"} {
		if un[g] != "no live price (never listed)" {
			t.Errorf("%s unpriced reason = %q, want \"no live price (never listed)\"", g, un[g])
		}
	}

	sxm := recOffer(t, "j", "A100 80GB SXM", listings.OnDemand, "1.19", 500)
	pcie := recOffer(t, "k", "A100 80GB PCIe", listings.OnDemand, "1.05", 500)
	recWrite(t, c, c.now.Add(-time.Hour), []listings.Listing{
		recOffer(t, "h", "H100 SXM", listings.OnDemand, "3.06", 1000), sxm, pcie,
	})
	v = recJSON(t, c, 0, args...)
	opts = recOptions(t, v)
	if o := opts["A100 80GB SXM/on-demand"]; o == nil || o["budget"] != 11.90 || o["live"] != true {
		t.Errorf("A100 80GB SXM option = %v, want a live budget of 11.90", o)
	}
	if o := opts["A100 80GB PCIe/on-demand"]; o == nil || o["budget"] != 10.50 {
		t.Errorf("A100 80GB PCIe option = %v, want 10.50", o)
	}
	if un := recUnpriced(v); len(un) != 0 {
		t.Errorf("unpriced = %v, want none", un)
	}
}

// TestRecommendCommandNothingLive pins issue 4: three weeks after the last
// ok run nothing is live, the answer says so, and the exit code is 1.
func TestRecommendCommandNothingLive(t *testing.T) {
	c := recGuideIndex(t)
	asOf := c.now.Add(21 * 24 * time.Hour).Format(time.RFC3339)
	v := recJSON(t, c, 1, "recommend", "--vram", "24", "--hours", "10", "--as-of", asOf, "--json")
	if opts := v["options"].([]any); len(opts) != 0 {
		t.Errorf("options = %v, want none priced", opts)
	}
	if un := recUnpriced(v); un["RTX 4090"] != "no live price (last price 21 days old)" {
		t.Errorf("RTX 4090 unpriced = %q, want the 21-day age", un["RTX 4090"])
	}
	if n := recNotes(v); !strings.Contains(n, "no live prices: the newest run is 21 days old — run `listings collect`") {
		t.Errorf("notes %q: want the no-live-prices note", n)
	}
}

func TestRecommendCommandAdvice(t *testing.T) {
	c := recGuideIndex(t)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantAdvice string
		wantTier   string
	}{
		{"image job", []string{"--task", "image", "--hours", "2"}, 0, "job", "24 GB"},
		{"7B qlora", []string{"--task", "finetune", "--params", "7B", "--method", "qlora", "--hours", "10"}, 0, "server", "24 GB"},
		{"70B full", []string{"--task", "train", "--params", "70B", "--hours", "10"}, 0, "multi-gpu", "multi-GPU"},
		{"7B full has no live card", []string{"--params", "7b", "--hours", "10"}, 1, "server", "over 80 GB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := recJSON(t, c, tt.wantCode, append(append([]string{"recommend"}, tt.args...), "--json")...)
			if v["advice"] != tt.wantAdvice || v["tier"] != tt.wantTier {
				t.Errorf("advice %v tier %v, want %s %s", v["advice"], v["tier"], tt.wantAdvice, tt.wantTier)
			}
		})
	}
}

func TestRecommendCommandResumable(t *testing.T) {
	c := recGuideIndex(t)
	v := recJSON(t, c, 0, "recommend", "--vram", "20", "--hours", "10", "--resumable", "--dataset-gb", "100", "--checkpoint-gb", "10", "--json")
	o := recOptions(t, v)["RTX 4090/interruptible"]
	if o == nil {
		t.Fatalf("no interruptible 4090 option with --resumable:\n%s", c.stdout)
	}
	spot, _ := o["spot"].(map[string]any)
	if o["budget"] != 2.50 || spot == nil || spot["break_even_hours"] != 19.6 {
		t.Errorf("interruptible 4090 budget %v spot %v, want 2.50 and break-even 19.6 h", o["budget"], spot)
	}
	st, _ := v["storage"].(map[string]any)
	if st == nil || st["need_gb"] != 130.0 {
		t.Fatalf("storage = %v, want need_gb 130", v["storage"])
	}
	fits := map[string]float64{}
	for _, g := range st["gpus"].([]any) {
		m := g.(map[string]any)
		fits[m["gpu"].(string)] = m["enough"].(float64)
	}
	if fits["RTX 4090"] != 1 || fits["RTX 3090"] != 2 || len(fits) != 2 {
		t.Errorf("listings with enough disk = %v, want 4090 1, 3090 2 (the H100 is above a 20 GB job's tier)", fits)
	}
	if n := recNotes(v); !strings.Contains(n, "storage that outlives the instance") {
		t.Errorf("notes %q: want checkpoints on lasting storage", n)
	}
}

func TestRecommendCommandUsage(t *testing.T) {
	c := recGuideIndex(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no hours", []string{"--vram", "24"}, "--hours is required"},
		{"no size", []string{"--task", "train", "--hours", "3"}, "model size"},
		{"bad params", []string{"--params", "seven", "--hours", "3"}, "--params"},
		{"bad task", []string{"--task", "mine", "--vram", "24", "--hours", "3"}, "unknown task"},
		{"bad precision", []string{"--params", "7B", "--precision", "fp64", "--hours", "3"}, "unknown precision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code := c.run(append([]string{"recommend"}, tt.args...)...)
			if code != 2 || !strings.HasPrefix(c.stderr, "listings: error: ") || !strings.Contains(c.stderr, tt.want) {
				t.Errorf("exit %d stderr %q, want 2 and an error about %q", code, c.stderr, tt.want)
			}
		})
	}
}

// TestCostCommandGuideExample pins the guide's worked example of issue 4.
func TestCostCommandGuideExample(t *testing.T) {
	c := newCLI(t)
	args := []string{"cost", "--on-demand", "1.00", "--spot", "0.40", "--hours", "100", "--spot-hours", "135", "--storage", "8", "--ops", "12"}
	v := recJSON(t, c, 0, append(args, "--json")...)
	od, _ := v["on_demand"].(map[string]any)
	sp, _ := v["spot"].(map[string]any)
	if od == nil || sp == nil {
		t.Fatalf("on_demand %v spot %v, want objects", v["on_demand"], v["spot"])
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"on_demand.rate", od["rate"], 1.0},
		{"on_demand.hours", od["hours"], 100.0},
		{"on_demand.compute", od["compute"], 100.0},
		{"on_demand.total", od["total"], 100.0},
		{"spot.rate", sp["rate"], 0.4},
		{"spot.hours", sp["hours"], 135.0},
		{"spot.compute", sp["compute"], 54.0},
		{"spot.storage", sp["storage"], 8.0},
		{"spot.transfer", sp["transfer"], 0.0},
		{"spot.recovery", sp["recovery"], 0.0},
		{"spot.ops", sp["ops"], 12.0},
		{"spot.total", sp["total"], 74.0},
		{"savings", v["savings"], 26.0},
		{"savings_pct", v["savings_pct"], 26.0},
		{"advertised_discount", v["advertised_discount"], 0.6},
		{"break_even_hours", v["break_even_hours"], 200.0},
		{"checkpoint_interval_min", v["checkpoint_interval_min"], 0.0},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
	out := c.mustRun(args...)
	for _, want := range []string{"= $100.00", "$54.00 compute + $8.00 storage", "$12.00 ops = $74.00",
		"advertised discount 60%", "spot saves $26.00 (26% of on-demand)", "up to 200.00 billable hours"} {
		if !strings.Contains(out, want) {
			t.Errorf("human output lacks %q:\n%s", want, out)
		}
	}
}

// TestCostCommandModelled pins the modelled spot of issue 4: W = 100 h,
// λ = 0.05/h, δ = 6 min, ρ = 10 min give τ = 120 min and 111.50 hours.
func TestCostCommandModelled(t *testing.T) {
	c := newCLI(t)
	args := []string{"cost", "--on-demand", "1.00", "--spot", "0.40", "--hours", "100",
		"--interrupt-rate", "0.05", "--checkpoint-min", "6", "--restart-min", "10"}
	v := recJSON(t, c, 0, append(args, "--json")...)
	sp := v["spot"].(map[string]any)
	if h := sp["hours"].(float64); fmt.Sprintf("%.2f", h) != "111.50" {
		t.Errorf("spot hours = %v, want 111.50", h)
	}
	if v["checkpoint_interval_min"] != 120.0 {
		t.Errorf("checkpoint_interval_min = %v, want 120", v["checkpoint_interval_min"])
	}
	if l, ok := v["break_even_interrupt_rate"].(float64); !ok || l <= 0.05 {
		t.Errorf("break_even_interrupt_rate = %v, want a rate above 0.05", v["break_even_interrupt_rate"])
	}
	out := c.mustRun(args...)
	if !strings.Contains(out, "111.50 h (modelled)") || !strings.Contains(out, "checkpoint interval: 120 min") {
		t.Errorf("human output lacks the modelled hours or interval:\n%s", out)
	}

	// λ(ρ + τ/2) ≥ 1: the run never finishes, and the answer says so.
	out = c.mustRun("cost", "--on-demand", "1", "--spot", "0.4", "--hours", "10",
		"--interrupt-rate", "1", "--checkpoint-min", "1", "--restart-min", "30", "--checkpoint-interval-min", "60")
	if !strings.Contains(out, "never finishes") {
		t.Errorf("output lacks \"never finishes\":\n%s", out)
	}
}

func TestCostCommandLive(t *testing.T) {
	c := recGuideIndex(t)
	v := recJSON(t, c, 0, "cost", "--gpu", "4090", "--hours", "10", "--json")
	if od := v["on_demand"].(map[string]any); od["rate"] != 0.49 || od["total"] != 4.90 {
		t.Errorf("on_demand = %v, want the live median 0.49 and 4.90", od)
	}
	if sp := v["spot"].(map[string]any); sp["rate"] != 0.25 {
		t.Errorf("spot rate = %v, want the live interruptible median 0.25", sp["rate"])
	}
	from, _ := v["priced_from"].([]any)
	if len(from) != 2 {
		t.Fatalf("priced_from = %v, want the two live rows", v["priced_from"])
	}
	if p := from[0].(map[string]any); p["live"] != true || p["listings"] != 3.0 || p["last_ok_run"] != "2026-11-30T02:00:00Z" {
		t.Errorf("priced_from[0] = %v, want live, 3 listings, last ok run 02:00", p)
	}

	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"no spot price", []string{"--gpu", "3090", "--hours", "10"}, 1, "RTX 3090 interruptible: no live price (never listed)"},
		{"stale", []string{"--gpu", "4090", "--hours", "10", "--as-of", c.now.Add(21 * 24 * time.Hour).Format(time.RFC3339)}, 1, "no live price (last price 21 days old)"},
		{"ambiguous gpu", []string{"--gpu", "a100", "--hours", "10"}, 2, "name one"},
		{"unknown gpu", []string{"--gpu", "zz9000", "--hours", "10"}, 2, "matches no known GPU"},
		{"both modes", []string{"--gpu", "4090", "--on-demand", "1", "--spot", "0.5", "--hours", "10"}, 2, "not both"},
		{"no rates", []string{"--on-demand", "1", "--hours", "10"}, 2, "--spot"},
		{"no hours", []string{"--on-demand", "1", "--spot", "0.5"}, 2, "--hours is required"},
		{"bad storage", []string{"--on-demand", "1", "--spot", "0.5", "--hours", "1", "--storage", "lots"}, 2, "--storage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code := c.run(append([]string{"cost"}, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(c.stderr, tt.want) {
				t.Errorf("exit %d stderr %q, want %d and %q", code, c.stderr, tt.wantCode, tt.want)
			}
		})
	}
}

// TestSpotUsageErrors pins the spot rules of both commands: billable hours
// below the useful ones, a rate without its minutes, hours and a rate
// together, and NaN, infinite, negative or absurd numbers are usage errors
// (exit 2) before any index is read.
func TestSpotUsageErrors(t *testing.T) {
	c := recGuideIndex(t)
	rec := []string{"recommend", "--vram", "24", "--hours", "10", "--resumable"}
	cost := []string{"cost", "--on-demand", "1", "--spot", "0.4", "--hours", "10"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"recommend spot hours below hours", append(rec, "--spot-hours", "5"), "fewer than the useful hours"},
		{"cost spot hours below hours", append(cost, "--spot-hours", "5"), "fewer than the useful hours"},
		{"recommend rate alone", append(rec, "--interrupt-rate", "0.05"), "restart time"},
		{"cost rate alone", append(cost, "--interrupt-rate", "0.05"), "restart time"},
		{"cost rate without restart", append(cost, "--interrupt-rate", "0.05", "--checkpoint-min", "6"), "restart time"},
		{"recommend hours and rate", append(rec, "--spot-hours", "12", "--interrupt-rate", "0.05", "--checkpoint-min", "6", "--restart-min", "10"), "not both"},
		{"cost hours and rate", append(cost, "--spot-hours", "12", "--interrupt-rate", "0.05", "--checkpoint-min", "6", "--restart-min", "10"), "not both"},
		{"recommend nan hours", []string{"recommend", "--vram", "24", "--hours", "NaN"}, "hours"},
		{"recommend negative hours", []string{"recommend", "--vram", "24", "--hours", "-3"}, "hours"},
		{"recommend hours 1e13", []string{"recommend", "--vram", "24", "--hours", "1e13"}, "hours"},
		{"recommend inf vram", []string{"recommend", "--vram", "Inf", "--hours", "10"}, "vram"},
		{"recommend nan dataset", []string{"recommend", "--vram", "24", "--hours", "10", "--dataset-gb", "NaN"}, "dataset"},
		{"recommend nan rate", append(rec, "--interrupt-rate", "NaN", "--checkpoint-min", "6", "--restart-min", "10"), "interruption rate"},
		{"recommend negative ops", append(rec, "--ops", "-1"), "--ops"},
		{"recommend bad storage", append(rec, "--storage", "lots"), "--storage"},
		{"cost negative storage", append(cost, "--storage", "-2"), "--storage"},
		{"cost nan hours", []string{"cost", "--on-demand", "1", "--spot", "0.4", "--hours", "NaN"}, "hours"},
		{"cost inf spot hours", append(cost, "--spot-hours", "+Inf"), "spot hours"},
		{"cost hours 1e13", []string{"cost", "--on-demand", "1", "--spot", "0.4", "--hours", "1e13"}, "hours"},
		{"cost negative rate", []string{"cost", "--on-demand", "-1", "--spot", "0.4", "--hours", "10"}, "on-demand rate"},
		{"cost amount too large", []string{"cost", "--on-demand", "999999999999", "--spot", "1", "--hours", "10"}, "amount too large"},
		{"margin above 1", []string{"recommend", "--vram", "24", "--hours", "10", "--rerun-margin", "25"}, "above 1"},
		{"margin above 100%", []string{"recommend", "--vram", "24", "--hours", "10", "--rerun-margin", "150%"}, "above 1"},
		{"negative margin", []string{"recommend", "--vram", "24", "--hours", "10", "--rerun-margin", "-0.1"}, "--rerun-margin"},
		{"nan margin", []string{"recommend", "--vram", "24", "--hours", "10", "--rerun-margin", "NaN"}, "--rerun-margin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code := c.run(tt.args...)
			if code != 2 || !strings.HasPrefix(c.stderr, "listings: error: ") || !strings.Contains(c.stderr, tt.want) {
				t.Errorf("listings %s: exit %d stderr %q, want 2 and an error about %q", strings.Join(tt.args, " "), code, c.stderr, tt.want)
			}
		})
	}
}

func TestRecommendCommandMargin(t *testing.T) {
	c := recGuideIndex(t)
	tests := []struct {
		margin string
		want   float64
	}{
		{"0", 4.90},
		{"0%", 4.90},
		{"25%", 6.125},
		{"0.25", 6.125},
		{"1", 9.80},
	}
	for _, tt := range tests {
		t.Run(tt.margin, func(t *testing.T) {
			v := recJSON(t, c, 0, "recommend", "--vram", "24", "--hours", "10", "--rerun-margin", tt.margin, "--json")
			o := recOptions(t, v)["RTX 4090/on-demand"]
			if o == nil || o["budget"] != 4.90 || o["budget_with_margin"] != tt.want {
				t.Errorf("--rerun-margin %s: 4090 = %v, want budget 4.90 and %v with margin", tt.margin, o, tt.want)
			}
		})
	}
	if out := c.mustRun("recommend", "--vram", "24", "--hours", "10", "--rerun-margin", "0"); !strings.Contains(out, "WITH 0% MARGIN") {
		t.Errorf("human output lacks the 0%% margin:\n%s", out)
	}
}

// TestRecommendCommandSpot pins the spot extras, the thin-market mark and
// the headline: the interruptible 4090 (one listing) is budgeted at its
// spot total with the extras, marked thin, and not the headline.
func TestRecommendCommandSpot(t *testing.T) {
	c := recGuideIndex(t)
	args := []string{"recommend", "--vram", "20", "--hours", "10", "--resumable", "--spot-hours", "12", "--storage", "0.5", "--ops", "0.5"}
	v := recJSON(t, c, 0, append(args, "--json")...)
	opts := recOptions(t, v)
	o := opts["RTX 4090/interruptible"]
	if o == nil {
		t.Fatalf("no interruptible 4090:\n%s", c.stdout)
	}
	sp, _ := o["spot"].(map[string]any)
	spot, _ := sp["spot"].(map[string]any)
	if spot == nil {
		t.Fatalf("spot = %v, want the spot cost", o["spot"])
	}
	// 0.25 × 12 = 3.00 + 0.50 + 0.50; break-even (4.90 − 1.00) / 0.25.
	checks := []struct {
		name      string
		got, want any
	}{
		{"budget", o["budget"], 4.0},
		{"budget_with_margin", o["budget_with_margin"], 5.0},
		{"spot.total", spot["total"], 4.0},
		{"spot.storage", spot["storage"], 0.5},
		{"spot.ops", spot["ops"], 0.5},
		{"break_even_hours", sp["break_even_hours"], 15.6},
		{"thin", o["thin"], true},
		{"headline", o["headline"], false},
		{"3090 headline", opts["RTX 3090/on-demand"]["headline"], true},
		{"3090 thin", opts["RTX 3090/on-demand"]["thin"], false},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
	out := c.mustRun(args...)
	if !strings.Contains(out, " (1 listing)") {
		t.Errorf("human output lacks the thin mark \"(1 listing)\":\n%s", out)
	}

	// Without a spot model the interruptible option is said to assume no
	// interruptions, in the JSON and in the summary.
	v = recJSON(t, c, 0, "recommend", "--vram", "20", "--hours", "10", "--resumable", "--json")
	if o := recOptions(t, v)["RTX 4090/interruptible"]; o == nil || o["assumes_no_interruptions"] != true {
		t.Errorf("4090 interruptible = %v, want assumes_no_interruptions true", o)
	}
	if s, _ := v["summary"].(string); !strings.Contains(s, "interruptible budgets assume spot is never interrupted") {
		t.Errorf("summary %q: want the assumption said", s)
	}
}

// TestCostCommandNulls pins null figures: a run that never finishes has no
// spot hours, compute, total, savings or percentage; a zero on-demand total
// has no percentage (never NaN).
func TestCostCommandNulls(t *testing.T) {
	c := newCLI(t)
	v := recJSON(t, c, 0, "cost", "--on-demand", "1", "--spot", "0.4", "--hours", "10",
		"--interrupt-rate", "1", "--checkpoint-min", "1", "--restart-min", "30", "--checkpoint-interval-min", "60", "--json")
	sp := v["spot"].(map[string]any)
	for _, k := range []string{"hours", "compute", "total"} {
		if got, ok := sp[k]; !ok || got != nil {
			t.Errorf("spot.%s = %v (present %v), want null", k, got, ok)
		}
	}
	for _, k := range []string{"savings", "savings_pct"} {
		if got, ok := v[k]; !ok || got != nil {
			t.Errorf("%s = %v (present %v), want null", k, got, ok)
		}
	}
	if v["never_finishes"] != true {
		t.Errorf("never_finishes = %v, want true", v["never_finishes"])
	}

	v = recJSON(t, c, 0, "cost", "--on-demand", "0.000001", "--spot", "0.000001", "--hours", "0.1", "--json")
	if got, ok := v["savings_pct"]; !ok || got != nil {
		t.Errorf("savings_pct = %v, want null for a $0.00 on-demand total", got)
	}
	if n := fmt.Sprint(v["notes"]); !strings.Contains(n, "no savings percentage") {
		t.Errorf("notes = %v, want why there is no percentage", n)
	}
	if out := c.mustRun("cost", "--on-demand", "0.000001", "--spot", "0.000001", "--hours", "0.1"); strings.Contains(out, "NaN") {
		t.Errorf("human output shows NaN:\n%s", out)
	}
}

// TestRecommendCostHelp pins that -h says which ratio is a fraction and
// which a percentage.
func TestRecommendCostHelp(t *testing.T) {
	c := newCLI(t)
	for _, cmd := range []string{"cost", "recommend"} {
		out := c.mustRun(cmd, "-h")
		for _, want := range []string{"advertised_discount is a fraction", "savings_pct is a percentage", "--storage", "--rerun-margin"} {
			if cmd == "cost" && want == "--rerun-margin" {
				continue
			}
			if !strings.Contains(out, want) {
				t.Errorf("%s -h lacks %q:\n%s", cmd, want, out)
			}
		}
	}
}

// TestRecommendFlagSanity: a zero VRAM and spot flags on a job that is not
// resumable are usage errors, not silently ignored.
func TestRecommendFlagSanity(t *testing.T) {
	c := recGuideIndex(t)
	for _, args := range [][]string{
		{"recommend", "--vram", "0", "--hours", "10"},
		{"recommend", "--vram", "24", "--hours", "10", "--spot-hours", "12"},
		{"recommend", "--vram", "24", "--hours", "10", "--storage", "5"},
	} {
		if code := c.run(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, c.stderr)
		}
	}
}

// TestRecommendDiskCountsPricedListings: on the demo market (where Cherry
// Servers' EUR listings have no rate) the disk check counts the same
// listings each option is priced from.
func TestRecommendDiskCountsPricedListings(t *testing.T) {
	c := newCLI(t)
	c.mustRun("demo", "--db", c.db+".demo")
	c.db += ".demo"
	v := recJSON(t, c, 0, "recommend", "--vram", "24", "--hours", "10", "--dataset-gb", "50", "--json")
	priced := map[string]float64{}
	for _, o := range v["options"].([]any) {
		m := o.(map[string]any)
		if m["kind"] == "on-demand" {
			priced[m["gpu"].(string)] = m["listings"].(float64)
		}
	}
	st, _ := v["storage"].(map[string]any)
	if st == nil || len(priced) == 0 {
		t.Fatalf("no storage check or no options: %v", v)
	}
	for _, g := range st["gpus"].([]any) {
		m := g.(map[string]any)
		if n, ok := priced[m["gpu"].(string)]; ok && m["listings"].(float64) != n {
			t.Errorf("%s: the disk check counts %v listings, the option is priced from %v", m["gpu"], m["listings"], n)
		}
	}
}
