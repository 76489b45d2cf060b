package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/listings-dev/listings"
	"github.com/listings-dev/listings/index"
	"github.com/listings-dev/listings/stats"
)

func init() {
	register("median", cmdMedian)
	register("gpus", cmdGPUs)
	register("flags", cmdFlags)
	register("history", cmdHistory)
	register("runs", cmdRuns)
	register("check", cmdCheck)
}

// openRead opens the index read-only: a missing file is an empty index, a
// writer holding the lock makes it fail after about 2 s with "index busy".
func (a *app) openRead() (*index.DB, error) {
	return index.OpenReadOnly(a.dbPath, index.Options{MaxAge: a.cfg.maxAge})
}

// market reads the snapshot at asOf for gpus (nil: all) and kinds (nil:
// all) and computes its rows.
func (a *app) market(asOf time.Time, gpus []string, kinds []listings.Kind, window time.Duration) (*listings.Snapshot, []listings.Row, error) {
	db, err := a.openRead()
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	snap, err := db.Snapshot(index.SnapshotQuery{AsOf: asOf, MaxAge: a.cfg.maxAge, GPUs: gpus, Kinds: kinds, GoneWindow: window})
	if err != nil {
		return nil, nil, err
	}
	return snap, stats.Rows(snap, a.statsParams(window)), nil
}

func (a *app) statsParams(window time.Duration) stats.Params {
	return stats.Params{MinLife: a.cfg.minLife, Window: window}
}

// gpuQuery resolves --gpu to catalog names; an unknown query is a usage
// error (exit 2).
func gpuQuery(cmd, q string, required bool) ([]string, error) {
	if q == "" {
		if required {
			return nil, usageErrorf("%s: --gpu is required (e.g. --gpu 4090, --gpu \"h100 sxm\", --gpu a100)", cmd)
		}
		return nil, nil
	}
	gs := listings.Match(q)
	if len(gs) == 0 {
		return nil, usageErrorf("%s: --gpu %q matches no known GPU", cmd, q)
	}
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = g.Name
	}
	return names, nil
}

// kindQuery resolves --kind; "any" is every kind (nil).
func kindQuery(cmd, k string) ([]listings.Kind, error) {
	if k == "any" || k == "all" {
		return nil, nil
	}
	kind, err := listings.ParseKind(k)
	if err != nil {
		return nil, usageErrorf("%s: --kind %q: want on-demand, interruptible, monthly or any", cmd, k)
	}
	return []listings.Kind{kind}, nil
}

// asOfFlag reads --as-of; empty is now.
func (a *app) asOf(cmd, s string) (time.Time, error) {
	if s == "" {
		return a.now().UTC().Truncate(time.Second), nil
	}
	t, err := parseTime(s)
	if err != nil {
		return time.Time{}, usageErrorf("%s: --as-of: %v", cmd, err)
	}
	return t, nil
}

// rowJSON is a statistics row as printed with --json: prices in USD per
// GPU-hour (null when the row is not live), times RFC 3339 UTC.
type rowJSON struct {
	GPU          string          `json:"gpu"`
	Kind         listings.Kind   `json:"kind"`
	Currency     string          `json:"currency"`
	AsOf         time.Time       `json:"as_of"`
	Live         bool            `json:"live"`
	Listings     int             `json:"listings"`
	Median       *listings.Price `json:"median"`
	P10          *listings.Price `json:"p10"`
	P25          *listings.Price `json:"p25"`
	P75          *listings.Price `json:"p75"`
	P90          *listings.Price `json:"p90"`
	Floor        *listings.Price `json:"floor"`
	DurableFloor *listings.Price `json:"durable_floor"`
	Disappearing int             `json:"disappearing"`
	Unconfirmed  int             `json:"unconfirmed"`
	LastOKRun    *time.Time      `json:"last_ok_run"`
	Sources      []sourceJSON    `json:"sources"`
}

type sourceJSON struct {
	Source    string         `json:"source"`
	Listings  int            `json:"listings"`
	Median    listings.Price `json:"median"`
	LastOKRun time.Time      `json:"last_ok_run"`
}

