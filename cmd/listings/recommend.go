package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/listings-dev/listings"
	"github.com/listings-dev/listings/recommend"
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

// market reads the whole on-demand and interruptible market at asOf for
// the recommender: its rows, the disks of present listings and the newest
// ok run.
func (a *app) recommendMarket(asOf time.Time, gpus []string) (recommend.Market, error) {
	snap, rows, err := a.market(asOf, gpus, []listings.Kind{listings.OnDemand, listings.Interruptible}, 0)
	if err != nil {
		return recommend.Market{}, err
	}
	m := recommend.Market{AsOf: asOf, Rows: rows, Disks: map[string][]float64{}}
	for _, p := range snap.Present {
		if p.Kind == listings.OnDemand {
			m.Disks[p.GPU] = append(m.Disks[p.GPU], p.DiskGB)
		}
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
	fs := a.flagSet("recommend", "--vram GB | --params 7B [--precision P] [--method M] --hours H [--task T] [--resumable] [--dataset-gb GB] [--checkpoint-gb GB] [--as-of TIME] [--json]")
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
	margin := fs.Float64("rerun-margin", recommend.DefaultRerunMargin, "share added to budgets for reruns")
	sf := addSpotFlags(fs)
	asOfS := fs.String("as-of", "", "the market at this RFC 3339 time (default now)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	j := recommend.Job{
		Task: *task, VRAMGB: *vram, Precision: *precision, Method: *method, Hours: *hours, Resumable: *resumable,
		DatasetGB: *datasetGB, CheckpointGB: *checkpointGB, CheckpointsKept: *kept, RerunMargin: *margin,
		SpotHours: *sf.spotHours, InterruptRate: *sf.interruptRate, CheckpointMin: *sf.checkpointMin,
		RestartMin: *sf.restartMin, CheckpointIntervalMin: *sf.intervalMin,
	}
	if *hours <= 0 {
		return usageErrorf("recommend: --hours is required (the expected wall-clock hours)")
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
	if *margin <= 0 {
		return usageErrorf("recommend: --rerun-margin must be positive (the budget without it is always shown)")
	}
	// Check the job before touching the index: a bad question is a usage
	// error whatever the market.
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
		fmt.Fprintf(w, "\noptions, cheapest budget first (live medians, $/GPU-hr; budget = median × hours):\n")
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
			t.row(o.GPU, string(o.Kind), fmt.Sprintf("%d GB", o.VRAMGB), usd(o.Price), trimFloat(o.Hours), "$"+o.Budget.Round(4).Decimal(), "$"+o.BudgetMargin.Round(4).Decimal(),
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
	var extras [4]*string
	for i, name := range []string{"storage", "transfer", "recovery", "ops"} {
		extras[i] = fs.String(name, "0", name+" cost of the spot run, USD (money, not per hour)")
	}
	asOfS := fs.String("as-of", "", "with --gpu: the market at this RFC 3339 time (default now)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	in := recommend.CostInput{
		Hours: *hours, SpotHours: *sf.spotHours, InterruptRate: *sf.interruptRate,
		CheckpointMin: *sf.checkpointMin, RestartMin: *sf.restartMin, CheckpointIntervalMin: *sf.intervalMin,
	}
	for i, dst := range []*listings.Price{&in.Storage, &in.Transfer, &in.Recovery, &in.Ops} {
		p, err := listings.ParsePrice(*extras[i])
		if err != nil {
			return usageErrorf("cost: --%s: %v", []string{"storage", "transfer", "recovery", "ops"}[i], err)
		}
		*dst = p
	}
	if *hours <= 0 {
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
	if r.NeverFinishes {
		fmt.Fprintf(w, "spot:      %s/GPU-hr, but at this interruption rate the run never finishes (λ(ρ + τ/2) ≥ 1): rent on-demand\n", usd(r.Spot.Rate))
	} else {
		fmt.Fprintf(w, "spot:      %s/GPU-hr × %.2f h (%s) = %s compute + %s storage + %s transfer + %s recovery + %s ops = %s\n",
			usd(r.Spot.Rate), r.Spot.Hours, r.SpotHoursFrom, money(r.Spot.Compute), money(r.Spot.Storage), money(r.Spot.Transfer),
			money(r.Spot.Recovery), money(r.Spot.Ops), money(r.Spot.Total))
		verdict := "spot saves"
		if r.Savings < 0 {
			verdict = "spot costs more by"
		}
		fmt.Fprintf(w, "advertised discount %s%%; %s %s (%s%% of on-demand)\n",
			trimFloat(r.AdvertisedDiscount*100), verdict, money(abs(r.Savings)), trimFloat(math.Abs(r.SavingsPct)))
	}
	fmt.Fprintf(w, "break-even: spot pays up to %.2f billable hours\n", r.BreakEvenHours)
	if r.CheckpointIntervalMin > 0 {
		fmt.Fprintf(w, "checkpoint interval: %s min\n", trimFloat(r.CheckpointIntervalMin))
	}
	if r.BreakEvenInterruptRate != nil {
		fmt.Fprintf(w, "spot stops paying above %.4g interruptions per hour\n", *r.BreakEvenInterruptRate)
	} else if r.Savings <= 0 && !r.NeverFinishes {
		fmt.Fprintln(w, "spot does not pay even without interruptions")
	}
}

func abs(p listings.Price) listings.Price {
	if p < 0 {
		return -p
	}
	return p
}
