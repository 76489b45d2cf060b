// Package recommend holds the rules of the rental guide (DESIGN §5) and the
// spot cost model as pure code: it takes a job and the statistics rows of a
// market snapshot and returns advice. It does no I/O, reads no clock (the
// snapshot's time is a parameter) and holds no price: every price comes in
// through the rows or the cost input.
//
// The rules, in order:
//
//   - VRAM first. The need comes from Job.VRAMGB or EstimateVRAM. A need of
//     at most 24 GB is the "24 GB" tier (named cards RTX 3090 and RTX 4090);
//     up to 80 GB the "80 GB" tier (H100 SXM, A100 80GB SXM, A100 80GB
//     PCIe); up to the largest single card of the catalog the "over 80 GB"
//     tier, whose named cards are every catalog card that holds the need;
//     beyond that "multi-GPU": the count of H100 SXM and of the largest
//     cards it would take, and a note that the interconnect must be planned
//     before a cluster is priced. No cluster is budgeted.
//   - Candidates are the catalog GPUs that hold the need on one card, are no
//     larger than the tier (24 GB for the 24 GB tier, 96 GB for the 80 GB
//     tier: a 24 GB job is not offered an H100), and are either named cards
//     of the tier or have a live price. Named cards always
//     appear: as options when priced live, else in Unpriced with the reason
//     ("no live price (last price 21 days old)", "no live price (never
//     listed)"). Unknown GPU names and rows in a currency other than USD are
//     not candidates.
//   - Then disk: the dataset plus the kept checkpoints are checked against
//     the disk of each candidate's present listings (Market.Disks).
//   - Then interconnect: each option names its card's link; multi-GPU
//     advice asks for an interconnect plan.
//   - Budget = the live median × Job.Hours, and the same × (1 + rerun
//     margin, 0 to 1). Never the floor: floor, durable floor and the
//     disappearing count ride along as information, the warning quoting
//     the prices that vanished (Market.Vanished).
//   - Interruptible options only for resumable jobs, each budgeted at its
//     spot total (median × billable hours + the job's extras) with its spot
//     Cost against the same card's on-demand median and its break-even
//     hours.
//   - The summary names the headline option: the cheapest budget that
//     neither assumes an uninterrupted spot run (no spot hours, no
//     interruption rate) nor comes from a thin market (fewer than
//     ThinListings listings), when such an option exists; the sentence says
//     why a cheaper one was passed over.
//   - Every amount is checked: beyond 1e12 units of currency is
//     ErrAmountTooLarge, never a wrapped int64.
//   - Image and video jobs are advice "job" (rent per job, stop the clock
//     when the files land); everything else is "server", with checkpoints
//     on storage that outlives the instance when training must resume.
package recommend

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/listings-dev/listings"
)

// Kinds of advice.
const (
	AdviceJob      = "job"
	AdviceServer   = "server"
	AdviceMultiGPU = "multi-gpu"
)

// Tier names.
const (
	Tier24     = "24 GB"
	Tier80     = "80 GB"
	TierOver80 = "over 80 GB"
	TierMulti  = "multi-GPU"
)

// Tier sizes in GB and the guide's named cards.
const (
	tier24 = 24
	tier80 = 80
	// tier80Ceiling is the largest card the 80 GB tier offers: the 94 GB
	// H100 NVL and the 96 GB RTX PRO 6000 belong to it, the 141 GB H200 does not.
	tier80Ceiling = 96
	// clusterCard is the datacenter card a multi-GPU answer counts in,
	// beside the largest card of the catalog.
	clusterCard = "H100 SXM"
)

var (
	named24 = []string{"RTX 3090", "RTX 4090"}
	named80 = []string{"H100 SXM", "A100 80GB SXM", "A100 80GB PCIe"}
)