func toRowJSON(r listings.Row) rowJSON {
	p := func(v listings.Price) *listings.Price {
		if r.Listings == 0 {
			return nil
		}
		return &v
	}
	out := rowJSON{
		GPU: r.GPU, Kind: r.Kind, Currency: r.Currency, AsOf: r.AsOf.UTC(), Live: r.Live, Listings: r.Listings,
		Median: p(r.Median), P10: p(r.P10), P25: p(r.P25), P75: p(r.P75), P90: p(r.P90), Floor: p(r.Floor),
		DurableFloor: r.DurableFloor, Disappearing: r.Disappearing, Unconfirmed: r.Unconfirmed,
		Sources: []sourceJSON{},
	}
	if !r.LastOKRun.IsZero() {
		t := r.LastOKRun.UTC()
		out.LastOKRun = &t
	}
	for _, s := range r.Sources {
		out.Sources = append(out.Sources, sourceJSON{s.Source, s.Listings, s.Median, s.LastOKRun.UTC()})
	}
	return out
}

func rowsJSON(rows []listings.Row) []rowJSON {
	out := make([]rowJSON, 0, len(rows))
	for _, r := range rows {
		out = append(out, toRowJSON(r))
	}
	return out
}

// completeRows adds a not-live row for each asked (gpu, kind) the market has
// no row of, so `median --gpu a100` shows every variant.
func completeRows(rows []listings.Row, gpus []string, kinds []listings.Kind, asOf time.Time) []listings.Row {
	have := map[string]bool{}
	for _, r := range rows {
		have[r.GPU+"\x00"+string(r.Kind)] = true
	}
	if kinds == nil {
		kinds = []listings.Kind{listings.OnDemand}
		for _, r := range rows {
			have[r.GPU+"\x00"+string(listings.OnDemand)] = true
		}
	}
	out := append([]listings.Row(nil), rows...)
	for _, g := range gpus {
		for _, k := range kinds {
			if !have[g+"\x00"+string(k)] {
				out = append(out, listings.Row{GPU: g, Kind: k, Currency: listings.USD, AsOf: asOf})
			}
		}
	}
	sortRows(out)
	return out
}

func sortRows(rows []listings.Row) {
	names := map[string]int{}
	var list []string
	for _, r := range rows {
		if _, ok := names[r.GPU]; !ok {
			names[r.GPU] = 0
			list = append(list, r.GPU)
		}
	}
	listings.SortGPUNames(list)
	for i, n := range list {
		names[n] = i
	}
	kindPos := func(k listings.Kind) int {
		for i, x := range listings.Kinds {
			if x == k {
				return i
			}
		}
		return len(listings.Kinds)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if names[a.GPU] != names[b.GPU] {
			return names[a.GPU] < names[b.GPU]
		}
		if kindPos(a.Kind) != kindPos(b.Kind) {
			return kindPos(a.Kind) < kindPos(b.Kind)
		}
		// USD first: a script reading the first row of a GPU gets dollars.
		if (a.Currency == listings.USD) != (b.Currency == listings.USD) {
			return a.Currency == listings.USD
		}
		return a.Currency < b.Currency
	})
}

// priceIn formats a price for a table: dollars, or the amount and its
// currency code when it is not USD.
func priceIn(p listings.Price, currency string) string {
	if currency != "" && currency != listings.USD {
		return p.Decimal() + " " + currency
	}
	return usd(p)
}

func anyLive(rows []listings.Row) bool {
	for _, r := range rows {
		if r.Live {
			return true
		}
	}
	return false
}

