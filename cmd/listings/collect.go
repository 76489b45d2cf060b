package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/listings-dev/listings"
	"github.com/listings-dev/listings/index"
	"github.com/listings-dev/listings/scrapers"
	"github.com/listings-dev/listings/stats"
)

func init() { register("collect", cmdCollect) }

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// collectOptions is one collection of several sources.
type collectOptions struct {
	sources    []string          // empty: every enabled source
	urls       map[string]string // --source-url overrides
	observed   time.Time         // zero: now
	timeout    time.Duration     // per source; 0: config or 2m
	transport  http.RoundTripper // tests and the demo
	hostDelay  time.Duration     // between requests to one host; 0: the default, <0: none (the demo's loopback server)
	getenv     func(string) string
	progress   progressFunc
	acceptDrop bool // record a run even if its listings collapsed
}

// progressFunc is told when a source starts and ends.
type progressFunc func(source string, done bool, run *listings.Run)

func cmdCollect(ctx context.Context, a *app, args []string) error {
	fs := a.flagSet("collect", "[--source NAME]... [--source-url NAME=URL]... [--observed-at TIME] [--timeout DUR] [--json]")
	var srcs, urls multiFlag
	fs.Var(&srcs, "source", "a source to collect (repeatable; default every enabled source)")
	fs.Var(&urls, "source-url", "NAME=URL: override a source's endpoint (repeatable; tests and mirrors)")
	observed := fs.String("observed-at", "", "record the runs as of this RFC 3339 time (replaying archived pages)")
	timeout := fs.String("timeout", "", "deadline per source (default 2m, or the source's config timeout)")
	asJSON := fs.Bool("json", false, "print the runs as JSON")
	acceptDrop := fs.Bool("accept-drop", false, "record a run even if it has under a quarter of the listings of the source's last ok run")
	if err := parse(fs, args); err != nil {
		return err
	}
	o := collectOptions{sources: srcs, urls: map[string]string{}, getenv: a.getenv}
	for _, u := range urls {
		name, url, ok := strings.Cut(u, "=")
		if !ok || name == "" || url == "" {
			return usageErrorf("collect: --source-url wants NAME=URL, got %q", u)
		}
		o.urls[name] = url
	}
	if *observed != "" {
		t, err := parseTime(*observed)
		if err != nil {
			return usageErrorf("collect: --observed-at: %v", err)
		}
		// A run dated in the future would make every real run after it
		// "out of order" until that date: refuse it.
		if t.After(a.now().Add(5 * time.Minute)) {
			return usageErrorf("collect: --observed-at %s is in the future", t.Format(time.RFC3339))
		}
		o.observed = t
	}
	o.acceptDrop = *acceptDrop
	if *timeout != "" {
		d, err := parseDuration(*timeout)
		if err != nil || d <= 0 {
			return usageErrorf("collect: --timeout: want a positive duration")
		}
		o.timeout = d
	}
	if !*asJSON && isTerminal(a.stderr) {
		o.progress = newProgress(a.stderr)
	}
	runs, notes, err := a.collect(ctx, o)
	if runs == nil && err != nil {
		return err
	}
	if *asJSON {
		if err := writeJSON(a.stdout, runRows(runs)); err != nil {
			return err
		}
	} else {
		printCollect(a.stdout, runs)
		for _, n := range notes {
			fmt.Fprintf(a.stdout, "note: %s\n", n)
		}
	}
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.Status != listings.RunOK {
			return errSilent
		}
	}
	return nil
}