// Market is what the recommender knows of the market at AsOf.
type Market struct {
	// AsOf is the snapshot's time: ages of last prices are measured from it.
	AsOf time.Time
	// Rows are the snapshot's statistics rows, every GPU, kinds on-demand
	// and interruptible (others are ignored), rows that are not live
	// included with their LastOKRun.
	Rows []listings.Row
	// Disks gives, per GPU, the disk_gb of its present listings (0 = the
	// listing does not say), for the storage check.
	Disks map[string][]float64
	// NewestRun is the newest ok run of any source at or before AsOf; zero
	// means the newest LastOKRun of the rows.
	NewestRun time.Time
	// Vanished gives, per VanishedKey(gpu, kind), the USD prices of the
	// row's disappearing floor listings in the window (the listings
	// Row.Disappearing counts), so a warning can quote what vanished
	// rather than the floor that is left.
	Vanished map[string][]listings.Price
}

// VanishedKey is the key of Market.Vanished: gpu + "\x00" + kind.
func VanishedKey(gpu string, kind listings.Kind) string { return gpu + "\x00" + string(kind) }

// ThinListings is the fewest listings an option is priced from before it
// counts as a thin market: fewer are marked Thin and not headlined while
// an option with at least this many exists.
const ThinListings = 3

// Option is one priced way to run the job: a card, a kind, a live price and
// its provenance, and the budget. Budget and BudgetMargin are money (not
// per hour): for on-demand the median × hours; for interruptible the spot
// total, median × billable hours + the job's extras; BudgetMargin is the
// same with the rerun margin (on the whole spot total). Thin marks a price
// from fewer than ThinListings listings; AssumesNoInterruptions an
// interruptible option billed its useful hours because the job gave
// neither spot hours nor an interruption rate; Headline the option the
// summary names.
type Option struct {
	GPU          string          `json:"gpu"`
	VRAMGB       int             `json:"vram_gb"`
	Interconnect string          `json:"interconnect"`
	Kind         listings.Kind   `json:"kind"`
	Price        listings.Price  `json:"price"` // the live median per GPU-hour
	Live         bool            `json:"live"`
	Listings     int             `json:"listings"`
	LastOKRun    time.Time       `json:"last_ok_run"`
	Sources      []string        `json:"sources"`
	Hours        float64         `json:"hours"` // hours budgeted (billable hours for interruptible)
	Budget       listings.Price  `json:"budget"`
	BudgetMargin listings.Price  `json:"budget_with_margin"`
	Floor        listings.Price  `json:"floor"`
	DurableFloor *listings.Price `json:"durable_floor"`
	Disappearing int             `json:"disappearing"`
	Thin         bool            `json:"thin"`
	Headline     bool            `json:"headline"`
	// AssumesNoInterruptions is set on interruptible options billed their
	// useful hours.
	AssumesNoInterruptions bool `json:"assumes_no_interruptions"`
	// Spot compares an interruptible option with the same card on demand;
	// nil for on-demand options or when the card has no live on-demand
	// price.
	Spot *CostResult `json:"spot,omitempty"`
}

// Unpriced is a named card of the tier without a live price.
type Unpriced struct {
	GPU       string    `json:"gpu"`
	VRAMGB    int       `json:"vram_gb"`
	Reason    string    `json:"reason"`
	LastOKRun time.Time `json:"last_ok_run,omitzero"`
}

// ClusterSize is how many cards of one model a multi-GPU job takes.
type ClusterSize struct {
	GPU    string `json:"gpu"`
	VRAMGB int    `json:"vram_gb"`
	GPUs   int    `json:"gpus"`
}

// Storage is the disk check: the dataset plus the kept checkpoints against
// the disk of each candidate's present listings.
type Storage struct {
	NeedGB float64   `json:"need_gb"`
	How    string    `json:"how"`
	GPUs   []DiskFit `json:"gpus"`
	Notes  []string  `json:"notes"`
}

// DiskFit counts one GPU's present listings by disk: those with at least
// the need, and those that do not say.
type DiskFit struct {
	GPU      string  `json:"gpu"`
	Listings int     `json:"listings"`
	Enough   int     `json:"enough"`
	Unknown  int     `json:"unknown"`
	MaxGB    float64 `json:"max_gb"`
}

