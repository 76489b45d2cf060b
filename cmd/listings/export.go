package main

// The finance export (issue 5): `listings export` streams the index as CSV
// a spreadsheet can trust or as Parquet a warehouse can read.
//
// Decisions where the issue is silent (the README carries them too):
//
//   - Listing granularity has one row per listing (source, id, kind) per ok
//     run in which it was present and available, from index.WalkRuns in time
//     order (ties by source). observed_at is the run's start.
//   - first_seen is the start of the listing's continuous presence; last_seen
//     is the last ok run of that presence at or before --to: the presence's
//     last_seen when it disappeared by --to, otherwise the latest ok run of
//     its source at or before --to (a presence is continuous, so every ok run
//     of its source between first_seen and last_seen listed it). It is the
//     same in every row of one presence, and an export with a given --to
//     never changes as later runs arrive.
//   - disappearing_floor is true in every row of a presence that ended, by
//     --to, as a disappearing floor listing (DESIGN §4: a floor listing that
//     disappeared with a lifetime below min_life), the listing `flags`
//     reports as disappeared. The index's walk says how each presence ends,
//     so the export loads nothing up front.
//   - gpu_count, vram_gb, region and reliability are the listing's attributes
//     as the index holds them (its latest); the index keeps the history of
//     prices, not of attributes.
//   - price_usd_per_gpu_hour converts a non-USD price with the rate recorded
//     with that run (Run.FX), as the statistics do; it is empty when the run
//     has no rate for the currency. price_original is the per-GPU-hour price
//     in its own currency.
//   - Daily granularity has exactly one row per (UTC date, gpu, kind): the
//     as-of is the start T of the day's last ok run of any source, and the
//     row equals the USD row of `listings median --as-of T`. Only rows with
//     listings that day are written. The statistics convert every currency
//     the run's fx rates cover; a row in a currency without a rate (never
//     guessed into USD) is left out, and one stderr note counts them. Two
//     columns follow the issue's: currency (always USD, kept so the file
//     names its unit and the schema stays as published) and as_of (T).
//   - Times are RFC 3339 UTC with fractional seconds only when they are not
//     zero (2026-11-28T03:00:00Z, 2026-11-28T03:00:00.25Z): every CSV time
//     parses back to the instant the index holds. Parquet timestamps are
//     microseconds; a finer time is cut, with a stderr note.
//   - Parquet prices are DOUBLE: every price has at most six decimals, so
//     round(x, 6) gives the exact decimal back; the CSV carries it exactly.
//     Timestamps are TIMESTAMP(MICROS, UTC); unknowns are nulls. Scraped text
//     is written as is in Parquet (formula neutralisation is a CSV matter).
//   - Listing Parquet goes to a directory OUT/dt=YYYY-MM-DD/part-0.parquet
//     (dt is the UTC date of observed_at); daily Parquet to one file OUT.
//   - Files appear whole or not at all: the export writes beside OUT and
//     renames at the end. A Parquet directory OUT must not exist yet (or be
//     empty), so no partition of an older export is left mixed in. A path
//     under /dev or /proc is never renamed over (/dev/stdout on a file is
//     written in place, appending).
//   - Stdout and any OUT that is not a regular file (a pipe, a named pipe, a
//     terminal) are spooled: the walk writes an unlinked temporary file in
//     os.TempDir(), the index is closed, and only then is the spool copied
//     to the consumer. A read-only bbolt open holds a shared lock on the
//     file, so a consumer that stalls would otherwise stall every writer
//     (collect). A regular file is written directly (as fast as the walk).
//   - EPIPE ends the export quietly (exit 0) whatever the target: a reader
//     that leaves early (`| head`) is not a failure.
//   - --from and --to bound the runs' start times, both inclusive; a plain
//     date as --to means the end of that day. Without them the export is
//     the whole index.
//   - CSV records end with LF (Go's encoding/csv), which spreadsheets,
//     DuckDB and pandas read; quoting follows RFC 4180.

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/listings-dev/listings"
	"github.com/listings-dev/listings/index"
	"github.com/listings-dev/listings/stats"
)

func init() {
	register("export", cmdExport)
	demoExtras = append(demoExtras, struct {
		title string
		run   func(ctx context.Context, a *app) error
	}{
		"finance export: listings export --granularity daily --gpu 4090 --kind on-demand",
		func(ctx context.Context, a *app) error {
			return cmdExport(ctx, a, []string{"--granularity", "daily", "--gpu", "4090", "--kind", "on-demand"})
		},
	})
}