// collect runs the chosen sources concurrently, each with its own deadline,
// client and logger, and writes each run to the index in its own
// transaction as it finishes: one failing source never stops another from
// committing. It returns the runs in source order and notes (skipped sources).
func (a *app) collect(ctx context.Context, o collectOptions) ([]listings.Run, []string, error) {
	getenv := o.getenv
	if getenv == nil {
		getenv = a.getenv
	}
	getenv, err := secretFiles(getenv)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	names := o.sources
	explicit := len(names) > 0
	if !explicit {
		for _, n := range a.sourceNames() {
			if a.cfg.sourceEnabled(n, scrapers.EnabledByDefault(n) || a.cfg.Source[n].Kind != "") {
				names = append(names, n)
			}
		}
	}
	var srcs []scrapers.Source
	for _, n := range names {
		s, err := a.source(n)
		if err != nil {
			return nil, nil, err
		}
		if n == "lambda" && getenv("LAMBDA_API_KEY") == "" && !explicit {
			notes = append(notes, "lambda skipped: set LAMBDA_API_KEY to collect it")
			continue
		}
		srcs = append(srcs, s)
	}
	for n := range o.urls {
		if _, err := a.source(n); err != nil {
			return nil, nil, err
		}
	}
	// Runs kept while the index was locked go in first, in time order, so
	// the runs collected now do not overtake them.
	replayed, err := a.replayPending()
	if err != nil {
		return nil, nil, err
	}
	notes = append(notes, replayed...)
	// Runs start on whole seconds: every time printed or exported (RFC 3339)
	// then names the run exactly, and `--as-of` with a printed time finds it.
	now := o.observed
	if now.IsZero() {
		now = a.now().UTC()
	}
	now = now.Truncate(time.Second)
	type done struct {
		i   int
		run listings.Run
		ls  []listings.Listing
	}
	results := make(chan done)
	var wg sync.WaitGroup
	for i, s := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ro := a.runOptions(s.Name(), o, now, getenv)
			if o.progress != nil {
				o.progress(s.Name(), false, nil)
			}
			run, ls := scrapers.Collect(ctx, s, ro)
			if len(run.FX) > 0 {
				run.FXDate = a.cfg.FXDate
			}
			results <- done{i, run, ls}
		}()
	}
	go func() { wg.Wait(); close(results) }()
	runs := make([]listings.Run, len(srcs))
	var writeErr error
	for d := range results {
		if err := a.writeRun(&d.run, d.ls, o.acceptDrop); err != nil {
			d.run.Status = listings.RunFailed
			d.run.Error = err.Error()
			if writeErr == nil {
				writeErr = err
			}
		}
		runs[d.i] = d.run
		if o.progress != nil {
			o.progress(d.run.Source, true, &runs[d.i])
		}
	}
	return runs, notes, writeErr
}

func (a *app) runOptions(name string, o collectOptions, now time.Time, getenv func(string) string) scrapers.RunOptions {
	sc := a.cfg.Source[name]
	timeout := o.timeout
	if timeout == 0 && sc.Timeout != "" {
		timeout, _ = parseDuration(sc.Timeout)
	}
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	url := sc.URL
	if u, ok := o.urls[name]; ok {
		url = u
	}
	contact := a.cfg.Contact
	if contact == "" {
		contact = "https://github.com/listings-dev/listings"
	}
	var options map[string]any
	if sc.Kind != "" || sc.Limit > 0 {
		options = sc.options()
	}
	delay := o.hostDelay
	if delay == 0 && sc.RPS > 0 {
		// requests_per_second slows a source below the default of about
		// one request a second per host (a delay plus jitter after each).
		delay = time.Duration(float64(time.Second) / sc.RPS)
	}
	return scrapers.RunOptions{
		URL:      url,
		Now:      now,
		Timeout:  timeout,
		PriceCap: a.cfg.priceCap,
		Getenv:   getenv,
		Log:      slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("source", name),
		Options:  options,
		FX:       a.cfg.fx,
		Client: scrapers.ClientOptions{
			UserAgent: scrapers.UserAgent(version, contact),
			Transport: o.transport,
			HostDelay: delay,
		},
	}
}

// writeWait is how long a collection waits for the index's lock: a
// reader (a query, an export) holds a shared lock while it runs.
var writeWait = time.Minute

// collapsed says whether a run's listing count fell so far below the last
// ok run's that the response is more likely broken (a cut-off page, a
// changed API filter) than the market: recording it would mark most of the
// market disappeared and move the medians. Small sources are left alone.
func collapsed(now, last int) bool {
	return last >= 20 && now*4 < last
}