// Advice is the answer: what to rent, the priced options (cheapest budget
// first), the named cards without a live price, the storage check and the
// notes. Summary says it in one sentence.
type Advice struct {
	Advice      string        `json:"advice"`
	Tier        string        `json:"tier"`
	Summary     string        `json:"summary"`
	Need        Estimate      `json:"need"`
	AsOf        time.Time     `json:"as_of"`
	Hours       float64       `json:"hours"`
	RerunMargin float64       `json:"rerun_margin"`
	Options     []Option      `json:"options"`
	Unpriced    []Unpriced    `json:"unpriced"`
	Cluster     []ClusterSize `json:"cluster,omitempty"`
	Storage     *Storage      `json:"storage"`
	Notes       []string      `json:"notes"`
}

// rowPair is a GPU's USD rows by kind.
type rowPair struct {
	od, spot *listings.Row
}

func live(r *listings.Row) bool { return r != nil && r.Live && r.Listings > 0 && r.Median > 0 }

// Recommend answers "which GPU do I rent for this job, and what will it
// cost" from the market's live prices only (see the package comment for
// the rules).
func Recommend(j Job, m Market) (Advice, error) {
	task, err := normTask(j.Task)
	if err != nil {
		return Advice{}, fmt.Errorf("recommend: %w", err)
	}
	switch {
	case m.AsOf.IsZero():
		return Advice{}, fmt.Errorf("recommend: the market has no as-of time")
	case badNumber(j.DatasetGB) || badNumber(j.CheckpointGB) || j.CheckpointsKept < 0:
		return Advice{}, fmt.Errorf("recommend: dataset, checkpoint sizes and checkpoints kept must be zero or positive numbers")
	case j.Extras.Storage < 0 || j.Extras.Transfer < 0 || j.Extras.Recovery < 0 || j.Extras.Ops < 0:
		return Advice{}, fmt.Errorf("recommend: storage, transfer, recovery and ops must not be negative")
	}
	if err := checkSpot(spotInput(j)); err != nil {
		return Advice{}, fmt.Errorf("recommend: %w", err)
	}
	if _, err := sum(j.Extras.Storage, j.Extras.Transfer, j.Extras.Recovery, j.Extras.Ops); err != nil {
		return Advice{}, fmt.Errorf("recommend: spot extras: %w", err)
	}
	margin := DefaultRerunMargin
	if j.RerunMargin != nil {
		margin = *j.RerunMargin
	}
	if err := checkMargin(margin); err != nil {
		return Advice{}, fmt.Errorf("recommend: %w", err)
	}
	need, err := EstimateVRAM(j)
	if err != nil {
		return Advice{}, fmt.Errorf("recommend: %w", err)
	}
	a := Advice{
		Advice: AdviceServer, Need: need, AsOf: m.AsOf, Hours: j.Hours, RerunMargin: margin,
		Options: []Option{}, Unpriced: []Unpriced{}, Notes: []string{},
	}
	if task == TaskImage || task == TaskVideo {
		a.Advice = AdviceJob
	}

	rows, foreign, anyLive, newest := indexRows(m)
	if !m.NewestRun.IsZero() {
		newest = m.NewestRun
	}
	cat := listings.Catalog()
	largest := cat[0]
	for _, g := range cat {
		if g.VRAMGB > largest.VRAMGB {
			largest = g
		}
	}

	var named []string
	ceiling := float64(largest.VRAMGB) // the largest card a candidate of the tier may have
	switch {
	case need.GB <= tier24:
		a.Tier, named, ceiling = Tier24, named24, tier24
	case need.GB <= tier80:
		a.Tier, named, ceiling = Tier80, named80, tier80Ceiling
	case need.GB <= float64(largest.VRAMGB):
		a.Tier = TierOver80
		for _, g := range cat {
			if float64(g.VRAMGB) >= need.GB {
				named = append(named, g.Name)
			}
		}
	default:
		a.Tier, a.Advice = TierMulti, AdviceMultiGPU
	}

	if a.Advice == AdviceMultiGPU {
		a.Cluster = clusterSizes(need.GB, largest)
		parts := make([]string, len(a.Cluster))
		for i, c := range a.Cluster {
			parts[i] = fmt.Sprintf("%d × %s (%d GB)", c.GPUs, c.GPU, c.VRAMGB)
		}
		a.Summary = fmt.Sprintf("No single GPU holds %s: plan a multi-GPU cluster (%s) and its interconnect before pricing it.",
			gbString(need.GB), strings.Join(parts, " or "))
		a.Notes = append(a.Notes,
			fmt.Sprintf("the job needs %s, more than the largest single card (%s, %d GB)", gbString(need.GB), largest.Name, largest.VRAMGB),
			"plan the interconnect (NVLink within a node, InfiniBand between nodes) before a cluster is priced: no cluster budget is given")
	}
	tier := map[string]bool{} // the cards the tier offers: candidates and the subject of notes
	if a.Advice != AdviceMultiGPU {
		tier = tierCards(cat, named, need.GB, ceiling)
		if err := candidates(&a, j, cat, tier, named, rows, foreign, margin); err != nil {
			return Advice{}, fmt.Errorf("recommend: %w", err)
		}
	}
	a.Storage = storageCheck(j, a, m.Disks)
	a.Notes = append(a.Notes, notes(j, task, a, tier, rows, foreign, m.Vanished, anyLive, newest, m.AsOf)...)
	if a.Summary == "" {
		a.Summary = summary(&a)
	}
	return a, nil
}