// printRows writes the human table of rows, with the as-of time and units.
func printRows(w io.Writer, snap *listings.Snapshot, rows []listings.Row, full bool) {
	fmt.Fprintf(w, "as of %s · prices per GPU-hour ($/GPU-hr) · sources older than %s are stale\n",
		stamp(snap.AsOf), human(snap.MaxAge))
	head := []string{"GPU", "KIND", "LIVE", "LISTINGS", "MEDIAN", "P10", "P25", "P75", "P90", "FLOOR", "DURABLE FLOOR", "DISAPPEARING", "LAST OK RUN"}
	if !full {
		head = []string{"GPU", "KIND", "LIVE", "LISTINGS", "MEDIAN", "P10", "P90", "FLOOR", "DURABLE FLOOR", "DISAPPEARING", "LAST OK RUN"}
	}
	t := newTable(head...)
	for _, r := range rows {
		price := func(p listings.Price) string {
			if r.Listings == 0 {
				return "-"
			}
			return priceIn(p, r.Currency)
		}
		live := "yes"
		if !r.Live {
			live = "NO"
		}
		durable := "none yet"
		if r.DurableFloor != nil {
			durable = price(*r.DurableFloor)
		}
		if r.Listings == 0 {
			durable = "-"
		}
		last := stamp(r.LastOKRun)
		if !r.Live {
			last = fmt.Sprintf("%s (%s)", last, ago(snap.AsOf, r.LastOKRun))
		}
		if full {
			t.row(r.GPU, string(r.Kind), live, fmt.Sprint(r.Listings), price(r.Median), price(r.P10), price(r.P25),
				price(r.P75), price(r.P90), price(r.Floor), durable, fmt.Sprint(r.Disappearing), last)
		} else {
			t.row(r.GPU, string(r.Kind), live, fmt.Sprint(r.Listings), price(r.Median), price(r.P10),
				price(r.P90), price(r.Floor), durable, fmt.Sprint(r.Disappearing), last)
		}
	}
	t.write(w)
	if full {
		for _, r := range rows {
			if len(r.Sources) == 0 {
				continue
			}
			var parts []string
			for _, s := range r.Sources {
				price := priceIn(s.Median, r.Currency)
				parts = append(parts, fmt.Sprintf("%s %d at %s (run %s)", s.Source, s.Listings, price, stamp(s.LastOKRun)))
			}
			fmt.Fprintf(w, "%s %s sources: %s\n", r.GPU, r.Kind, strings.Join(parts, "; "))
		}
	}
	for _, r := range rows {
		if !r.Live {
			fmt.Fprintf(w, "%s %s: no live price (last listed %s)\n", r.GPU, r.Kind, ago(snap.AsOf, r.LastOKRun))
		}
	}
	if len(snap.Stale) > 0 {
		var parts []string
		for _, s := range snap.Stale {
			parts = append(parts, fmt.Sprintf("%s (last ok run %s)", s.Source, ago(snap.AsOf, s.Started)))
		}
		fmt.Fprintf(w, "stale sources, left out: %s\n", strings.Join(parts, ", "))
	}
}

