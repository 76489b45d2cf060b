package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/listings-dev/listings"
	"github.com/listings-dev/listings/recommend"
	"github.com/listings-dev/listings/stats"
)

func init() {
	register("recommend", cmdRecommend)
	register("cost", cmdCost)
	demoExtras = append(demoExtras, struct {
		title string
		run   func(ctx context.Context, a *app) error
	}{
		"a recommendation: listings recommend --task finetune --params 7B --method qlora --hours 10",
		func(ctx context.Context, a *app) error {
			return cmdRecommend(ctx, a, []string{"--task", "finetune", "--params", "7B", "--method", "qlora", "--hours", "10"})
		},
	})
}

// spotFlags are the spot-model flags recommend and cost share.
type spotFlags struct {
	spotHours, interruptRate, checkpointMin, restartMin, intervalMin *float64
}

func addSpotFlags(fs interface {
	Float64(string, float64, string) *float64
}) spotFlags {
	return spotFlags{
		spotHours:     fs.Float64("spot-hours", 0, "billable spot hours, when known (else modelled)"),
		interruptRate: fs.Float64("interrupt-rate", 0, "interruptions per hour (λ) for the spot model"),
		checkpointMin: fs.Float64("checkpoint-min", 0, "minutes to write a checkpoint (δ)"),
		restartMin:    fs.Float64("restart-min", 0, "minutes to resume after an interruption (ρ)"),
		intervalMin:   fs.Float64("checkpoint-interval-min", 0, "minutes between checkpoints (τ); default Young's √(2δ/λ)"),
	}
}

// extraNames are the spot extras flags, in the order of recommend.Extras.
var extraNames = []string{"storage", "transfer", "recovery", "ops"}

// addExtraFlags registers --storage --transfer --recovery --ops (USD,
// money not per hour) and returns a reader of their values.
func addExtraFlags(cmd string, fs interface {
	String(string, string, string) *string
}) func() (recommend.Extras, error) {
	var vals [4]*string
	for i, name := range extraNames {
		vals[i] = fs.String(name, "0", name+" cost of a spot run, USD (money, not per hour)")
	}
	return func() (recommend.Extras, error) {
		var e recommend.Extras
		for i, dst := range []*listings.Price{&e.Storage, &e.Transfer, &e.Recovery, &e.Ops} {
			p, err := listings.ParsePrice(*vals[i])
			if err != nil {
				return e, usageErrorf("%s: --%s: %v", cmd, extraNames[i], err)
			}
			if p < 0 {
				return e, usageErrorf("%s: --%s %s must not be negative", cmd, extraNames[i], *vals[i])
			}
			*dst = p
		}
		return e, nil
	}
}

// fieldsHelp tells what the JSON's ratios mean; printed after the flags
// of recommend and cost.
const fieldsHelp = `
JSON ratios: advertised_discount is a fraction ((on-demand − spot) / on-demand;
0.6 means 60%); savings_pct is a percentage of the on-demand total (26 means
26%). Spot hours, compute, total, savings and savings_pct are null when the run
never finishes (λ(ρ + τ/2) ≥ 1); savings_pct is also null when the on-demand
total rounds to $0.00.
`

// withFieldsHelp appends fieldsHelp to a flag set's -h.
func withFieldsHelp(a *app, fs *flag.FlagSet, extra string) {
	prev := fs.Usage
	fs.Usage = func() {
		prev()
		fmt.Fprint(a.stdout, extra+fieldsHelp)
	}
}

// market reads the whole on-demand and interruptible market at asOf for
// the recommender: its rows, the disks of present listings, the newest ok
// run and the USD prices of the disappearing floor listings of each row.
func (a *app) recommendMarket(asOf time.Time, gpus []string) (recommend.Market, error) {
	snap, rows, err := a.market(asOf, gpus, []listings.Kind{listings.OnDemand, listings.Interruptible}, 0)
	if err != nil {
		return recommend.Market{}, err
	}
	m := recommend.Market{AsOf: asOf, Rows: rows, Disks: map[string][]float64{}, Vanished: map[string][]listings.Price{}}
	for _, f := range stats.Flags(snap, a.statsParams(0), false) {
		if f.Status == stats.Disappeared && (f.Currency == listings.USD || f.Currency == "") {
			k := recommend.VanishedKey(f.GPU, f.Kind)
			m.Vanished[k] = append(m.Vanished[k], f.Price)
		}
	}
	for _, p := range snap.Present {
		if p.Kind != listings.OnDemand {
			continue
		}
		// The disk check counts the listings the options are priced from:
		// USD, or a currency the config gives a rate for.
		if _, ok := stats.Convert(p.Price, p.Currency, snap.Runs[p.Source].FX); !ok {
			continue
		}
		m.Disks[p.GPU] = append(m.Disks[p.GPU], p.DiskGB)
	}
	for _, r := range snap.Runs {
		if r.Started.After(m.NewestRun) {
			m.NewestRun = r.Started
		}
	}
	for _, r := range snap.Stale {
		if r.Started.After(m.NewestRun) {
			m.NewestRun = r.Started
		}
	}
	return m, nil
}