// tierCards returns the cards a job of need GB is offered: those that hold
// it on one card and are no larger than the tier's ceiling, and the named
// cards of the tier.
func tierCards(cat []listings.GPU, named []string, need, ceiling float64) map[string]bool {
	isNamed := map[string]bool{}
	for _, n := range named {
		isNamed[n] = true
	}
	out := map[string]bool{}
	for _, g := range cat {
		if float64(g.VRAMGB) >= need && (float64(g.VRAMGB) <= ceiling || isNamed[g.Name]) {
			out[g.Name] = true
		}
	}
	return out
}

// indexRows keeps the USD on-demand and interruptible rows of catalog
// GPUs by GPU, counts the live listings of other currencies by GPU, and
// reports whether any row is live and the newest LastOKRun.
func indexRows(m Market) (rows map[string]rowPair, foreign map[string]map[string]int, anyLive bool, newest time.Time) {
	rows = map[string]rowPair{}
	foreign = map[string]map[string]int{}
	for i := range m.Rows {
		r := &m.Rows[i]
		if r.Kind != listings.OnDemand && r.Kind != listings.Interruptible {
			continue
		}
		if r.LastOKRun.After(newest) {
			newest = r.LastOKRun
		}
		if live(r) {
			anyLive = true
		}
		if r.Currency != "" && r.Currency != listings.USD {
			if live(r) {
				if foreign[r.GPU] == nil {
					foreign[r.GPU] = map[string]int{}
				}
				foreign[r.GPU][r.Currency] += r.Listings
			}
			continue
		}
		p := rows[r.GPU]
		switch {
		case r.Kind == listings.OnDemand && p.od == nil:
			p.od = r
		case r.Kind == listings.Interruptible && p.spot == nil:
			p.spot = r
		}
		rows[r.GPU] = p
	}
	return rows, foreign, anyLive, newest
}

// clusterSizes counts the cards a job of need GB takes on the cluster card
// and on the largest card.
func clusterSizes(need float64, largest listings.GPU) []ClusterSize {
	var out []ClusterSize
	for _, name := range []string{clusterCard, largest.Name} {
		g, ok := listings.Lookup(name)
		if !ok || (len(out) > 0 && out[0].GPU == name) {
			continue
		}
		out = append(out, ClusterSize{GPU: g.Name, VRAMGB: g.VRAMGB, GPUs: int(math.Ceil(need / float64(g.VRAMGB)))})
	}
	return out
}