// options turns a source table into the map a config-defined source reads.
func (s SourceConfig) options() map[string]any {
	return map[string]any{
		"kind": s.Kind, "table": s.Table, "table_header": s.TableHeader,
		"gpu_column": s.GPUColumn, "count_column": s.CountColumn, "price_column": s.PriceColumn,
		"vram_column": s.VRAMColumn, "id_column": s.IDColumn, "region_column": s.RegionCol,
		"unit": s.Unit, "per_gpu": s.PerGPU, "currency": s.Currency, "limit": s.Limit,
	}
}

// writeRun commits one run: its own open, transaction and close, so no
// handle is held between jobs (DESIGN §3 invariant 3).
func (a *app) writeRun(run *listings.Run, ls []listings.Listing, acceptDrop bool) error {
	db, err := index.Open(a.dbPath, index.Options{MaxAge: a.cfg.maxAge, Timeout: writeWait})
	if errors.Is(err, index.ErrBusy) {
		// Lose nothing: keep the run for the next collection to write.
		where, serr := a.spool(*run, ls)
		if serr != nil {
			return fmt.Errorf("index locked by another process for %s (a long export, or another collection): the %s run was not recorded, and keeping it failed: %v", writeWait, run.Source, serr)
		}
		return fmt.Errorf("index locked by another process for %s (a long export, or another collection): the %s run waits in %s for the next collect", writeWait, run.Source, where)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	if run.Status == listings.RunOK && !acceptDrop {
		last, ok, err := db.LatestOK(run.Source, run.Started.Add(-time.Nanosecond))
		if err != nil {
			return err
		}
		if ok && collapsed(run.Listings, last.Listings) {
			run.Status = listings.RunFailed
			run.Error = fmt.Sprintf("%d listings, under a quarter of the last ok run's %d (%s): API changed or response cut short? (collect --accept-drop records it)",
				run.Listings, last.Listings, last.Started.Format(time.RFC3339))
			ls = nil
		}
	}
	res, err := db.WriteRun(*run, ls, stats.Derive(stats.Params{MinLife: a.cfg.minLife}, run.Source))
	if err != nil {
		return fmt.Errorf("write %s run: %w", run.Source, err)
	}
	if res.Duplicate {
		run.Notes = append(run.Notes, "already in the index: nothing changed")
	}
	return nil
}

func printCollect(w anyWriter, runs []listings.Run) {
	t := newTable("SOURCE", "STATUS", "LISTINGS", "REJECTED", "DURATION", "ERROR")
	for _, r := range runs {
		errText := r.Error
		if r.Status == listings.RunOK && len(r.Notes) > 0 {
			errText = strings.Join(r.Notes, "; ")
		}
		t.row(r.Source, string(r.Status), fmt.Sprint(r.Listings), fmt.Sprint(r.Rejected()),
			r.Finished.Sub(r.Started).Round(time.Millisecond).String(), truncate(errText, 200))
	}
	t.write(w)
	for _, r := range runs {
		if len(r.Rejects) > 0 {
			fmt.Fprintf(w, "rejected rows of %s: %s\n", r.Source, r.RejectSummary())
		}
		if len(r.Unknown) > 0 {
			n := 0
			for _, c := range r.Unknown {
				n += c
			}
			fmt.Fprintf(w, "unknown GPU names at %s: %d listings under %d names (kept, marked unknown)\n", r.Source, n, len(r.Unknown))
		}
	}
}

// sourceNames lists the registered sources and the config's own
// (html-table) sources, sorted.
func (a *app) sourceNames() []string {
	names := scrapers.Names()
	for n, sc := range a.cfg.Source {
		if _, ok := scrapers.Get(n); !ok && sc.Kind != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// source returns the registered source called name, or builds the
// config-defined source of that name.
func (a *app) source(name string) (scrapers.Source, error) {
	if s, ok := scrapers.Get(name); ok {
		return s, nil
	}
	sc, ok := a.cfg.Source[name]
	switch {
	case !ok || sc.Kind == "":
		return nil, usageErrorf("unknown source %q (sources: %s)", name, strings.Join(a.sourceNames(), ", "))
	case sc.Kind != "html-table":
		return nil, fmt.Errorf("config: source.%s: unknown kind %q (want html-table)", name, sc.Kind)
	}
	s, err := scrapers.NewHTMLTable(name, scrapers.HTMLTableConfig{
		URL: sc.URL, Table: sc.Table, TableHeader: sc.TableHeader,
		GPUColumn: sc.GPUColumn, CountColumn: sc.CountColumn, PriceColumn: sc.PriceColumn,
		VRAMColumn: sc.VRAMColumn, IDColumn: sc.IDColumn, RegionColumn: sc.RegionCol,
		Unit: sc.Unit, PerGPU: sc.PerGPU, Currency: sc.Currency,
	})
	if err != nil {
		return nil, fmt.Errorf("config: source.%s: %w", name, err)
	}
	return s, nil
}

// pendingRun is a collected run kept on disk because the index was locked.
type pendingRun struct {
	Run      listings.Run       `json:"run"`
	Listings []listings.Listing `json:"listings"`
}

// pendingDir holds the runs waiting to be written: beside the index, so a
// user who moves the index with --db keeps its pending runs with it.
func (a *app) pendingDir() string { return a.dbPath + ".pending" }

// spool keeps a run that could not be written, for the next collect.
func (a *app) spool(run listings.Run, ls []listings.Listing) (string, error) {
	dir := a.pendingDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	b, err := json.Marshal(pendingRun{run, ls})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("%020d-%s.json", run.Started.UnixNano(), run.Source))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

// replayPending writes the kept runs, oldest first, removing each once it
// is in the index. A run the index refuses (out of order) is renamed
// .refused and reported; a lock still held leaves the rest for next time.
func (a *app) replayPending() ([]string, error) {
	entries, err := os.ReadDir(a.pendingDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var notes []string
	for _, e := range entries { // ReadDir sorts by name: by start time
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(a.pendingDir(), e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return notes, err
		}
		var p pendingRun
		if err := json.Unmarshal(b, &p); err != nil {
			os.Rename(path, path+".refused")
			notes = append(notes, fmt.Sprintf("pending run %s is unreadable (%v): kept as %s.refused", e.Name(), err, path))
			continue
		}
		err = a.writeRun(&p.Run, p.Listings, false)
		switch {
		case err != nil && strings.Contains(err.Error(), "index locked"):
			return append(notes, "pending runs still wait: the index is locked"), nil
		case err != nil:
			os.Rename(path, path+".refused")
			notes = append(notes, fmt.Sprintf("pending %s run of %s refused by the index (%v): kept as %s.refused", p.Run.Source, p.Run.Started.Format(time.RFC3339), err, path))
		default:
			os.Remove(path)
			notes = append(notes, fmt.Sprintf("wrote the %s run of %s kept while the index was locked (%s)", p.Run.Source, p.Run.Started.Format(time.RFC3339), p.Run.Status))
		}
	}
	return notes, nil
}

// secretKeys are the API keys a source reads (DESIGN §7).
var secretKeys = []string{"VAST_API_KEY", "RUNPOD_API_KEY", "LAMBDA_API_KEY"}

// secretFiles lets each key come from a file instead of the environment:
// NAME_FILE names a file readable by its owner alone (0600 or 0400), whose
// trimmed content is the key. A file others can read is refused: a key
// must not sit where other users see it.
func secretFiles(getenv func(string) string) (func(string) string, error) {
	keys := map[string]string{}
	for _, k := range secretKeys {
		path := getenv(k + "_FILE")
		if path == "" || getenv(k) != "" {
			continue
		}
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("%s_FILE: %w", k, err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("%s_FILE %s is readable by others (mode %v): chmod 600 it", k, path, st.Mode().Perm())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s_FILE: %w", k, err)
		}
		keys[k] = strings.TrimSpace(string(b))
	}
	if len(keys) == 0 {
		return getenv, nil
	}
	return func(k string) string {
		if v, ok := keys[k]; ok {
			return v
		}
		return getenv(k)
	}, nil
}