func cmdRecommend(ctx context.Context, a *app, args []string) error {
	fs := a.flagSet("recommend", "--vram GB | --params 7B [--precision P] [--method M] --hours H [--task T] [--resumable [--spot-hours H | --interrupt-rate L --checkpoint-min M --restart-min M] [--storage USD] [--transfer USD] [--recovery USD] [--ops USD]] [--rerun-margin 0.25|25%] [--dataset-gb GB] [--checkpoint-gb GB] [--as-of TIME] [--json]")
	withFieldsHelp(a, fs, `
Options are ranked by budget. An interruptible option's budget is its spot total
(median × billable hours + storage + transfer + recovery + ops). The headline
(the summary sentence, "headline": true) skips interruptible options that assume
no interruptions (no --spot-hours or --interrupt-rate) and, while an option
priced from at least 3 listings exists, thin ones ("thin": true).
`)
	task := fs.String("task", "train", "image, video, train, finetune, inference or batch")
	vram := fs.Float64("vram", 0, "VRAM the job needs on one card, GB (overrides the estimate)")
	params := fs.String("params", "", "model size to estimate VRAM from: 7B, 70B, 1.5B, 350M")
	precision := fs.String("precision", "", "fp32, bf16, fp16, fp8, int8 or int4 (default bf16)")
	method := fs.String("method", "", "full, lora or qlora (default full for train, lora for finetune)")
	hours := fs.Float64("hours", 0, "expected wall-clock hours (required)")
	resumable := fs.Bool("resumable", false, "the job checkpoints and resumes: interruptible capacity is an option")
	datasetGB := fs.Float64("dataset-gb", 0, "dataset size, GB, checked against the listings' disk")
	checkpointGB := fs.Float64("checkpoint-gb", 0, "one checkpoint's size, GB")
	kept := fs.Int("checkpoints-kept", recommend.DefaultCheckpointsKept, "checkpoints kept on disk")
	marginS := fs.String("rerun-margin", "25%", "share added to budgets for reruns: a fraction (0.25) or a percentage (25%), 0 to 1")
	sf := addSpotFlags(fs)
	extras := addExtraFlags("recommend", fs)
	asOfS := fs.String("as-of", "", "the market at this RFC 3339 time (default now)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["vram"] && !(*vram > 0) {
		return usageErrorf("recommend: --vram %v: want a positive size in GB", *vram)
	}
	if !*resumable {
		for _, name := range []string{"spot-hours", "interrupt-rate", "checkpoint-min", "restart-min", "checkpoint-interval-min", "storage", "transfer", "recovery", "ops"} {
			if set[name] {
				return usageErrorf("recommend: --%s is about interruptible capacity, which only a --resumable job is offered", name)
			}
		}
	}
	j := recommend.Job{
		Task: *task, VRAMGB: *vram, Precision: *precision, Method: *method, Hours: *hours, Resumable: *resumable,
		DatasetGB: *datasetGB, CheckpointGB: *checkpointGB, CheckpointsKept: *kept,
		SpotHours: *sf.spotHours, InterruptRate: *sf.interruptRate, CheckpointMin: *sf.checkpointMin,
		RestartMin: *sf.restartMin, CheckpointIntervalMin: *sf.intervalMin,
	}
	if *hours == 0 {
		return usageErrorf("recommend: --hours is required (the expected wall-clock hours)")
	}
	margin, err := recommend.ParseRerunMargin(*marginS)
	if err != nil {
		return usageErrorf("recommend: --rerun-margin: %v", err)
	}
	j.RerunMargin = &margin
	if j.Extras, err = extras(); err != nil {
		return err
	}
	if *params != "" {
		p, err := recommend.ParseParams(*params)
		if err != nil {
			return usageErrorf("recommend: --params: %v", err)
		}
		j.Params = p
	}
	if *kept < 1 {
		return usageErrorf("recommend: --checkpoints-kept must be at least 1")
	}
	// Check the job before touching the index: a bad question (NaN, a
	// negative number, impossible spot hours, an unmodelled rate) is a
	// usage error whatever the market.
	if _, err := recommend.Recommend(j, recommend.Market{AsOf: time.Unix(0, 0)}); err != nil {
		return usageErrorf("%v", err)
	}
	asOf, err := a.asOf("recommend", *asOfS)
	if err != nil {
		return err
	}
	m, err := a.recommendMarket(asOf, nil)
	if err != nil {
		return err
	}
	adv, err := recommend.Recommend(j, m)
	if err != nil {
		return usageErrorf("%v", err)
	}
	adv.AsOf = adv.AsOf.UTC()
	for i := range adv.Options {
		adv.Options[i].LastOKRun = adv.Options[i].LastOKRun.UTC()
	}
	for i := range adv.Unpriced {
		adv.Unpriced[i].LastOKRun = adv.Unpriced[i].LastOKRun.UTC()
	}
	if *asJSON {
		err = writeJSON(a.stdout, adv)
	} else {
		printAdvice(a.stdout, adv)
	}
	if err != nil {
		return err
	}
	if len(adv.Options) == 0 && adv.Advice != recommend.AdviceMultiGPU {
		return errSilent // nothing could be priced live: exit 1 after the answer
	}
	return nil
}