// candidates fills the options and the unpriced named cards: every card
// of the tier with a live price, and every named card.
func candidates(a *Advice, j Job, cat []listings.GPU, tier map[string]bool, named []string, rows map[string]rowPair, foreign map[string]map[string]int, margin float64) error {
	isNamed := map[string]bool{}
	for _, n := range named {
		isNamed[n] = true
	}
	for _, g := range cat {
		if !tier[g.Name] {
			continue
		}
		p := rows[g.Name]
		odLive, spLive := live(p.od), live(p.spot)
		if odLive {
			o, err := option(g, p.od, j.Hours, margin)
			if err != nil {
				return fmt.Errorf("%s on-demand budget: %w", g.Name, err)
			}
			a.Options = append(a.Options, o)
		}
		spotted := false
		if spLive && j.Resumable {
			var odRow *listings.Row
			if odLive {
				odRow = p.od
			}
			o, ok, err := spotOption(g, odRow, p.spot, j, margin)
			switch {
			case err != nil:
				return fmt.Errorf("%s interruptible budget: %w", g.Name, err)
			case ok:
				a.Options = append(a.Options, o)
				spotted = true
			default:
				a.Notes = append(a.Notes, fmt.Sprintf("%s interruptible: at %v interruptions per hour the run never finishes (λ(ρ + τ/2) ≥ 1): not an option", g.Name, j.InterruptRate))
			}
		}
		if !odLive && !spotted && isNamed[g.Name] {
			u := Unpriced{GPU: g.Name, VRAMGB: g.VRAMGB, Reason: unpricedReason(p.od, a.AsOf, foreign[g.Name])}
			if p.od != nil {
				u.LastOKRun = p.od.LastOKRun
			}
			if spLive && !j.Resumable {
				u.Reason += "; its interruptible offers need a resumable job"
			}
			a.Unpriced = append(a.Unpriced, u)
		}
	}
	pos := map[string]int{}
	for i, g := range cat {
		pos[g.Name] = i
	}
	sort.SliceStable(a.Options, func(x, y int) bool {
		ox, oy := a.Options[x], a.Options[y]
		if ox.Budget != oy.Budget {
			return ox.Budget < oy.Budget
		}
		if ox.GPU != oy.GPU {
			return pos[ox.GPU] < pos[oy.GPU]
		}
		return ox.Kind < oy.Kind
	})
	if h := headline(a.Options); h >= 0 {
		a.Options[h].Headline = true
	}
	return nil
}

// headline picks the option the summary names: the cheapest budget that
// neither assumes an uninterrupted spot run nor comes from a thin market,
// relaxing the thin rule, then the interruption rule, when nothing else is
// priced; -1 without options.
func headline(opts []Option) int {
	for _, ok := range []func(Option) bool{
		func(o Option) bool { return !o.AssumesNoInterruptions && !o.Thin },
		func(o Option) bool { return !o.AssumesNoInterruptions },
		func(o Option) bool { return !o.Thin },
		func(Option) bool { return true },
	} {
		for i, o := range opts {
			if ok(o) {
				return i
			}
		}
	}
	return -1
}

// spotOption builds an interruptible option budgeted at its spot total
// (rate × billable hours + the job's extras), with its spot cost against
// the on-demand row when that is live (od nil otherwise); false when the
// run never finishes.
func spotOption(g listings.GPU, od, sp *listings.Row, j Job, margin float64) (Option, bool, error) {
	o, err := option(g, sp, j.Hours, margin)
	if err != nil {
		return o, false, err
	}
	o.AssumesNoInterruptions = j.SpotHours == 0 && j.InterruptRate == 0
	in := spotInput(j)
	if od != nil {
		in.OnDemandRate, in.SpotRate = od.Median, sp.Median
		c, err := Cost(in)
		if err != nil {
			return o, false, err
		}
		o.Spot = &c
		if c.NeverFinishes {
			return o, false, nil
		}
		return o, true, setSpotBudget(&o, *c.Spot.Hours, *c.Spot.Total, margin)
	}
	h, _, ok := billableHours(in)
	if !ok {
		return o, false, nil
	}
	compute, err := money(sp.Median, h)
	if err != nil {
		return o, false, err
	}
	total, err := sum(compute, in.Storage, in.Transfer, in.Recovery, in.Ops)
	if err != nil {
		return o, false, err
	}
	return o, true, setSpotBudget(&o, h, total, margin)
}

// setSpotBudget budgets an interruptible option at its spot total.
func setSpotBudget(o *Option, hours float64, total listings.Price, margin float64) error {
	m, err := money(total, 1+margin)
	if err != nil {
		return err
	}
	o.Hours, o.Budget, o.BudgetMargin = hours, total, m
	return nil
}

