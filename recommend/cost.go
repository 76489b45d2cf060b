package recommend

import (
	"fmt"
	"math"

	"github.com/listings-dev/listings"
)

// CostInput is the question "spot or on-demand?" for one job (DESIGN §5
// rule 4). Rates are per GPU-hour; Storage, Transfer, Recovery and Ops are
// money (the extras a spot run costs on top of compute).
type CostInput struct {
	OnDemandRate listings.Price // per hour
	SpotRate     listings.Price // per hour
	Hours        float64        // useful (on-demand) hours W

	// SpotHours is the billable spot hours when the user knows them; 0 =
	// modelled from the fields below.
	SpotHours float64
	// InterruptRate is λ, interruptions per hour.
	InterruptRate float64
	// CheckpointMin and RestartMin are δ and ρ, minutes to write a
	// checkpoint and to get back to work after an interruption.
	CheckpointMin, RestartMin float64
	// CheckpointIntervalMin is τ in minutes; 0 = Young's √(2δ/λ).
	CheckpointIntervalMin float64

	Storage, Transfer, Recovery, Ops listings.Price
}

// OnDemandCost is the on-demand side of a CostResult.
type OnDemandCost struct {
	Rate    listings.Price `json:"rate"`
	Hours   float64        `json:"hours"`
	Compute listings.Price `json:"compute"`
	Total   listings.Price `json:"total"`
}

// SpotCost is the spot side of a CostResult: compute plus the extras.
type SpotCost struct {
	Rate     listings.Price `json:"rate"`
	Hours    float64        `json:"hours"` // billable hours
	Compute  listings.Price `json:"compute"`
	Storage  listings.Price `json:"storage"`
	Transfer listings.Price `json:"transfer"`
	Recovery listings.Price `json:"recovery"`
	Ops      listings.Price `json:"ops"`
	Total    listings.Price `json:"total"`
}

// Where the billable spot hours of a CostResult come from.
const (
	HoursGiven    = "given"
	HoursModelled = "modelled"
	HoursUseful   = "useful hours (no interruptions modelled)"
)

// CostResult compares the totals. AdvertisedDiscount is a fraction
// ((on-demand − spot) / on-demand, 0.6 for 60%); SavingsPct is a
// percentage of the on-demand total. BreakEvenHours is the most billable
// spot hours at which spot still costs no more than on-demand, (D − C) / R,
// never below zero. BreakEvenInterruptRate is the λ at which the modelled
// spot total equals the on-demand total; nil when spot never pays or no λ
// makes it stop paying. When the run never finishes (λ(ρ + τ/2) ≥ 1) the
// spot hours, compute, total and savings are zero and NeverFinishes is set.
type CostResult struct {
	OnDemand               OnDemandCost   `json:"on_demand"`
	Spot                   SpotCost       `json:"spot"`
	AdvertisedDiscount     float64        `json:"advertised_discount"`
	Savings                listings.Price `json:"savings"`
	SavingsPct             float64        `json:"savings_pct"`
	BreakEvenHours         float64        `json:"break_even_hours"`
	CheckpointIntervalMin  float64        `json:"checkpoint_interval_min"`
	BreakEvenInterruptRate *float64       `json:"break_even_interrupt_rate"`
	NeverFinishes          bool           `json:"never_finishes"`
	SpotHoursFrom          string         `json:"spot_hours_from"`
}

// money returns rate × hours rounded to the micro-unit.
func money(rate listings.Price, hours float64) listings.Price {
	return listings.Price(math.Round(float64(rate) * hours))
}

// spotModel is the billable-hours model of DESIGN §5 in hours: useful hours
// w, λ per hour, δ and ρ in hours, τ in hours (0 = Young).
type spotModel struct {
	w, delta, rho, tau float64
}

// hours returns H = W (1 + δ/τ) / (1 − λ (ρ + τ/2)), and false when the
// run never finishes. With Young's τ = √(2δ/λ) both δ/τ and λτ/2 equal
// √(δλ/2), which stays defined at λ = 0 and δ = 0.
func (m spotModel) hours(lambda float64) (float64, bool) {
	var over, loss float64
	if m.tau > 0 {
		over = m.delta / m.tau
		loss = lambda * (m.rho + m.tau/2)
	} else {
		s := math.Sqrt(m.delta * lambda / 2)
		over = s
		loss = lambda*m.rho + s
	}
	if loss >= 1 {
		return math.Inf(1), false
	}
	return m.w * (1 + over) / (1 - loss), true
}