// printAdvice writes the answer as the guide reads: the advice in one
// sentence, the options table, the unpriced cards, storage, then notes.
func printAdvice(w io.Writer, adv recommend.Advice) {
	fmt.Fprintln(w, adv.Summary)
	fmt.Fprintf(w, "\nadvice: %s · tier: %s · as of %s\nneed: %s\n", adv.Advice, adv.Tier, stamp(adv.AsOf), adv.Need.How)
	for _, c := range adv.Cluster {
		fmt.Fprintf(w, "cluster: %d × %s (%d GB each)\n", c.GPUs, c.GPU, c.VRAMGB)
	}
	if len(adv.Options) > 0 {
		fmt.Fprintf(w, "\noptions, cheapest budget first (live medians, $/GPU-hr; budget = median × hours; * = the headline):\n")
		for _, o := range adv.Options {
			if o.Kind == listings.Interruptible {
				fmt.Fprintf(w, "(interruptible budget = spot total: median × billable hours + storage, transfer, recovery and ops)\n")
				break
			}
		}
		t := newTable("GPU", "KIND", "VRAM", "PRICE $/GPU-hr", "HOURS", "BUDGET", fmt.Sprintf("WITH %d%% MARGIN", int(math.Round(adv.RerunMargin*100))),
			"LISTINGS", "SOURCES", "LAST OK RUN", "FLOOR", "DURABLE FLOOR", "DISAPPEARING", "SPOT BREAK-EVEN")
		for _, o := range adv.Options {
			durable := "none yet"
			if o.DurableFloor != nil {
				durable = usd(*o.DurableFloor)
			}
			be := "-"
			if o.Spot != nil {
				be = fmt.Sprintf("%.2f h", o.Spot.BreakEvenHours)
			}
			gpu, price := o.GPU, usd(o.Price)
			if o.Headline {
				gpu = "* " + gpu
			}
			if o.Thin {
				price += " (" + listingsWord(o.Listings) + ")"
			}
			if o.AssumesNoInterruptions {
				be += " (no interruptions assumed)"
			}
			t.row(gpu, string(o.Kind), fmt.Sprintf("%d GB", o.VRAMGB), price, trimFloat(o.Hours), "$"+o.Budget.Round(4).Decimal(), "$"+o.BudgetMargin.Round(4).Decimal(),
				fmt.Sprint(o.Listings), strings.Join(o.Sources, ","), stamp(o.LastOKRun), usd(o.Floor), durable, fmt.Sprint(o.Disappearing), be)
		}
		t.write(w)
	}
	if len(adv.Unpriced) > 0 {
		fmt.Fprintln(w, "\nunpriced:")
		for _, u := range adv.Unpriced {
			fmt.Fprintf(w, "  %s: %s\n", u.GPU, u.Reason)
		}
	}
	if s := adv.Storage; s != nil {
		fmt.Fprintf(w, "\nstorage: %s\n", s.How)
		for _, f := range s.GPUs {
			if f.Listings == 0 {
				fmt.Fprintf(w, "  %s: no present listing says its disk\n", f.GPU)
				continue
			}
			fmt.Fprintf(w, "  %s: %d of %d listings have enough disk (%d do not say; largest %s GB)\n",
				f.GPU, f.Enough, f.Listings, f.Unknown, trimFloat(f.MaxGB))
		}
	}
	if len(adv.Notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range adv.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
}

// listingsWord says "1 listing" or "2 listings".
func listingsWord(n int) string {
	if n == 1 {
		return "1 listing"
	}
	return fmt.Sprintf("%d listings", n)
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// pricedFrom is the provenance of a live rate `cost --gpu` used.
type pricedFrom struct {
	GPU       string         `json:"gpu"`
	Kind      listings.Kind  `json:"kind"`
	Price     listings.Price `json:"price"`
	Live      bool           `json:"live"`
	Listings  int            `json:"listings"`
	LastOKRun time.Time      `json:"last_ok_run"`
	Sources   []string       `json:"sources"`
}

// costJSON is the cost answer: DESIGN §6 fields, plus the live rows the
// rates came from (with --gpu).
type costJSON struct {
	recommend.CostResult
	AsOf       *time.Time   `json:"as_of,omitempty"`
	PricedFrom []pricedFrom `json:"priced_from,omitempty"`
}

func cmdCost(ctx context.Context, a *app, args []string) error {
	fs := a.flagSet("cost", "(--gpu Q | --on-demand RATE --spot RATE) --hours H [--spot-hours H | --interrupt-rate L --checkpoint-min M --restart-min M [--checkpoint-interval-min M]] [--storage USD] [--transfer USD] [--recovery USD] [--ops USD] [--json]")
	gpu := fs.String("gpu", "", "price from this GPU's live medians (on-demand and interruptible)")
	onDemand := fs.String("on-demand", "", "on-demand rate, USD per GPU-hour")
	spot := fs.String("spot", "", "spot rate, USD per GPU-hour")
	hours := fs.Float64("hours", 0, "useful (on-demand) hours of the job (required)")
	sf := addSpotFlags(fs)
	extras := addExtraFlags("cost", fs)
	withFieldsHelp(a, fs, "")
	asOfS := fs.String("as-of", "", "with --gpu: the market at this RFC 3339 time (default now)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	in := recommend.CostInput{
		Hours: *hours, SpotHours: *sf.spotHours, InterruptRate: *sf.interruptRate,
		CheckpointMin: *sf.checkpointMin, RestartMin: *sf.restartMin, CheckpointIntervalMin: *sf.intervalMin,
	}
	e, err := extras()
	if err != nil {
		return err
	}
	in.Storage, in.Transfer, in.Recovery, in.Ops = e.Storage, e.Transfer, e.Recovery, e.Ops
	if *hours == 0 {
		return usageErrorf("cost: --hours is required (the useful on-demand hours)")
	}
	var out costJSON
	switch {
	case *gpu != "" && (*onDemand != "" || *spot != ""):
		return usageErrorf("cost: give --gpu (live medians) or --on-demand and --spot, not both")
	case *gpu != "":
		names, err := gpuQuery("cost", *gpu, true)
		if err != nil {
			return err
		}
		if len(names) != 1 {
			return usageErrorf("cost: --gpu %q matches %d GPUs (%s); name one", *gpu, len(names), strings.Join(names, ", "))
		}
		asOf, err := a.asOf("cost", *asOfS)
		if err != nil {
			return err
		}
		m, err := a.recommendMarket(asOf, names)
		if err != nil {
			return err
		}
		out.AsOf = &asOf
		for _, k := range []listings.Kind{listings.OnDemand, listings.Interruptible} {
			r := findRow(m.Rows, names[0], k)
			if r == nil || !r.Live || r.Listings == 0 {
				reason := "never listed"
				if r != nil && !r.LastOKRun.IsZero() {
					reason = "last price " + recommend.Age(asOf.Sub(r.LastOKRun)) + " old"
				}
				return fmt.Errorf("cost: %s %s: no live price (%s); give --on-demand and --spot to price it by hand", names[0], k, reason)
			}
			pf := pricedFrom{GPU: r.GPU, Kind: k, Price: r.Median, Live: true, Listings: r.Listings, LastOKRun: r.LastOKRun.UTC(), Sources: []string{}}
			for _, s := range r.Sources {
				pf.Sources = append(pf.Sources, s.Source)
			}
			out.PricedFrom = append(out.PricedFrom, pf)
		}
		in.OnDemandRate, in.SpotRate = out.PricedFrom[0].Price, out.PricedFrom[1].Price
	case *onDemand == "" || *spot == "":
		return usageErrorf("cost: give --gpu Q, or both --on-demand RATE and --spot RATE")
	default:
		var err error
		if in.OnDemandRate, err = listings.ParsePrice(*onDemand); err != nil {
			return usageErrorf("cost: --on-demand: %v", err)
		}
		if in.SpotRate, err = listings.ParsePrice(*spot); err != nil {
			return usageErrorf("cost: --spot: %v", err)
		}
	}
	res, err := recommend.Cost(in)
	if err != nil {
		return usageErrorf("%v", err)
	}
	out.CostResult = res
	if *asJSON {
		return writeJSON(a.stdout, out)
	}
	printCost(a.stdout, out)
	return nil
}

func findRow(rows []listings.Row, gpu string, kind listings.Kind) *listings.Row {
	for i := range rows {
		r := &rows[i]
		if r.GPU == gpu && r.Kind == kind && (r.Currency == listings.USD || r.Currency == "") {
			return r
		}
	}
	return nil
}

// printCost writes the comparison the way the guide works it.
func printCost(w io.Writer, c costJSON) {
	for _, p := range c.PricedFrom {
		fmt.Fprintf(w, "%s %s: live median %s/GPU-hr from %d listings (%s; last ok run %s)\n",
			p.GPU, p.Kind, usd(p.Price), p.Listings, strings.Join(p.Sources, ", "), stamp(p.LastOKRun))
	}
	r := c.CostResult
	fmt.Fprintf(w, "on-demand: %s/GPU-hr × %s h = %s\n", usd(r.OnDemand.Rate), trimFloat(r.OnDemand.Hours), money(r.OnDemand.Total))
	switch {
	case r.NeverFinishes || r.Spot.Hours == nil || r.Spot.Compute == nil || r.Spot.Total == nil || r.Savings == nil:
		fmt.Fprintf(w, "spot:      %s/GPU-hr, but at this interruption rate the run never finishes (λ(ρ + τ/2) ≥ 1): no spot total; rent on-demand\n", usd(r.Spot.Rate))
		fmt.Fprintf(w, "advertised discount %s%%, but spot never finishes the job\n", trimFloat(r.AdvertisedDiscount*100))
	default:
		fmt.Fprintf(w, "spot:      %s/GPU-hr × %.2f h (%s) = %s compute + %s storage + %s transfer + %s recovery + %s ops = %s\n",
			usd(r.Spot.Rate), *r.Spot.Hours, r.SpotHoursFrom, money(*r.Spot.Compute), money(r.Spot.Storage), money(r.Spot.Transfer),
			money(r.Spot.Recovery), money(r.Spot.Ops), money(*r.Spot.Total))
		verdict := "spot saves"
		if *r.Savings < 0 {
			verdict = "spot costs more by"
		}
		share := "no share of a $0.00 on-demand total"
		if r.SavingsPct != nil {
			share = trimFloat(math.Abs(*r.SavingsPct)) + "% of on-demand"
		}
		fmt.Fprintf(w, "advertised discount %s%%; %s %s (%s)\n",
			trimFloat(r.AdvertisedDiscount*100), verdict, money(abs(*r.Savings)), share)
	}
	fmt.Fprintf(w, "break-even: spot pays up to %.2f billable hours\n", r.BreakEvenHours)
	if r.CheckpointIntervalMin > 0 {
		fmt.Fprintf(w, "checkpoint interval: %s min\n", trimFloat(r.CheckpointIntervalMin))
	}
	if r.BreakEvenInterruptRate != nil {
		fmt.Fprintf(w, "spot stops paying above %.4g interruptions per hour\n", *r.BreakEvenInterruptRate)
	} else if r.Savings != nil && *r.Savings <= 0 {
		fmt.Fprintln(w, "spot does not pay even without interruptions")
	}
	for _, n := range r.Notes {
		if !strings.Contains(n, "never finishes") { // said above
			fmt.Fprintf(w, "note: %s\n", n)
		}
	}
}

func abs(p listings.Price) listings.Price {
	if p < 0 {
		return -p
	}
	return p
}