// spotInput carries the job's spot model and extras into a CostInput.
func spotInput(j Job) CostInput {
	return CostInput{
		Hours: j.Hours, SpotHours: j.SpotHours, InterruptRate: j.InterruptRate,
		CheckpointMin: j.CheckpointMin, RestartMin: j.RestartMin, CheckpointIntervalMin: j.CheckpointIntervalMin,
		Storage: j.Extras.Storage, Transfer: j.Extras.Transfer, Recovery: j.Extras.Recovery, Ops: j.Extras.Ops,
	}
}

// option builds an option from a live row, budgeted at the row's median.
func option(g listings.GPU, r *listings.Row, hours, margin float64) (Option, error) {
	o := Option{
		GPU: g.Name, VRAMGB: g.VRAMGB, Interconnect: g.Link, Kind: r.Kind, Price: r.Median,
		Live: true, Listings: r.Listings, LastOKRun: r.LastOKRun, Sources: []string{},
		Floor: r.Floor, DurableFloor: r.DurableFloor, Disappearing: r.Disappearing,
		Thin: r.Listings < ThinListings,
	}
	for _, s := range r.Sources {
		o.Sources = append(o.Sources, s.Source)
	}
	sort.Strings(o.Sources)
	return o, setBudget(&o, hours, margin)
}

// setBudget sets the budget of o for hours at its price, with and without
// the margin.
func setBudget(o *Option, hours, margin float64) error {
	b, err := money(o.Price, hours)
	if err != nil {
		return err
	}
	m, err := money(o.Price, hours*(1+margin))
	if err != nil {
		return err
	}
	o.Hours, o.Budget, o.BudgetMargin = hours, b, m
	return nil
}

// unpricedReason says why a named card has no price: never listed, the
// age of its last USD price, or live listings only in currencies without
// an fx rate.
func unpricedReason(r *listings.Row, asOf time.Time, foreign map[string]int) string {
	var cs []string
	for c := range foreign {
		cs = append(cs, c)
	}
	sort.Strings(cs)
	in := strings.Join(cs, " and ")
	switch {
	case (r == nil || r.LastOKRun.IsZero()) && len(cs) > 0:
		return "listed only in " + in + ", no fx rate configured"
	case r == nil || r.LastOKRun.IsZero():
		return "no live price (never listed)"
	case len(cs) > 0:
		return "no live price (last USD price " + Age(asOf.Sub(r.LastOKRun)) + " old); listed in " + in + ", no fx rate configured"
	}
	return "no live price (last price " + Age(asOf.Sub(r.LastOKRun)) + " old)"
}

// Age says a duration the way a user reads an age: "21 days", "30 hours",
// "15 minutes". Days from two days up, hours from two hours up; rounded
// down.
func Age(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
	case d >= 2*time.Hour:
		return fmt.Sprintf("%d hours", int(d/time.Hour))
	case d >= 2*time.Minute:
		return fmt.Sprintf("%d minutes", int(d/time.Minute))
	case d < 0:
		return "0 minutes"
	}
	return fmt.Sprintf("%d seconds", int(d/time.Second))
}

// storageCheck checks the dataset plus the kept checkpoints against the
// disk of the options' and unpriced cards' present listings; nil when the
// job gave no sizes.
func storageCheck(j Job, a Advice, disks map[string][]float64) *Storage {
	if j.DatasetGB == 0 && j.CheckpointGB == 0 {
		return nil
	}
	kept := j.CheckpointsKept
	if kept == 0 {
		kept = DefaultCheckpointsKept
	}
	s := &Storage{NeedGB: j.DatasetGB + j.CheckpointGB*float64(kept), GPUs: []DiskFit{}, Notes: []string{}}
	s.How = fmt.Sprintf("dataset %s + %d checkpoints × %s = %s", gbString(j.DatasetGB), kept, gbString(j.CheckpointGB), gbString(s.NeedGB))
	seen := map[string]bool{}
	var gpus []string
	for _, o := range a.Options {
		if !seen[o.GPU] {
			seen[o.GPU] = true
			gpus = append(gpus, o.GPU)
		}
	}
	for _, u := range a.Unpriced {
		if !seen[u.GPU] {
			seen[u.GPU] = true
			gpus = append(gpus, u.GPU)
		}
	}
	for _, g := range gpus {
		f := DiskFit{GPU: g}
		for _, d := range disks[g] {
			f.Listings++
			switch {
			case d <= 0:
				f.Unknown++
			case d >= s.NeedGB:
				f.Enough++
			}
			f.MaxGB = math.Max(f.MaxGB, d)
		}
		s.GPUs = append(s.GPUs, f)
		if f.Listings > 0 && f.Enough == 0 {
			msg := fmt.Sprintf("no %s listing says it has %s of disk", g, gbString(s.NeedGB))
			if f.MaxGB > 0 {
				msg += fmt.Sprintf(" (largest %s): add a volume", gbString(f.MaxGB))
			}
			s.Notes = append(s.Notes, msg)
		}
	}
	switch {
	case a.Advice == AdviceJob:
		s.Notes = append(s.Notes, "storage may be ephemeral: copy the files out before you stop the instance")
	case j.Resumable && training(mustTask(j.Task)):
		s.Notes = append(s.Notes, "write checkpoints to storage that outlives the instance (a network volume or object store): local disk goes with it")
	}
	return s
}