// breakEvenLambda finds by bisection the λ at which rate × H(λ) + extras
// reaches the on-demand total d (all in micro-units); ok is false when spot
// never pays even without interruptions, or pays at any λ.
func (m spotModel) breakEvenLambda(rate, extras, d float64) (float64, bool) {
	costs := func(l float64) bool { // spot costs at least on-demand at λ = l
		h, ok := m.hours(l)
		return !ok || rate*h+extras >= d
	}
	if costs(0) {
		return 0, false
	}
	hi := 1.0
	for !costs(hi) {
		hi *= 2
		if hi > 1e9 {
			return 0, false
		}
	}
	lo := 0.0
	for range 200 {
		mid := (lo + hi) / 2
		if costs(mid) {
			hi = mid
		} else {
			lo = mid
		}
		if hi-lo <= 1e-12*hi {
			break
		}
	}
	return (lo + hi) / 2, true
}

func badNumber(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }

// Cost prices a job on-demand and on spot capacity (DESIGN §5 rule 4).
// The spot total is rate × billable hours + storage + transfer + recovery +
// ops. Billable hours are SpotHours when given; otherwise the model
// H = W (1 + δ/τ) / (1 − λ (ρ + τ/2)) with τ = CheckpointIntervalMin or
// Young's √(2δ/λ); with no interruption rate they are the useful hours.
// Where λ (ρ + τ/2) ≥ 1 the result says NeverFinishes rather than failing.
// Rates and hours must be positive; nothing may be negative.
func Cost(in CostInput) (CostResult, error) {
	switch {
	case in.OnDemandRate <= 0:
		return CostResult{}, fmt.Errorf("cost: on-demand rate %s must be positive", in.OnDemandRate.Decimal())
	case in.SpotRate <= 0:
		return CostResult{}, fmt.Errorf("cost: spot rate %s must be positive", in.SpotRate.Decimal())
	case badNumber(in.Hours) || in.Hours == 0:
		return CostResult{}, fmt.Errorf("cost: hours %v must be positive", in.Hours)
	case badNumber(in.SpotHours), badNumber(in.InterruptRate), badNumber(in.CheckpointMin),
		badNumber(in.RestartMin), badNumber(in.CheckpointIntervalMin):
		return CostResult{}, fmt.Errorf("cost: spot hours, interruption rate and minutes must be zero or positive numbers")
	case in.Storage < 0 || in.Transfer < 0 || in.Recovery < 0 || in.Ops < 0:
		return CostResult{}, fmt.Errorf("cost: storage, transfer, recovery and ops must not be negative")
	}
	var r CostResult
	d := money(in.OnDemandRate, in.Hours)
	r.OnDemand = OnDemandCost{Rate: in.OnDemandRate, Hours: in.Hours, Compute: d, Total: d}
	extras := in.Storage + in.Transfer + in.Recovery + in.Ops
	r.Spot = SpotCost{Rate: in.SpotRate, Storage: in.Storage, Transfer: in.Transfer, Recovery: in.Recovery, Ops: in.Ops}
	r.AdvertisedDiscount = float64(in.OnDemandRate-in.SpotRate) / float64(in.OnDemandRate)
	r.BreakEvenHours = math.Max(0, float64(d-extras)/float64(in.SpotRate))

	m := spotModel{w: in.Hours, delta: in.CheckpointMin / 60, rho: in.RestartMin / 60, tau: in.CheckpointIntervalMin / 60}
	switch {
	case in.CheckpointIntervalMin > 0:
		r.CheckpointIntervalMin = in.CheckpointIntervalMin
	case in.InterruptRate > 0 && in.CheckpointMin > 0:
		r.CheckpointIntervalMin = math.Sqrt(2*m.delta/in.InterruptRate) * 60
	}
	if l, ok := m.breakEvenLambda(float64(in.SpotRate), float64(extras), float64(d)); ok {
		r.BreakEvenInterruptRate = &l
	}

	var h float64
	switch {
	case in.SpotHours > 0:
		h, r.SpotHoursFrom = in.SpotHours, HoursGiven
	case in.InterruptRate > 0 || in.CheckpointIntervalMin > 0:
		var ok bool
		h, ok = m.hours(in.InterruptRate)
		r.SpotHoursFrom = HoursModelled
		if !ok {
			r.NeverFinishes = true
			return r, nil
		}
	default:
		h, r.SpotHoursFrom = in.Hours, HoursUseful
	}
	r.Spot.Hours = h
	r.Spot.Compute = money(in.SpotRate, h)
	r.Spot.Total = r.Spot.Compute + extras
	r.Savings = d - r.Spot.Total
	r.SavingsPct = 100 * float64(r.Savings) / float64(d)
	return r, nil
}