func cmdMedian(ctx context.Context, a *app, args []string) error {
	fs := a.flagSet("median", "--gpu Q [--kind KIND|any] [--as-of TIME] [--json]")
	gpu := fs.String("gpu", "", "GPU query: a name or alias (4090, \"h100 sxm\") or part of one (a100)")
	kind := fs.String("kind", "on-demand", "on-demand, interruptible, monthly or any")
	asOfS := fs.String("as-of", "", "the market at this RFC 3339 time (default now)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	gpus, err := gpuQuery("median", *gpu, true)
	if err != nil {
		return err
	}
	kinds, err := kindQuery("median", *kind)
	if err != nil {
		return err
	}
	asOf, err := a.asOf("median", *asOfS)
	if err != nil {
		return err
	}
	snap, rows, err := a.market(asOf, gpus, kinds, 0)
	if err != nil {
		return err
	}
	rows = completeRows(rows, gpus, kinds, asOf)
	if *asJSON {
		err = writeJSON(a.stdout, rowsJSON(rows))
	} else {
		printRows(a.stdout, snap, rows, true)
	}
	if err != nil {
		return err
	}
	if !anyLive(rows) {
		return errSilent
	}
	return nil
}

func cmdGPUs(ctx context.Context, a *app, args []string) error {
	fs := a.flagSet("gpus", "[--kind KIND|any] [--as-of TIME] [--json]")
	kind := fs.String("kind", "any", "on-demand, interruptible, monthly or any")
	asOfS := fs.String("as-of", "", "the market at this RFC 3339 time (default now)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	kinds, err := kindQuery("gpus", *kind)
	if err != nil {
		return err
	}
	asOf, err := a.asOf("gpus", *asOfS)
	if err != nil {
		return err
	}
	snap, rows, err := a.market(asOf, nil, kinds, 0)
	if err != nil {
		return err
	}
	sortRows(rows)
	if *asJSON {
		err = writeJSON(a.stdout, rowsJSON(rows))
	} else {
		printRows(a.stdout, snap, rows, false)
	}
	if err == nil && len(rows) > 0 && !anyLive(rows) {
		return errSilent // rows to show, none of them live: a price query that found no price
	}
	return err
}

func cmdFlags(ctx context.Context, a *app, args []string) error {
	fs := a.flagSet("flags", "[--gpu Q] [--pending] [--since DUR] [--as-of TIME] [--json]")
	gpu := fs.String("gpu", "", "only GPUs matching this query")
	pending := fs.Bool("pending", false, "also list unconfirmed floor listings (present, younger than min_life)")
	since := fs.String("since", "7d", "how far back a disappearance counts")
	asOfS := fs.String("as-of", "", "as of this RFC 3339 time (default now)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	gpus, err := gpuQuery("flags", *gpu, false)
	if err != nil {
		return err
	}
	window, err := parseDuration(*since)
	if err != nil || window <= 0 {
		return usageErrorf("flags: --since: want a positive duration like 7d")
	}
	asOf, err := a.asOf("flags", *asOfS)
	if err != nil {
		return err
	}
	snap, _, err := a.market(asOf, gpus, nil, window)
	if err != nil {
		return err
	}
	flags := stats.Flags(snap, a.statsParams(window), *pending)
	if *asJSON {
		if flags == nil {
			flags = []stats.Flag{}
		}
		return writeJSON(a.stdout, flags) // stats.Flag marshals the DESIGN §6 fields
	}
	fmt.Fprintf(a.stdout, "disappearing floor listings as of %s (gone within %s, lived less than %s)\n", stamp(asOf), human(window), human(a.cfg.minLife))
	if len(flags) == 0 {
		fmt.Fprintln(a.stdout, "none")
		return nil
	}
	t := newTable("SOURCE", "ID", "GPU", "KIND", "PRICE $/GPU-hr", "FIRST SEEN", "LAST SEEN", "GONE AT", "LIFETIME", "STATUS")
	for _, f := range flags {
		gone := "-"
		if f.GoneAt != nil {
			gone = stamp(*f.GoneAt)
		}
		price := priceIn(f.Price, f.Currency)
		t.row(f.Source, f.ID, f.GPU, string(f.Kind), price, stamp(f.FirstSeen), stamp(f.LastSeen), gone,
			f.Lifetime.Truncate(time.Second).String(), f.Status)
	}
	t.write(a.stdout)
	return nil
}

func cmdHistory(ctx context.Context, a *app, args []string) error {
	fs := a.flagSet("history", "--gpu Q [--kind KIND] [--since DUR] [--every DUR] [--as-of TIME] [--json|--csv]")
	gpu := fs.String("gpu", "", "GPU query")
	kind := fs.String("kind", "on-demand", "on-demand, interruptible, monthly or any")
	since := fs.String("since", "30d", "how far back")
	every := fs.String("every", "", "keep the last point in each interval (e.g. 1d); default every run")
	asOfS := fs.String("as-of", "", "end of the range (default now)")
	asJSON := fs.Bool("json", false, "print JSON")
	asCSV := fs.Bool("csv", false, "print CSV")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *asJSON && *asCSV {
		return usageErrorf("history: --json and --csv: pick one")
	}
	gpus, err := gpuQuery("history", *gpu, true)
	if err != nil {
		return err
	}
	kinds, err := kindQuery("history", *kind)
	if err != nil {
		return err
	}
	if kinds == nil {
		kinds = listings.Kinds
	}
	back, err := parseDuration(*since)
	if err != nil || back <= 0 {
		return usageErrorf("history: --since: want a positive duration like 30d")
	}
	var step time.Duration
	if *every != "" {
		if step, err = parseDuration(*every); err != nil || step <= 0 {
			return usageErrorf("history: --every: want a positive duration like 1d")
		}
	}
	to, err := a.asOf("history", *asOfS)
	if err != nil {
		return err
	}
	db, err := a.openRead()
	if err != nil {
		return err
	}
	defer db.Close()
	var points []listings.Row
	for _, g := range gpus {
		for _, k := range kinds {
			rows, err := db.History(g, k, to.Add(-back), to)
			if err != nil {
				return err
			}
			points = append(points, stats.Resample(rows, step)...)
		}
	}
	switch {
	case *asJSON:
		return writeJSON(a.stdout, rowsJSON(points))
	case *asCSV:
		w := csv.NewWriter(a.stdout)
		w.Write([]string{"as_of", "gpu", "kind", "currency", "listings", "median", "p10", "p25", "p75", "p90", "floor", "durable_floor", "disappearing"})
		for _, p := range points {
			durable := ""
			if p.DurableFloor != nil {
				durable = p.DurableFloor.Decimal()
			}
			w.Write([]string{p.AsOf.UTC().Format(time.RFC3339), csvText(p.GPU), string(p.Kind), p.Currency, fmt.Sprint(p.Listings),
				p.Median.Decimal(), p.P10.Decimal(), p.P25.Decimal(), p.P75.Decimal(), p.P90.Decimal(), p.Floor.Decimal(), durable, fmt.Sprint(p.Disappearing)})
		}
		w.Flush()
		return w.Error()
	}
	fmt.Fprintf(a.stdout, "history from %s to %s · $/GPU-hr\n", stamp(to.Add(-back)), stamp(to))
	t := newTable("AS OF", "GPU", "KIND", "LISTINGS", "MEDIAN", "P10", "P90", "FLOOR", "DURABLE FLOOR", "DISAPPEARING")
	for _, p := range points {
		durable := "none yet"
		if p.DurableFloor != nil {
			durable = priceIn(*p.DurableFloor, p.Currency)
		}
		t.row(stamp(p.AsOf), p.GPU, string(p.Kind), fmt.Sprint(p.Listings), priceIn(p.Median, p.Currency), priceIn(p.P10, p.Currency),
			priceIn(p.P90, p.Currency), priceIn(p.Floor, p.Currency), durable, fmt.Sprint(p.Disappearing))
	}
	t.write(a.stdout)
	return nil
}

// csvText neutralises a scraped text cell against spreadsheet formula
// injection (DESIGN §7).
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// runJSON is a run as printed by `runs --json` and `collect --json`.
type runJSON struct {
	Source   string         `json:"source"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
	Status   string         `json:"status"`
	Listings int            `json:"listings"`
	Rejected int            `json:"rejected"`
	Rejects  map[string]int `json:"rejects"`
	Unknown  map[string]int `json:"unknown_gpus,omitempty"`
	Error    string         `json:"error"`
	Pages    int            `json:"pages"`
	Bytes    int64          `json:"bytes"`
	Retries  int            `json:"retries"`
	Notes    []string       `json:"notes,omitempty"`
	// FX holds the rates the run's statistics convert with (1 unit in USD).
	FX     map[string]listings.Price `json:"fx,omitempty"`
	FXDate string                    `json:"fx_date,omitempty"`
}

func runRows(runs []listings.Run) []runJSON {
	out := make([]runJSON, 0, len(runs))
	for _, r := range runs {
		rej := r.Rejects
		if rej == nil {
			rej = map[string]int{}
		}
		out = append(out, runJSON{r.Source, r.Started.UTC(), r.Finished.UTC(), string(r.Status), r.Listings, r.Rejected(),
			rej, r.Unknown, r.Error, r.Pages, r.Bytes, r.Retries, r.Notes, r.FX, r.FXDate})
	}
	return out
}

func cmdRuns(ctx context.Context, a *app, args []string) error {
	fs := a.flagSet("runs", "[--source NAME] [--since DUR] [--json]")
	source := fs.String("source", "", "only this source")
	since := fs.String("since", "", "only runs started within this duration (default: every run)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	var from time.Time
	if *since != "" {
		d, err := parseDuration(*since)
		if err != nil || d <= 0 {
			return usageErrorf("runs: --since: want a positive duration like 7d")
		}
		from = a.now().Add(-d)
	}
	if *source != "" && !contains(a.sourceNames(), *source) {
		return usageErrorf("runs: unknown source %q (sources: %s)", *source, strings.Join(a.sourceNames(), ", "))
	}
	db, err := a.openRead()
	if err != nil {
		return err
	}
	defer db.Close()
	runs, err := db.Runs(*source, from)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(a.stdout, runRows(runs))
	}
	printRuns(a.stdout, runs)
	return nil
}

func printRuns(w io.Writer, runs []listings.Run) {
	t := newTable("SOURCE", "STARTED", "STATUS", "LISTINGS", "REJECTED", "DURATION", "PAGES", "BYTES", "RETRIES", "ERROR")
	for _, r := range runs {
		t.row(r.Source, stamp(r.Started), string(r.Status), fmt.Sprint(r.Listings), fmt.Sprint(r.Rejected()),
			r.Finished.Sub(r.Started).Round(time.Millisecond).String(), fmt.Sprint(r.Pages), fmt.Sprint(r.Bytes),
			fmt.Sprint(r.Retries), truncate(r.Error, 80))
	}
	t.write(w)
}

func cmdCheck(ctx context.Context, a *app, args []string) error {
	fs := a.flagSet("check", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	db, err := a.openRead()
	if err != nil {
		return err
	}
	defer db.Close()
	faults, err := db.Check()
	if err != nil {
		return err
	}
	if len(faults) == 0 {
		fmt.Fprintf(a.stdout, "%s: ok\n", a.dbPath)
		return nil
	}
	for _, f := range faults {
		fmt.Fprintf(a.stdout, "fault: %s\n", f)
	}
	return fmt.Errorf("check: %d faults in %s", len(faults), a.dbPath)
}