func mustTask(t string) string {
	n, _ := normTask(t)
	return n
}

// notes are the advice's remarks, in the order a reader needs them. tier
// holds the cards the tier offers: notes speak of no other card.
func notes(j Job, task string, a Advice, tier map[string]bool, rows map[string]rowPair, foreign map[string]map[string]int,
	vanished map[string][]listings.Price, anyLive bool, newest, asOf time.Time) []string {
	var out []string
	switch {
	case !anyLive && newest.IsZero():
		out = append(out, "no live prices: the index has no ok run with listings — run `listings collect`")
	case !anyLive:
		out = append(out, "no live prices: the newest run is "+Age(asOf.Sub(newest))+" old — run `listings collect`")
	case len(a.Options) == 0 && a.Advice != AdviceMultiGPU:
		out = append(out, "no card of the "+a.Tier+" tier has a live price: collect again or add sources")
	}
	switch {
	case a.Advice == AdviceJob:
		out = append(out, "rent per job and stop the clock when the files land; storage may be ephemeral")
	case a.Advice == AdviceServer && j.Resumable && training(task):
		out = append(out, "a server for a run that must resume: checkpoints go to storage that outlives the instance")
	}
	if len(a.Options) > 0 {
		out = append(out, "budgets use the live median × hours, never the floor; the floor and durable floor are information only")
	}
	for _, o := range a.Options {
		if o.Disappearing > 0 {
			out = append(out, disappearingNote(o, vanished[VanishedKey(o.GPU, o.Kind)]))
		}
	}
	out = append(out, thinNotes(a.Options)...)
	if !j.Resumable && a.Advice != AdviceMultiGPU {
		n := 0
		for g, p := range rows {
			if live(p.spot) && tier[g] {
				n++
			}
		}
		if n > 0 {
			out = append(out, "interruptible offers are left out: the job is not resumable (no checkpoints)")
		}
	}
	if j.Resumable {
		for _, o := range a.Options {
			if o.AssumesNoInterruptions {
				out = append(out, "interruptible budgets assume no interruptions (give spot hours or an interruption rate to model them), so none is the headline; an option's break-even hours are the most billable hours at which spot still beats on-demand")
				break
			}
		}
	}
	var fgpus []string
	for g := range foreign {
		if tier[g] {
			fgpus = append(fgpus, g)
		}
	}
	listings.SortGPUNames(fgpus)
	for _, g := range fgpus {
		var cs []string
		for c, n := range foreign[g] {
			cs = append(cs, fmt.Sprintf("%d %s", n, c))
		}
		sort.Strings(cs)
		out = append(out, fmt.Sprintf("%s: %s listing(s) without an exchange rate are not used", g, strings.Join(cs, ", ")))
	}
	if a.Storage != nil {
		out = append(out, a.Storage.Notes...)
	}
	if (task == TaskImage || task == TaskVideo) && j.VRAMGB == 0 && j.Params == 0 {
		out = append(out, a.Need.How)
	}
	return out
}