// listingColumns are the columns of the listing granularity, in order.
var listingColumns = []string{
	"observed_at", "source", "listing_id", "gpu", "gpu_count", "vram_gb", "kind",
	"price_usd_per_gpu_hour", "price_original", "currency", "region", "reliability",
	"first_seen", "last_seen", "disappearing_floor",
}

// dailyColumns are the columns of the daily granularity, in order.
var dailyColumns = []string{
	"date", "gpu", "kind", "listings", "median", "p10", "p25", "p75", "p90",
	"floor", "durable_floor", "disappearing", "currency", "as_of",
}

// rowGroupRows bounds the rows a Parquet writer buffers before it writes a
// row group: the export's memory does not grow with the number of rows.
const rowGroupRows = 64 * 1024

// exportOptions are the parsed flags of `listings export`.
type exportOptions struct {
	format      string // csv or parquet
	granularity string // listing or daily
	from, to    time.Time
	gpus        []string        // catalog names; nil: all
	kinds       []listings.Kind // nil: all
	out         string          // "-": stdout
}

// selects says whether a listing of gpu and kind is in the export.
func (o *exportOptions) selects(gpu string, kind listings.Kind) bool {
	if o.gpus != nil && !contains(o.gpus, gpu) {
		return false
	}
	return o.kinds == nil || contains(o.kinds, kind)
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func cmdExport(ctx context.Context, a *app, args []string) error {
	fs := a.flagSet("export", "[--format csv|parquet] [--granularity listing|daily] [--from TIME] [--to TIME] [--gpu Q] [--kind KIND|any] [--out PATH|-]")
	format := fs.String("format", "csv", "csv or parquet")
	gran := fs.String("granularity", "listing", "listing (one row per listing per ok run) or daily (one row per day, GPU and kind)")
	fromS := fs.String("from", "", "only runs started at or after this RFC 3339 time or date (default: the first)")
	toS := fs.String("to", "", "only runs started at or before this RFC 3339 time, or during this date (default: the last)")
	gpu := fs.String("gpu", "", "only GPUs matching this query (default: all)")
	kind := fs.String("kind", "any", "on-demand, interruptible, monthly or any")
	out := fs.String("out", "-", "output: a file for CSV (- is stdout), a directory for listing Parquet, a file for daily Parquet; a pipe is fed from a spool (see below)")
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(a.stdout, exportHelp)
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	o := exportOptions{format: *format, granularity: *gran, out: *out}
	if o.format != "csv" && o.format != "parquet" {
		return usageErrorf("export: --format %q: want csv or parquet", o.format)
	}
	if o.granularity != "listing" && o.granularity != "daily" {
		return usageErrorf("export: --granularity %q: want listing or daily", o.granularity)
	}
	if o.out == "" {
		return usageErrorf("export: --out is empty (a path, or - for stdout)")
	}
	if o.format == "parquet" && o.out == "-" {
		return usageErrorf("export: parquet needs --out (a directory for listing granularity, a file for daily); stdout is for csv")
	}
	var err error
	if *fromS != "" {
		if o.from, err = parseTime(*fromS); err != nil {
			return usageErrorf("export: --from: %v", err)
		}
	}
	if *toS != "" {
		if o.to, err = parseTime(*toS); err != nil {
			return usageErrorf("export: --to: %v", err)
		}
		if _, err := time.Parse(time.DateOnly, *toS); err == nil {
			// A plain date ends the export with that day, not at its start.
			o.to = o.to.Add(24*time.Hour - time.Nanosecond)
		}
	}
	if !o.from.IsZero() && !o.to.IsZero() && o.to.Before(o.from) {
		return usageErrorf("export: --to %s is before --from %s", o.to.Format(time.RFC3339), o.from.Format(time.RFC3339))
	}
	if o.gpus, err = gpuQuery("export", *gpu, false); err != nil {
		return err
	}
	if o.kinds, err = kindQuery("export", *kind); err != nil {
		return err
	}

	db, err := a.openRead()
	if err != nil {
		return err
	}
	idx := &openIndex{db: db}
	defer idx.release()
	if o.to.IsZero() {
		// The whole index: up to its last run, whenever that was recorded.
		runs, err := db.Runs("", o.from)
		if err != nil {
			return fmt.Errorf("export: read runs: %w", err)
		}
		for _, r := range runs {
			if r.Started.After(o.to) {
				o.to = r.Started
			}
		}
		if o.to.IsZero() {
			o.to = o.from
		}
	}
	// Without a handler, a write to a closed stdout pipe kills a Go program
	// with SIGPIPE; asking for the signal turns it into an EPIPE error
	// (other descriptors, such as an opened /dev/stdout, get EPIPE anyway).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGPIPE)
	defer signal.Stop(sig)
	err = exportTo(ctx, a, idx, &o)
	if errors.Is(err, syscall.EPIPE) {
		// A reader that went away (`| head`) ends the export quietly,
		// whatever the target: stdout, /dev/stdout, a named pipe.
		return nil
	}
	return err
}

// exportHelp closes `listings export -h`: how the export meets its output.
const exportHelp = `
output:
  A regular file is written beside itself and renamed into place at the end,
  so a reader never sees half an export. Stdout or a target that is not a
  regular file (a pipe, a named pipe, a terminal, /dev/stdout on a pipe) is
  spooled first: the export walks the index into an unlinked temporary file
  in $TMPDIR, closes the index, then copies the spool to the output. A slow
  or stalled reader therefore never holds the index open, so it never blocks
  'listings collect' (which waits for readers to let go of the file); the
  cost is disk space in $TMPDIR the size of the export. A reader that goes
  away early (| head) ends the export quietly, exit 0.

  Daily rows are in USD: the statistics convert a currency the config's fx
  table has a rate for. A row in a currency without a rate is left out (one
  note on stderr says how many): configure fx to include it.
`

// openIndex is the export's open index, released once: as soon as the walk
// is over when the output is spooled, else when the command returns.
type openIndex struct {
	db     *index.DB
	closed bool
}

func (x *openIndex) release() error {
	if x.closed {
		return nil
	}
	x.closed = true
	if err := x.db.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// exportTo writes the export to its target: a directory of partitions for
// listing Parquet; otherwise one stream (CSV or daily Parquet) that goes to
// a regular file directly (atomically, by rename), and to stdout or any
// other target through a spool, so the index is released before the
// consumer is served.
func exportTo(ctx context.Context, a *app, idx *openIndex, o *exportOptions) error {
	if o.format == "parquet" && o.granularity == "listing" {
		return exportParquetDir(ctx, a, idx.db, o)
	}
	fill := func(w io.Writer) error {
		if o.format == "csv" {
			return exportCSV(ctx, a, idx.db, o, w)
		}
		s := newDailyParquet(w)
		if err := exportDaily(ctx, a, idx.db, o, s.write); err != nil {
			return err
		}
		if err := s.close(); err != nil {
			return err
		}
		s.note(a.stderr)
		return nil
	}
	if o.out == "-" {
		f, ok := a.stdout.(*os.File)
		if !ok {
			// An in-process writer (tests, benchmarks): nothing to spool for.
			return fill(a.stdout)
		}
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return fill(f) // `> file`: as fast as the walk
		}
		return spoolTo(fill, idx, func() (io.Writer, func() error, error) {
			return a.stdout, func() error { return nil }, nil
		})
	}
	switch target, err := classifyTarget(o.out); {
	case err != nil:
		return err
	case target == targetRegular:
		return writeAtomic(o.out, fill)
	case target == targetInPlaceFile:
		// /dev/stdout or /dev/fd/N on a regular file (`> file`, `>> file`):
		// written in place, appending where the shell left the file.
		f, err := os.OpenFile(o.out, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return fmt.Errorf("export: open %s: %w", o.out, err)
		}
		if err := fill(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("export: write %s: %w", o.out, err)
		}
		return nil
	default: // a pipe, named pipe or device
		return spoolTo(fill, idx, func() (io.Writer, func() error, error) {
			// Opening a named pipe waits for its reader: the index is
			// already closed by then.
			f, err := os.OpenFile(o.out, os.O_WRONLY, 0)
			if err != nil {
				return nil, nil, fmt.Errorf("export: open %s: %w", o.out, err)
			}
			return f, f.Close, nil
		})
	}
}

// exportCSV writes the CSV export of o to w.
func exportCSV(ctx context.Context, a *app, db *index.DB, o *exportOptions, w io.Writer) error {
	if o.granularity == "daily" {
		s := newDailyCSV(w)
		if err := exportDaily(ctx, a, db, o, s.write); err != nil {
			return err
		}
		return s.close()
	}
	s := newListingCSV(w)
	if err := exportListings(ctx, a, db, o, s.write); err != nil {
		return err
	}
	return s.close()
}

// Kinds of --out target.
const (
	targetRegular     = iota // a regular file, or none yet: written beside it and renamed
	targetInPlaceFile        // a regular file behind /dev/stdout, /dev/fd/N, /proc: written in place
	targetStream             // a pipe, named pipe or device: spooled
)

// classifyTarget says how path is written. A path under /dev or /proc is
// never renamed over: /dev/stdout is a link, and replacing it would be a
// disaster when run as root.
func classifyTarget(path string) (int, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return targetRegular, nil
	}
	if err != nil {
		return 0, fmt.Errorf("export: %s: %w", path, err)
	}
	if fi.IsDir() {
		return 0, fmt.Errorf("export: %s is a directory (csv and daily parquet write one file)", path)
	}
	if !fi.Mode().IsRegular() {
		return targetStream, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, fmt.Errorf("export: %s: %w", path, err)
	}
	for _, sys := range []string{"/dev/", "/proc/"} {
		if strings.HasPrefix(abs, sys) {
			return targetInPlaceFile, nil
		}
	}
	return targetRegular, nil
}

