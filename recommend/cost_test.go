package recommend

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/listings-dev/listings"
)

func usd(t testing.TB, s string) listings.Price {
	t.Helper()
	p, err := listings.ParsePrice(s)
	if err != nil {
		t.Fatalf("ParsePrice(%q): %v", s, err)
	}
	return p
}

// TestCostGuideExample pins the guide's worked example (issue 4):
// on-demand 1.00, spot 0.40, 100 h, 135 spot hours, storage 8, ops 12.
func TestCostGuideExample(t *testing.T) {
	got, err := Cost(CostInput{
		OnDemandRate: usd(t, "1.00"), SpotRate: usd(t, "0.40"), Hours: 100, SpotHours: 135,
		Storage: usd(t, "8"), Ops: usd(t, "12"),
	})
	if err != nil {
		t.Fatalf("Cost: %v", err)
	}
	if got.Spot.Compute == nil || got.Spot.Total == nil || got.Savings == nil || got.SavingsPct == nil || got.Spot.Hours == nil {
		t.Fatalf("spot %+v savings %v pct %v: want every figure set", got.Spot, got.Savings, got.SavingsPct)
	}
	prices := []struct {
		name      string
		got, want listings.Price
	}{
		{"on-demand compute", got.OnDemand.Compute, usd(t, "100")},
		{"on-demand total", got.OnDemand.Total, usd(t, "100")},
		{"spot compute", *got.Spot.Compute, usd(t, "54")},
		{"spot storage", got.Spot.Storage, usd(t, "8")},
		{"spot ops", got.Spot.Ops, usd(t, "12")},
		{"spot total", *got.Spot.Total, usd(t, "74")},
		{"savings", *got.Savings, usd(t, "26")},
	}
	for _, c := range prices {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", c.name, c.got.Decimal(), c.want.Decimal())
		}
	}
	floats := []struct {
		name      string
		got, want float64
	}{
		{"savings pct", *got.SavingsPct, 26},
		{"advertised discount", got.AdvertisedDiscount, 0.60},
		{"break-even hours", got.BreakEvenHours, 200},
		{"spot hours", *got.Spot.Hours, 135},
	}
	for _, c := range floats {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if got.SpotHoursFrom != HoursGiven {
		t.Errorf("spot hours from %q, want %q", got.SpotHoursFrom, HoursGiven)
	}
	if got.NeverFinishes {
		t.Errorf("NeverFinishes = true, want false")
	}
}

// TestCostModelled pins the modelled spot hours of issue 4: W = 100 h,
// λ = 0.05/h, δ = 6 min, ρ = 10 min → τ = 120 min, 111.50 billable hours.
func TestCostModelled(t *testing.T) {
	got, err := Cost(CostInput{
		OnDemandRate: usd(t, "1.00"), SpotRate: usd(t, "0.40"), Hours: 100,
		InterruptRate: 0.05, CheckpointMin: 6, RestartMin: 10,
	})
	if err != nil {
		t.Fatalf("Cost: %v", err)
	}
	if math.Abs(got.CheckpointIntervalMin-120) > 1e-9 {
		t.Errorf("checkpoint interval = %v min, want 120", got.CheckpointIntervalMin)
	}
	if got.Spot.Hours == nil || got.Spot.Compute == nil {
		t.Fatalf("spot = %+v, want hours and compute", got.Spot)
	}
	if r := math.Round(*got.Spot.Hours*100) / 100; r != 111.50 {
		t.Errorf("billable hours = %v (%.2f), want 111.50", *got.Spot.Hours, r)
	}
	if got.SpotHoursFrom != HoursModelled {
		t.Errorf("spot hours from %q, want %q", got.SpotHoursFrom, HoursModelled)
	}
	// 0.40 × 111.504… = 44.601770…
	if want := usd(t, "44.601770"); *got.Spot.Compute != want {
		t.Errorf("spot compute = %s, want %s", got.Spot.Compute.Decimal(), want.Decimal())
	}
}