// disappearingNote warns of an option's disappearing floor listings,
// quoting the prices that vanished (when the market carries them).
func disappearingNote(o Option, prices []listings.Price) string {
	what := "1 floor listing"
	if o.Disappearing != 1 {
		what = fmt.Sprintf("%d floor listings", o.Disappearing)
	}
	at := ""
	if len(prices) > 0 {
		ps := append([]listings.Price(nil), prices...)
		sort.Slice(ps, func(x, y int) bool { return ps[x] < ps[y] })
		var words []string
		for i, p := range ps {
			if i == 0 || p != ps[i-1] {
				words = append(words, "$"+p.Decimal())
			}
		}
		at = " (at " + strings.Join(words, ", ") + ")"
	}
	return fmt.Sprintf("%s %s: %s disappeared within a day in the last 7 days%s: budget at the median", o.GPU, o.Kind, what, at)
}

// thinNotes say which options are priced from too few listings to trust.
func thinNotes(opts []Option) []string {
	var headline *Option
	for i := range opts {
		if opts[i].Headline {
			headline = &opts[i]
		}
	}
	var out []string
	for _, o := range opts {
		// Only a thin option that would otherwise lead the answer needs
		// saying: one that budgets more than the headline is no temptation.
		if !o.Thin || (!o.Headline && headline != nil && o.Budget >= headline.Budget) {
			continue
		}
		msg := fmt.Sprintf("%s %s is priced from %s, a thin market", o.GPU, o.Kind, listingsWord(o.Listings))
		if o.Headline {
			msg += ": it is the headline only because nothing better supported is priced"
		} else {
			msg += fmt.Sprintf(": not the headline while an option priced from at least %d listings exists", ThinListings)
		}
		out = append(out, msg)
	}
	return out
}

// verb picks the singular or plural form for n subjects.
func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// listingsWord says "1 listing" or "2 listings".
func listingsWord(n int) string {
	if n == 1 {
		return "1 listing"
	}
	return fmt.Sprintf("%d listings", n)
}

// summary is the advice in one sentence, naming the headline option and
// saying why a cheaper option is not the headline.
func summary(a *Advice) string {
	what := "a server on the " + a.Tier + " tier"
	if a.Advice == AdviceJob {
		what = "a card of the " + a.Tier + " tier per job"
	}
	h := -1
	for i, o := range a.Options {
		if o.Headline {
			h = i
			break
		}
	}
	if h < 0 {
		return fmt.Sprintf("For %s per card, rent %s, but no live price can budget it.", gbString(a.Need.GB), what)
	}
	o := a.Options[h]
	kind := ""
	if o.Kind == listings.Interruptible {
		kind = " interruptible"
	}
	s := fmt.Sprintf("For %s per card, rent %s: the%s %s at $%s/GPU-hr budgets $%s for %s h ($%s with a %d%% rerun margin)",
		gbString(a.Need.GB), what, kind, o.GPU, o.Price.Round(4).Decimal(), o.Budget.Round(4).Decimal(), trimNum(o.Hours, 2),
		o.BudgetMargin.Round(4).Decimal(), pct(a.RerunMargin))
	switch {
	case o.AssumesNoInterruptions:
		s += ", assuming it is never interrupted"
	case o.Thin:
		s += ", priced from only " + listingsWord(o.Listings)
	}
	var unmodelled, thin []string
	for _, c := range a.Options[:h] {
		what := fmt.Sprintf("the %s %s ($%s)", c.GPU, c.Kind, c.Budget.Round(4).Decimal())
		if c.AssumesNoInterruptions {
			unmodelled = append(unmodelled, what)
		} else if c.Thin {
			thin = append(thin, what+" from "+listingsWord(c.Listings))
		}
	}
	if len(unmodelled) > 0 {
		s += "; " + strings.Join(unmodelled, " and ") + verb(len(unmodelled), " budgets", " budget") + " less only if spot is never interrupted"
	} else if !o.AssumesNoInterruptions {
		for _, c := range a.Options {
			if c.AssumesNoInterruptions {
				s += "; interruptible budgets assume spot is never interrupted"
				break
			}
		}
	}
	if len(thin) > 0 {
		s += "; " + strings.Join(thin, " and ") + verb(len(thin), " budgets less but is", " budget less but are") + " too thin a market to headline"
	}
	if a.Advice == AdviceJob {
		s += "; stop the clock when the files land"
	}
	return s + "."
}