// spoolSize is the write buffer in front of the spool file.
const spoolSize = 256 << 10

// spoolTo runs fill into an unlinked temporary file in os.TempDir(),
// releases the index, then opens the output with open and copies the spool
// to it. A consumer that reads slowly, or not at all for a while, so never
// holds the index (and with it the writers of `collect`) hostage.
func spoolTo(fill func(w io.Writer) error, idx *openIndex, open func() (io.Writer, func() error, error)) (err error) {
	f, err := os.CreateTemp(os.TempDir(), "listings-export-*")
	if err != nil {
		return fmt.Errorf("export: create spool: %w", err)
	}
	// Unlinked at once where the system allows it (it stays readable
	// through f), so a killed export leaves nothing behind.
	unlinked := os.Remove(f.Name()) == nil
	defer func() {
		f.Close()
		if !unlinked {
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, spoolSize)
	if err := fill(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export: write spool %s: %w", f.Name(), err)
	}
	if err := idx.release(); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("export: read spool %s: %w", f.Name(), err)
	}
	w, closeOut, err := open()
	if err != nil {
		return err
	}
	_, err = io.Copy(w, f)
	if cerr := closeOut(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("export: write output: %w", err)
	}
	return nil
}

// writeAtomic writes path, a regular file or none yet, through a temporary
// file in its directory and renames it into place when fill succeeds.
func writeAtomic(path string, fill func(w io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("export: create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("export: create %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("export: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("export: write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("export: write %s: %w", path, err)
	}
	return nil
}

// exportParquetDir writes the listing Parquet partitions into a fresh
// directory beside o.out and renames it to o.out at the end.
func exportParquetDir(ctx context.Context, a *app, db *index.DB, o *exportOptions) (err error) {
	if ents, err := os.ReadDir(o.out); err == nil {
		if len(ents) > 0 {
			return fmt.Errorf("export: %s is not empty: a parquet export writes a fresh directory (remove it or pick another)", o.out)
		}
		if err := os.Remove(o.out); err != nil {
			return fmt.Errorf("export: replace %s: %w", o.out, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("export: %s: %w", o.out, err)
	}
	parent := filepath.Dir(filepath.Clean(o.out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("export: create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(o.out)+".tmp-*")
	if err != nil {
		return fmt.Errorf("export: create %s: %w", o.out, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	s := &listingParquet{dir: tmp}
	if err := exportListings(ctx, a, db, o, s.write); err != nil {
		s.abort()
		return err
	}
	if err := s.close(); err != nil {
		return err
	}
	s.cut.note(a.stderr)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("export: write %s: %w", o.out, err)
	}
	if err := os.Rename(tmp, o.out); err != nil {
		return fmt.Errorf("export: write %s: %w", o.out, err)
	}
	return nil
}

// listingRow is one row of the listing granularity, with exact prices.
type listingRow struct {
	ObservedAt        time.Time
	Source, ID, GPU   string
	GPUCount          int
	VRAMGB            float64 // per GPU; 0: unknown
	Kind              listings.Kind
	PriceUSD          listings.Price // valid when HasUSD
	HasUSD            bool
	Price             listings.Price // per GPU-hour, in Currency
	Currency          string
	Region            string
	Reliability       float64 // 0..1; negative: unknown
	FirstSeen         time.Time
	LastSeen          time.Time
	DisappearingFloor bool
}

// exportListings walks the ok runs in [o.from, o.to] and calls emit with
// one row per selected listing present in each. Memory is bounded by the
// listings present at once (index.WalkRuns), not by the number of rows.
func exportListings(ctx context.Context, a *app, db *index.DB, o *exportOptions, emit func(*listingRow) error) error {
	minLife := a.cfg.minLife
	if minLife <= 0 {
		minLife = listings.DefaultMinLife
	}
	// lastOK holds, per source, its latest ok run at or before o.to: the
	// last_seen of a presence still going on at o.to.
	lastOK := map[string]time.Time{}
	latest := func(source string) (time.Time, error) {
		if t, ok := lastOK[source]; ok {
			return t, nil
		}
		r, ok, err := db.LatestOK(source, o.to)
		if err != nil {
			return time.Time{}, fmt.Errorf("export: latest ok run of %s: %w", source, err)
		}
		if !ok {
			r.Started = time.Time{}
		}
		lastOK[source] = r.Started
		return r.Started, nil
	}
	var row listingRow
	return db.WalkRuns(o.from, o.to, func(run listings.Run, present []index.RunListing) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if run.Status != listings.RunOK {
			return nil
		}
		last, err := latest(run.Source)
		if err != nil {
			return err
		}
		for i := range present {
			p := &present[i]
			if !o.selects(p.GPU, p.Kind) {
				continue
			}
			row = listingRow{
				ObservedAt:        run.Started,
				Source:            p.Source,
				ID:                p.ID,
				GPU:               p.GPU,
				GPUCount:          p.Attrs.GPUCount,
				VRAMGB:            p.Attrs.VRAMGB,
				Kind:              p.Kind,
				Price:             p.Price,
				Currency:          p.Currency,
				Region:            p.Attrs.Region,
				Reliability:       p.Attrs.Reliability,
				FirstSeen:         p.FirstSeen,
				LastSeen:          presenceLastSeen(p, last),
				DisappearingFloor: disappearingFloor(p, o.to, minLife),
			}
			if row.Currency == "" {
				row.Currency = listings.USD
			}
			row.PriceUSD, row.HasUSD = stats.Convert(p.Price, row.Currency, run.FX)
			if err := emit(&row); err != nil {
				return err
			}
		}
		return nil
	})
}

// presenceLastSeen is the last ok run of p's presence at or before the
// export's end, given lastOK, its source's latest ok run at or before that
// end. A presence is continuous: every ok run of its source from first_seen
// to its last_seen listed it, so the presence was seen at lastOK unless it
// had ended before.
func presenceLastSeen(p *index.RunListing, lastOK time.Time) time.Time {
	if p.LastSeen.IsZero() || (!lastOK.IsZero() && p.LastSeen.After(lastOK)) {
		return lastOK
	}
	return p.LastSeen
}

// disappearingFloor says whether p's presence ended by to as a disappearing
// floor listing (DESIGN §4): it was a floor listing (marked before it
// vanished, the rule of the index's snapshot) and lived less than minLife.
func disappearingFloor(p *index.RunListing, to time.Time, minLife time.Duration) bool {
	if p.GoneAt.IsZero() || p.GoneAt.After(to) {
		return false
	}
	if p.PresenceFloorAt.IsZero() || p.PresenceFloorAt.After(p.GoneAt) {
		return false
	}
	return p.LastSeen.Sub(p.FirstSeen) < minLife
}

// exportDaily calls emit with the statistics rows of each UTC day in
// [o.from, o.to] that has an ok run, as of the day's last ok run.
func exportDaily(ctx context.Context, a *app, db *index.DB, o *exportOptions, emit func(day time.Time, r *listings.Row) error) error {
	runs, err := db.Runs("", o.from)
	if err != nil {
		return fmt.Errorf("export: read runs: %w", err)
	}
	var asOfs []time.Time // the last ok run of each day, in day order
	for _, r := range runs {
		if r.Status != listings.RunOK || r.Started.Before(o.from) || r.Started.After(o.to) {
			continue
		}
		t := r.Started.UTC()
		if n := len(asOfs); n > 0 && sameDay(asOfs[n-1], t) {
			if t.After(asOfs[n-1]) {
				asOfs[n-1] = t
			}
			continue
		}
		asOfs = append(asOfs, t)
	}
	// Runs come in time order, but sort to be safe: days must not repeat.
	sort.Slice(asOfs, func(i, j int) bool { return asOfs[i].Before(asOfs[j]) })
	params := a.statsParams(0)
	// Rows in a currency without an FX rate are left out: the key is
	// (date, gpu, kind), one row each, in USD.
	skipped := map[string]int{}
	for _, t := range asOfs {
		if err := ctx.Err(); err != nil {
			return err
		}
		snap, err := db.Snapshot(index.SnapshotQuery{AsOf: t, MaxAge: a.cfg.maxAge, GPUs: o.gpus, Kinds: o.kinds})
		if err != nil {
			return fmt.Errorf("export: market as of %s: %w", t.Format(time.RFC3339), err)
		}
		day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		for _, r := range stats.Rows(snap, params) {
			if r.Listings == 0 || !o.selects(r.GPU, r.Kind) {
				continue
			}
			if r.Currency != listings.USD {
				skipped[r.Currency]++
				continue
			}
			r.AsOf = t
			if err := emit(day, &r); err != nil {
				return err
			}
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintln(a.stderr, skippedNote(skipped))
	}
	return nil
}

// skippedNote is the one stderr note about the daily rows left out, by
// currency: "export: 2 daily rows in EUR left out: configure fx to include
// them".
func skippedNote(skipped map[string]int) string {
	n := 0
	var curs []string
	for c, k := range skipped {
		n += k
		curs = append(curs, c)
	}
	sort.Strings(curs)
	rows := "rows"
	if n == 1 {
		rows = "row"
	}
	return fmt.Sprintf("export: %d daily %s in %s left out: configure fx to include them", n, rows, strings.Join(curs, ", "))
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.UTC().Date()
	by, bm, bd := b.UTC().Date()
	return ay == by && am == bm && ad == bd
}

// CSV cell formats: RFC 3339 UTC times, plain decimal prices, empty for
// unknown.

// csvTime is t in RFC 3339 UTC with as many fractional digits as it needs
// (none for whole seconds: 2026-11-28T03:00:00Z), so it parses back to the
// same instant: `median --as-of` given a daily row's as_of sees that run.
func csvTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func csvFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// memo caches the formatted cells of a column: times, prices and
// attributes repeat across rows. It is bounded, so memory stays constant.
type memo[K comparable] struct {
	m      map[K]string
	format func(K) string
}

// memoSize bounds each memo; a full memo starts afresh.
const memoSize = 4096

func newMemo[K comparable](format func(K) string) *memo[K] {
	return &memo[K]{m: make(map[K]string), format: format}
}

func (c *memo[K]) get(k K) string {
	if s, ok := c.m[k]; ok {
		return s
	}
	if len(c.m) >= memoSize {
		clear(c.m)
	}
	s := c.format(k)
	c.m[k] = s
	return s
}

// csvSink is a CSV writer that remembers its first error: after it, every
// write fails with that error, and close reports it.
type csvSink struct {
	w   *csv.Writer
	rec []string
	err error
}

func newCSVSink(w io.Writer, header []string) csvSink {
	s := csvSink{w: csv.NewWriter(w), rec: make([]string, len(header))}
	s.err = s.w.Write(header)
	return s
}

// failed reports an earlier error, wrapped.
func (s *csvSink) failed() error {
	if s.err != nil {
		return fmt.Errorf("export: write csv: %w", s.err)
	}
	return nil
}

// put writes the record s.rec holds.
func (s *csvSink) put() error {
	if err := s.w.Write(s.rec); err != nil {
		s.err = err
		return fmt.Errorf("export: write csv: %w", err)
	}
	return nil
}

func (s *csvSink) close() error {
	if s.err == nil {
		s.w.Flush()
		s.err = s.w.Error()
	}
	return s.failed()
}

// listingCSV writes listing rows as CSV.
type listingCSV struct {
	csvSink
	times  *memo[int64] // Unix nanoseconds -> RFC 3339
	prices *memo[listings.Price]
	floats *memo[float64]
}

func newListingCSV(w io.Writer) *listingCSV {
	return &listingCSV{
		csvSink: newCSVSink(w, listingColumns),
		times:   newMemo(func(ns int64) string { return csvTime(time.Unix(0, ns)) }),
		prices:  newMemo(listings.Price.Decimal),
		floats:  newMemo(csvFloat),
	}
}

func (s *listingCSV) write(r *listingRow) error {
	if err := s.failed(); err != nil {
		return err
	}
	c := s.rec
	c[0] = s.times.get(r.ObservedAt.UnixNano())
	c[1] = csvText(r.Source)
	c[2] = csvText(r.ID)
	c[3] = csvText(r.GPU)
	c[4] = strconv.Itoa(r.GPUCount)
	c[5] = ""
	if r.VRAMGB > 0 {
		c[5] = s.floats.get(r.VRAMGB)
	}
	c[6] = string(r.Kind)
	c[7] = ""
	if r.HasUSD {
		c[7] = s.prices.get(r.PriceUSD)
	}
	c[8] = s.prices.get(r.Price)
	c[9] = csvText(r.Currency)
	c[10] = csvText(r.Region)
	c[11] = ""
	if r.Reliability >= 0 {
		c[11] = s.floats.get(r.Reliability)
	}
	c[12] = s.times.get(r.FirstSeen.UnixNano())
	c[13] = ""
	if !r.LastSeen.IsZero() {
		c[13] = s.times.get(r.LastSeen.UnixNano())
	}
	c[14] = strconv.FormatBool(r.DisappearingFloor)
	return s.put()
}

// dailyCSV writes daily rows as CSV.
type dailyCSV struct{ csvSink }

func newDailyCSV(w io.Writer) *dailyCSV { return &dailyCSV{newCSVSink(w, dailyColumns)} }

func (s *dailyCSV) write(day time.Time, r *listings.Row) error {
	if err := s.failed(); err != nil {
		return err
	}
	durable := ""
	if r.DurableFloor != nil {
		durable = r.DurableFloor.Decimal()
	}
	c := s.rec
	c[0], c[1], c[2] = day.Format(time.DateOnly), csvText(r.GPU), string(r.Kind)
	c[3] = strconv.Itoa(r.Listings)
	c[4], c[5], c[6], c[7], c[8] = r.Median.Decimal(), r.P10.Decimal(), r.P25.Decimal(), r.P75.Decimal(), r.P90.Decimal()
	c[9], c[10] = r.Floor.Decimal(), durable
	c[11] = strconv.Itoa(r.Disappearing)
	c[12] = csvText(r.Currency)
	c[13] = csvTime(r.AsOf)
	return s.put()
}

// listingRecord is the Parquet schema of the listing granularity.
type listingRecord struct {
	ObservedAt        time.Time  `parquet:"observed_at,timestamp(microsecond:utc)"`
	Source            string     `parquet:"source,dict"`
	ListingID         string     `parquet:"listing_id"`
	GPU               string     `parquet:"gpu,dict"`
	GPUCount          int32      `parquet:"gpu_count"`
	VRAMGB            *float64   `parquet:"vram_gb,optional"`
	Kind              string     `parquet:"kind,dict"`
	PriceUSD          *float64   `parquet:"price_usd_per_gpu_hour,optional"`
	PriceOriginal     float64    `parquet:"price_original"`
	Currency          string     `parquet:"currency,dict"`
	Region            *string    `parquet:"region,optional"`
	Reliability       *float64   `parquet:"reliability,optional"`
	FirstSeen         time.Time  `parquet:"first_seen,timestamp(microsecond:utc)"`
	LastSeen          *time.Time `parquet:"last_seen,optional,timestamp(microsecond:utc)"`
	DisappearingFloor bool       `parquet:"disappearing_floor"`
}

// parquetBatch is the number of rows handed to a Parquet writer at once.
const parquetBatch = 1024

// listingParquet writes listing rows into day partitions under dir, one
// writer open at a time (rows arrive in time order).
type listingParquet struct {
	dir  string
	day  string
	f    *os.File
	w    *parquet.GenericWriter[listingRecord]
	n    int
	recs [parquetBatch]listingRecord
	// Storage the optional fields of recs point into.
	vram, usd, rel [parquetBatch]float64
	region         [parquetBatch]string
	last           [parquetBatch]time.Time
	cut            subMicro
}

// subMicro counts the times a TIMESTAMP(MICROS) column cuts short. The
// Parquet keeps microseconds (Spark does not read TIMESTAMP(NANOS)); collect
// records whole seconds, so the count is zero unless an index holds finer
// times, and then the export says so rather than losing them silently.
type subMicro int

func (n *subMicro) add(t time.Time) {
	if t.Nanosecond()%1000 != 0 {
		*n++
	}
}

func (n subMicro) note(w io.Writer) {
	if n > 0 {
		fmt.Fprintf(w, "export: %d parquet timestamps cut to the microsecond (TIMESTAMP(MICROS)); the csv keeps them whole\n", int(n))
	}
}

func parquetOptions() []parquet.WriterOption {
	return []parquet.WriterOption{
		parquet.Compression(&parquet.Snappy),
		parquet.MaxRowsPerRowGroup(rowGroupRows),
		parquet.CreatedBy("listings", version, ""),
	}
}

func (s *listingParquet) write(r *listingRow) error {
	day := r.ObservedAt.UTC().Format(time.DateOnly)
	if day != s.day {
		if err := s.closeFile(); err != nil {
			return err
		}
		part := filepath.Join(s.dir, "dt="+day)
		if err := os.MkdirAll(part, 0o755); err != nil {
			return fmt.Errorf("export: create %s: %w", part, err)
		}
		f, err := os.Create(filepath.Join(part, "part-0.parquet"))
		if err != nil {
			return fmt.Errorf("export: create partition %s: %w", day, err)
		}
		s.day, s.f = day, f
		s.w = parquet.NewGenericWriter[listingRecord](f, parquetOptions()...)
	}
	i := s.n
	rec := &s.recs[i]
	*rec = listingRecord{
		ObservedAt:        r.ObservedAt.UTC(),
		Source:            r.Source,
		ListingID:         r.ID,
		GPU:               r.GPU,
		GPUCount:          int32(r.GPUCount),
		Kind:              string(r.Kind),
		PriceOriginal:     r.Price.Float(),
		Currency:          r.Currency,
		FirstSeen:         r.FirstSeen.UTC(),
		DisappearingFloor: r.DisappearingFloor,
	}
	if r.VRAMGB > 0 {
		s.vram[i] = r.VRAMGB
		rec.VRAMGB = &s.vram[i]
	}
	if r.HasUSD {
		s.usd[i] = r.PriceUSD.Float()
		rec.PriceUSD = &s.usd[i]
	}
	if r.Region != "" {
		s.region[i] = r.Region
		rec.Region = &s.region[i]
	}
	if r.Reliability >= 0 {
		s.rel[i] = r.Reliability
		rec.Reliability = &s.rel[i]
	}
	if !r.LastSeen.IsZero() {
		s.last[i] = r.LastSeen.UTC()
		rec.LastSeen = &s.last[i]
	}
	s.cut.add(r.ObservedAt)
	s.cut.add(r.FirstSeen)
	s.cut.add(r.LastSeen)
	s.n++
	if s.n == parquetBatch {
		return s.flushBatch()
	}
	return nil
}

func (s *listingParquet) flushBatch() error {
	if s.n == 0 {
		return nil
	}
	_, err := s.w.Write(s.recs[:s.n])
	s.n = 0
	if err != nil {
		return fmt.Errorf("export: write partition %s: %w", s.day, err)
	}
	return nil
}

// closeFile finishes the open partition file, if any.
func (s *listingParquet) closeFile() error {
	if s.f == nil {
		return nil
	}
	err := s.flushBatch()
	if err == nil {
		if err = s.w.Close(); err != nil {
			err = fmt.Errorf("export: write partition %s: %w", s.day, err)
		}
	}
	if cerr := s.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("export: write partition %s: %w", s.day, cerr)
	}
	s.f, s.w = nil, nil
	return err
}

func (s *listingParquet) close() error { return s.closeFile() }

// abort closes the open file without finishing it.
func (s *listingParquet) abort() {
	if s.f != nil {
		s.f.Close()
		s.f, s.w = nil, nil
	}
}

// dailyRecord is the Parquet schema of the daily granularity.
type dailyRecord struct {
	Date         int32     `parquet:"date,date"` // days since 1970-01-01
	GPU          string    `parquet:"gpu,dict"`
	Kind         string    `parquet:"kind,dict"`
	Listings     int64     `parquet:"listings"`
	Median       float64   `parquet:"median"`
	P10          float64   `parquet:"p10"`
	P25          float64   `parquet:"p25"`
	P75          float64   `parquet:"p75"`
	P90          float64   `parquet:"p90"`
	Floor        float64   `parquet:"floor"`
	DurableFloor *float64  `parquet:"durable_floor,optional"`
	Disappearing int64     `parquet:"disappearing"`
	Currency     string    `parquet:"currency,dict"`
	AsOf         time.Time `parquet:"as_of,timestamp(microsecond:utc)"`
}

// dailyParquet writes daily rows into one Parquet file.
type dailyParquet struct {
	w   *parquet.GenericWriter[dailyRecord]
	cut subMicro
}

func newDailyParquet(w io.Writer) *dailyParquet {
	return &dailyParquet{w: parquet.NewGenericWriter[dailyRecord](w, parquetOptions()...)}
}

func (s *dailyParquet) write(day time.Time, r *listings.Row) error {
	rec := dailyRecord{
		Date: int32(day.Unix() / 86400), GPU: r.GPU, Kind: string(r.Kind), Listings: int64(r.Listings),
		Median: r.Median.Float(), P10: r.P10.Float(), P25: r.P25.Float(), P75: r.P75.Float(), P90: r.P90.Float(),
		Floor: r.Floor.Float(), Disappearing: int64(r.Disappearing), Currency: r.Currency, AsOf: r.AsOf.UTC(),
	}
	if r.DurableFloor != nil {
		f := r.DurableFloor.Float()
		rec.DurableFloor = &f
	}
	s.cut.add(r.AsOf)
	if _, err := s.w.Write([]dailyRecord{rec}); err != nil {
		return fmt.Errorf("export: write parquet: %w", err)
	}
	return nil
}

func (s *dailyParquet) close() error {
	if err := s.w.Close(); err != nil {
		return fmt.Errorf("export: write parquet: %w", err)
	}
	return nil
}

// note prints the stderr note of the timestamps the file cut short.
func (s *dailyParquet) note(w io.Writer) { s.cut.note(w) }