// TestCostBreakEvenRate checks that at the reported break-even λ the
// modelled spot total equals the on-demand total, and that a λ above it
// makes spot cost more.
func TestCostBreakEvenRate(t *testing.T) {
	tests := []struct {
		name string
		in   CostInput
	}{
		{"young interval", CostInput{OnDemandRate: usd(t, "1.00"), SpotRate: usd(t, "0.40"), Hours: 100,
			InterruptRate: 0.05, CheckpointMin: 6, RestartMin: 10, Storage: usd(t, "8"), Ops: usd(t, "12")}},
		{"fixed interval", CostInput{OnDemandRate: usd(t, "3.06"), SpotRate: usd(t, "1.20"), Hours: 10,
			InterruptRate: 0.2, CheckpointMin: 3, RestartMin: 15, CheckpointIntervalMin: 30}},
		{"given hours", CostInput{OnDemandRate: usd(t, "1.00"), SpotRate: usd(t, "0.40"), Hours: 100,
			SpotHours: 135, CheckpointMin: 6, RestartMin: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Cost(tt.in)
			if err != nil {
				t.Fatalf("Cost: %v", err)
			}
			if got.BreakEvenInterruptRate == nil {
				t.Fatalf("break-even λ = nil, want a rate")
			}
			l := *got.BreakEvenInterruptRate
			at := tt.in
			at.SpotHours, at.InterruptRate = 0, l
			c, err := Cost(at)
			if err != nil {
				t.Fatalf("Cost at λ=%v: %v", l, err)
			}
			if c.Spot.Total == nil {
				t.Fatalf("at λ=%v the run never finishes", l)
			}
			if d := math.Abs(float64(*c.Spot.Total - c.OnDemand.Total)); d > 2 { // micro-units of rounding
				t.Errorf("at λ=%v spot total %s, on-demand %s: want equal", l, c.Spot.Total.Decimal(), c.OnDemand.Total.Decimal())
			}
			at.InterruptRate = l * 1.1
			if c, err = Cost(at); err != nil {
				t.Fatalf("Cost at 1.1 λ: %v", err)
			}
			if !c.NeverFinishes && *c.Savings >= 0 {
				t.Errorf("at λ=%v savings %s, want negative", at.InterruptRate, c.Savings.Decimal())
			}
		})
	}
}

func TestCostNoBreakEvenRate(t *testing.T) {
	// Spot costs more than on-demand even without interruptions.
	got, err := Cost(CostInput{OnDemandRate: usd(t, "1.00"), SpotRate: usd(t, "0.90"), Hours: 10, Ops: usd(t, "5")})
	if err != nil {
		t.Fatalf("Cost: %v", err)
	}
	if got.BreakEvenInterruptRate != nil {
		t.Errorf("break-even λ = %v, want nil", *got.BreakEvenInterruptRate)
	}
	if got.BreakEvenHours != 5.0/0.9 {
		t.Errorf("break-even hours = %v, want %v", got.BreakEvenHours, 5.0/0.9)
	}
	if got.Savings == nil || *got.Savings != usd(t, "-4") {
		t.Errorf("savings = %s, want -4.00", got.Savings.Decimal())
	}
	if got.SpotHoursFrom != HoursUseful {
		t.Errorf("spot hours from %q, want %q", got.SpotHoursFrom, HoursUseful)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if !strings.Contains(string(b), `"break_even_interrupt_rate":null`) {
		t.Errorf("json %s: want break_even_interrupt_rate null", b)
	}
}

func TestCostNeverFinishes(t *testing.T) {
	// λ(ρ + τ/2) = 1 × (0.5 + 0.5) = 1: every hour is lost to interruptions.
	got, err := Cost(CostInput{OnDemandRate: usd(t, "1.00"), SpotRate: usd(t, "0.40"), Hours: 10,
		InterruptRate: 1, CheckpointMin: 1, RestartMin: 30, CheckpointIntervalMin: 60})
	if err != nil {
		t.Fatalf("Cost: %v", err)
	}
	if !got.NeverFinishes {
		t.Fatalf("NeverFinishes = false, want true (hours %v)", got.Spot.Hours)
	}
	if got.Spot.Hours != nil || got.Spot.Compute != nil || got.Spot.Total != nil || got.Savings != nil || got.SavingsPct != nil {
		t.Errorf("spot %+v savings %v pct %v: want nil figures when the run never finishes", got.Spot, got.Savings, got.SavingsPct)
	}
	if got.OnDemand.Total != usd(t, "10") {
		t.Errorf("on-demand total = %s, want 10.00", got.OnDemand.Total.Decimal())
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	for _, want := range []string{`"hours":null`, `"compute":null`, `"total":null`, `"savings":null`, `"savings_pct":null`, `"never_finishes":true`, "never finishes"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("json %s\nwant it to contain %s", b, want)
		}
	}
}

// TestCostAmounts checks that rate × hours is bounded instead of wrapping
// round int64, and that a zero on-demand total gives no percentage rather
// than NaN.
func TestCostAmounts(t *testing.T) {
	tests := []struct {
		name string
		in   CostInput
		want string
	}{
		{"compute beyond 1e12", CostInput{OnDemandRate: usd(t, "999999999999"), SpotRate: usd(t, "1"), Hours: 10}, "amount too large"},
		{"spot compute beyond 1e12", CostInput{OnDemandRate: usd(t, "1"), SpotRate: usd(t, "999999999"), Hours: 1000, SpotHours: 1e6}, "amount too large"},
		{"extras beyond 1e12", CostInput{OnDemandRate: usd(t, "1"), SpotRate: usd(t, "1"), Hours: 1,
			Storage: usd(t, "999999999999"), Ops: usd(t, "999999999999")}, "amount too large"},
		{"hours 1e13", CostInput{OnDemandRate: usd(t, "1"), SpotRate: usd(t, "1"), Hours: 1e13}, "hours"},
		{"spot hours 1e13", CostInput{OnDemandRate: usd(t, "1"), SpotRate: usd(t, "1"), Hours: 1, SpotHours: 1e13}, "spot hours"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Cost(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Cost = %+v, %v; want an error about %q", got, err, tt.want)
			}
			if errors.Is(err, ErrAmountTooLarge) != (tt.want == "amount too large") {
				t.Errorf("errors.Is(%v, ErrAmountTooLarge) = %v", err, !(tt.want == "amount too large"))
			}
		})
	}

	// A micro-unit rate for a tenth of an hour rounds to a zero total.
	got, err := Cost(CostInput{OnDemandRate: 1, SpotRate: 1, Hours: 0.1})
	if err != nil {
		t.Fatalf("Cost: %v", err)
	}
	if got.SavingsPct != nil || len(got.Notes) == 0 || !strings.Contains(got.Notes[0], "no savings percentage") {
		t.Errorf("savings pct %v notes %q, want nil and a note", got.SavingsPct, got.Notes)
	}
	if _, err := json.Marshal(got); err != nil {
		t.Errorf("marshal: %v (a NaN slipped through)", err)
	}
}

