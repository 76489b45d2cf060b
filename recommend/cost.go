package recommend

import (
	"errors"
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
// Hours, Compute and Total are nil (JSON null) when the run never
// finishes.
type SpotCost struct {
	Rate     listings.Price  `json:"rate"`
	Hours    *float64        `json:"hours"` // billable hours
	Compute  *listings.Price `json:"compute"`
	Storage  listings.Price  `json:"storage"`
	Transfer listings.Price  `json:"transfer"`
	Recovery listings.Price  `json:"recovery"`
	Ops      listings.Price  `json:"ops"`
	Total    *listings.Price `json:"total"`
}

// Where the billable spot hours of a CostResult come from.
const (
	HoursGiven    = "given"
	HoursModelled = "modelled"
	HoursUseful   = "useful hours, no interruptions modelled"
)

// Bounds of the arithmetic. They are not prices: they keep rate × hours
// well inside int64 micro-units and reject hours no job has.
const (
	// MaxHours is the most hours a job may give (about 114 years).
	MaxHours = 1e6
	// maxAmount is the largest amount of money, in micro-units, any total
	// or budget may reach: 1e12 units of currency, far below the int64
	// limit of about 9.2e12 × 1e6, so sums of a few amounts cannot wrap.
	maxAmount = 1e12 * listings.Micro
)

// ErrAmountTooLarge is returned (wrapped) when a total or budget would
// pass 1e12 units of currency.
var ErrAmountTooLarge = errors.New("amount too large")

// CostResult compares the totals. AdvertisedDiscount is a fraction
// ((on-demand − spot) / on-demand: 0.6 means 60%); SavingsPct is a
// percentage of the on-demand total (26 means 26%). BreakEvenHours is the
// most billable spot hours at which spot still costs no more than
// on-demand, (D − C) / R, never below zero; it does not depend on the
// interruption model. BreakEvenInterruptRate is the λ at which the
// modelled spot total equals the on-demand total; nil when spot never
// pays or no λ makes it stop paying. When the run never finishes
// (λ(ρ + τ/2) ≥ 1) NeverFinishes is set and the spot hours, compute and
// total, Savings and SavingsPct are nil. SavingsPct is also nil when the
// on-demand total rounds to zero (a note says so).
type CostResult struct {
	OnDemand               OnDemandCost    `json:"on_demand"`
	Spot                   SpotCost        `json:"spot"`
	AdvertisedDiscount     float64         `json:"advertised_discount"`
	Savings                *listings.Price `json:"savings"`
	SavingsPct             *float64        `json:"savings_pct"`
	BreakEvenHours         float64         `json:"break_even_hours"`
	CheckpointIntervalMin  float64         `json:"checkpoint_interval_min"`
	BreakEvenInterruptRate *float64        `json:"break_even_interrupt_rate"`
	NeverFinishes          bool            `json:"never_finishes"`
	SpotHoursFrom          string          `json:"spot_hours_from"`
	Notes                  []string        `json:"notes"`
}

// money returns rate × hours rounded to the micro-unit, or
// ErrAmountTooLarge beyond 1e12 units of currency.
func money(rate listings.Price, hours float64) (listings.Price, error) {
	v := math.Round(float64(rate) * hours)
	if math.IsNaN(v) || math.Abs(v) > maxAmount {
		return 0, fmt.Errorf("%w: %s × %v is more than %s", ErrAmountTooLarge, rate.Decimal(), hours, listings.Price(maxAmount).Decimal())
	}
	return listings.Price(v), nil
}

// sum adds amounts, each no larger than maxAmount in size, and checks the
// total against the same bound.
func sum(ps ...listings.Price) (listings.Price, error) {
	var t listings.Price
	for _, p := range ps {
		if p > maxAmount || p < -maxAmount {
			return 0, fmt.Errorf("%w: %s is more than %s", ErrAmountTooLarge, p.Decimal(), listings.Price(maxAmount).Decimal())
		}
		t += p
	}
	if t > maxAmount || t < -maxAmount {
		return 0, fmt.Errorf("%w: %s is more than %s", ErrAmountTooLarge, t.Decimal(), listings.Price(maxAmount).Decimal())
	}
	return t, nil
}

func ptr[T any](v T) *T { return &v }

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

// checkHours checks useful hours: a positive number no larger than
// MaxHours.
func checkHours(name string, h float64) error {
	switch {
	case badNumber(h) || h == 0:
		return fmt.Errorf("%s %v must be a positive number", name, h)
	case h > MaxHours:
		return fmt.Errorf("%s %v: more than %v hours is no job (and no amount of money the index can hold)", name, h, float64(MaxHours))
	}
	return nil
}

// checkSpot checks a spot question (the fields of CostInput without the
// rates and extras): numbers that are not negative, billable hours no
// fewer than the useful ones, and one billable-hours model at a time.
func checkSpot(in CostInput) error {
	if err := checkHours("hours", in.Hours); err != nil {
		return err
	}
	switch {
	case badNumber(in.SpotHours), badNumber(in.InterruptRate), badNumber(in.CheckpointMin),
		badNumber(in.RestartMin), badNumber(in.CheckpointIntervalMin):
		return errors.New("spot hours, interruption rate and minutes must be zero or positive numbers")
	case in.SpotHours > MaxHours:
		return fmt.Errorf("spot hours %v: more than %v hours is no job", in.SpotHours, float64(MaxHours))
	case in.SpotHours > 0 && in.SpotHours < in.Hours:
		return fmt.Errorf("spot hours %v are fewer than the useful hours %v: billable hours cannot be fewer than useful ones", in.SpotHours, in.Hours)
	case in.SpotHours > 0 && in.InterruptRate > 0:
		return errors.New("give billable spot hours or an interruption rate to model them, not both")
	case in.InterruptRate > 0 && (in.CheckpointMin == 0 || in.RestartMin == 0):
		return errors.New("an interruption rate needs the checkpoint write time and the restart time (minutes, both positive) to model billable hours")
	}
	return nil
}

// billableHours returns the billable spot hours of in and where they come
// from; ok is false when the run never finishes.
func billableHours(in CostInput) (h float64, from string, ok bool) {
	switch {
	case in.SpotHours > 0:
		return in.SpotHours, HoursGiven, true
	case in.InterruptRate > 0 || in.CheckpointIntervalMin > 0:
		m := spotModel{w: in.Hours, delta: in.CheckpointMin / 60, rho: in.RestartMin / 60, tau: in.CheckpointIntervalMin / 60}
		h, ok = m.hours(in.InterruptRate)
		return h, HoursModelled, ok
	}
	return in.Hours, HoursUseful, true
}

// Cost prices a job on-demand and on spot capacity (DESIGN §5 rule 4).
// The spot total is rate × billable hours + storage + transfer + recovery +
// ops. Billable hours are SpotHours when given; otherwise the model
// H = W (1 + δ/τ) / (1 − λ (ρ + τ/2)) with τ = CheckpointIntervalMin or
// Young's √(2δ/λ); with no interruption rate they are the useful hours.
// Where λ (ρ + τ/2) ≥ 1 the result says NeverFinishes rather than failing.
// Rates and hours must be positive and nothing negative, NaN or infinite;
// spot hours may not be fewer than the useful hours nor come with an
// interruption rate, which needs the checkpoint and restart minutes. A
// total beyond 1e12 is ErrAmountTooLarge.
func Cost(in CostInput) (CostResult, error) {
	switch {
	case in.OnDemandRate <= 0:
		return CostResult{}, fmt.Errorf("cost: on-demand rate %s must be positive", in.OnDemandRate.Decimal())
	case in.SpotRate <= 0:
		return CostResult{}, fmt.Errorf("cost: spot rate %s must be positive", in.SpotRate.Decimal())
	case in.Storage < 0 || in.Transfer < 0 || in.Recovery < 0 || in.Ops < 0:
		return CostResult{}, fmt.Errorf("cost: storage, transfer, recovery and ops must not be negative")
	}
	if err := checkSpot(in); err != nil {
		return CostResult{}, fmt.Errorf("cost: %w", err)
	}
	r := CostResult{Notes: []string{}}
	d, err := money(in.OnDemandRate, in.Hours)
	if err != nil {
		return CostResult{}, fmt.Errorf("cost: on-demand total: %w", err)
	}
	r.OnDemand = OnDemandCost{Rate: in.OnDemandRate, Hours: in.Hours, Compute: d, Total: d}
	extras, err := sum(in.Storage, in.Transfer, in.Recovery, in.Ops)
	if err != nil {
		return CostResult{}, fmt.Errorf("cost: spot extras: %w", err)
	}
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

	h, from, ok := billableHours(in)
	r.SpotHoursFrom = from
	if !ok {
		r.NeverFinishes = true
		r.Notes = append(r.Notes, fmt.Sprintf("at %v interruptions per hour the run never finishes (λ(ρ + τ/2) ≥ 1): no spot total", in.InterruptRate))
		return r, nil
	}
	compute, err := money(in.SpotRate, h)
	if err != nil {
		return CostResult{}, fmt.Errorf("cost: spot compute: %w", err)
	}
	total, err := sum(compute, extras)
	if err != nil {
		return CostResult{}, fmt.Errorf("cost: spot total: %w", err)
	}
	r.Spot.Hours, r.Spot.Compute, r.Spot.Total = &h, &compute, &total
	r.Savings = ptr(d - total)
	if d > 0 {
		r.SavingsPct = ptr(100 * float64(d-total) / float64(d))
	} else {
		r.Notes = append(r.Notes, "the on-demand total rounds to $0.00: no savings percentage")
	}
	return r, nil
}