func TestCostErrors(t *testing.T) {
	ok := CostInput{OnDemandRate: 1_000_000, SpotRate: 400_000, Hours: 10}
	tests := []struct {
		name string
		mod  func(*CostInput)
		want string
	}{
		{"no on-demand rate", func(c *CostInput) { c.OnDemandRate = 0 }, "on-demand rate"},
		{"negative spot rate", func(c *CostInput) { c.SpotRate = -1 }, "spot rate"},
		{"zero hours", func(c *CostInput) { c.Hours = 0 }, "hours"},
		{"nan hours", func(c *CostInput) { c.Hours = math.NaN() }, "hours"},
		{"negative interrupt rate", func(c *CostInput) { c.InterruptRate = -0.1 }, "interruption rate"},
		{"negative ops", func(c *CostInput) { c.Ops = -1 }, "ops"},
		{"inf hours", func(c *CostInput) { c.Hours = math.Inf(1) }, "hours"},
		{"nan spot hours", func(c *CostInput) { c.SpotHours = math.NaN() }, "spot hours"},
		{"nan checkpoint", func(c *CostInput) { c.CheckpointMin = math.NaN() }, "minutes"},
		{"spot hours below hours", func(c *CostInput) { c.SpotHours = 9 }, "fewer than the useful hours"},
		{"spot hours and a rate", func(c *CostInput) {
			c.SpotHours, c.InterruptRate, c.CheckpointMin, c.RestartMin = 12, 0.05, 6, 10
		}, "not both"},
		{"rate without minutes", func(c *CostInput) { c.InterruptRate = 0.05 }, "checkpoint write time and the restart time"},
		{"rate without restart", func(c *CostInput) { c.InterruptRate, c.CheckpointMin = 0.05, 6 }, "restart time"},
		{"rate without checkpoint", func(c *CostInput) { c.InterruptRate, c.RestartMin = 0.05, 10 }, "checkpoint write time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := ok
			tt.mod(&in)
			_, err := Cost(in)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "cost: ") {
				t.Errorf("Cost error = %v, want one about %q starting with \"cost: \"", err, tt.want)
			}
		})
	}
}

func BenchmarkCost(b *testing.B) {
	in := CostInput{OnDemandRate: 1_000_000, SpotRate: 400_000, Hours: 100,
		InterruptRate: 0.05, CheckpointMin: 6, RestartMin: 10, Storage: 8_000_000, Ops: 12_000_000}
	for b.Loop() {
		if _, err := Cost(in); err != nil {
			b.Fatal(err)
		}
	}
}
