package index

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	listings "github.com/listings-dev/listings"
)

// series writes a small two-source market:
//   - vastai, daily at days 0..3: 1 (4090 on-demand 0.40, then 0.45 from
//     day 2), 1 interruptible (4090, 0.20), 2 (H100 SXM 2.00, days 0..1);
//     a failed run at day 1 + 12h.
//   - lambda, one ok run at day 0 + 1h: h (H100 SXM 2.49).
func series(tb testing.TB, db *DB) {
	tb.Helper()
	v1 := offer(tb, "vastai", "1", "RTX 4090", listings.OnDemand, "0.40")
	v1b := offer(tb, "vastai", "1", "RTX 4090", listings.OnDemand, "0.45")
	v1i := offer(tb, "vastai", "1", "RTX 4090", listings.Interruptible, "0.20")
	v2 := offer(tb, "vastai", "2", "H100 SXM", listings.OnDemand, "2.00")
	lh := offer(tb, "lambda", "h", "H100 SXM", listings.OnDemand, "2.49")
	mustWrite(tb, db, okRun("vastai", at(0)), []listings.Listing{v1, v1i, v2}, floorDeriver)
	mustWrite(tb, db, okRun("lambda", at(0).Add(time.Hour)), []listings.Listing{lh}, floorDeriver)
	mustWrite(tb, db, okRun("vastai", at(1)), []listings.Listing{v1, v1i, v2}, floorDeriver)
	mustWrite(tb, db, failedRun("vastai", at(1).Add(12*time.Hour)), nil, floorDeriver)
	mustWrite(tb, db, okRun("vastai", at(2)), []listings.Listing{v1b, v1i}, floorDeriver)
	mustWrite(tb, db, okRun("vastai", at(3)), []listings.Listing{v1b, v1i}, floorDeriver)
}

// presences renders a snapshot's listings as "source/id/kind@price".
func presences(snap *listings.Snapshot) string {
	var b []string
	for _, p := range snap.Present {
		b = append(b, p.Source+"/"+p.ID+"/"+string(p.Kind)+"@"+p.Price.Decimal())
	}
	return strings.Join(b, " ")
}

func TestSnapshot(t *testing.T) {
	db := mustOpen(t)
	series(t, db)
	tests := []struct {
		name    string
		q       SnapshotQuery
		present string
		runs    string // fresh sources
		stale   string
	}{
		{"day 0 vast only", SnapshotQuery{AsOf: at(0)},
			"vastai/2/on-demand@2.00 vastai/1/interruptible@0.20 vastai/1/on-demand@0.40", "vastai", ""},
		{"day 0 + 2h", SnapshotQuery{AsOf: at(0).Add(2 * time.Hour)},
			"vastai/2/on-demand@2.00 lambda/h/on-demand@2.49 vastai/1/interruptible@0.20 vastai/1/on-demand@0.40", "lambda vastai", ""},
		{"day 1 + 14h, failed run ignored, lambda 37h old", SnapshotQuery{AsOf: at(1).Add(14 * time.Hour)},
			"vastai/2/on-demand@2.00 vastai/1/interruptible@0.20 vastai/1/on-demand@0.40", "vastai", "lambda"},
		{"day 1 + 14h, long max age", SnapshotQuery{AsOf: at(1).Add(14 * time.Hour), MaxAge: 72 * time.Hour},
			"vastai/2/on-demand@2.00 lambda/h/on-demand@2.49 vastai/1/interruptible@0.20 vastai/1/on-demand@0.40", "lambda vastai", ""},
		{"day 1 + 14h, no max age", SnapshotQuery{AsOf: at(1).Add(14 * time.Hour), MaxAge: -1},
			"vastai/2/on-demand@2.00 lambda/h/on-demand@2.49 vastai/1/interruptible@0.20 vastai/1/on-demand@0.40", "lambda vastai", ""},
		{"day 2 new price", SnapshotQuery{AsOf: at(2)},
			"vastai/1/interruptible@0.20 vastai/1/on-demand@0.45", "vastai", "lambda"},
		{"day 3 gpu filter", SnapshotQuery{AsOf: at(3), GPUs: []string{"RTX 4090"}},
			"vastai/1/interruptible@0.20 vastai/1/on-demand@0.45", "vastai", "lambda"},
		{"day 3 kind filter", SnapshotQuery{AsOf: at(3), Kinds: []listings.Kind{listings.OnDemand}},
			"vastai/1/on-demand@0.45", "vastai", "lambda"},
		{"day 3 h100 none", SnapshotQuery{AsOf: at(3), GPUs: []string{"H100 SXM"}}, "", "vastai", "lambda"},
		{"day 9 all stale", SnapshotQuery{AsOf: at(9)}, "", "", "lambda vastai"},
		{"before everything", SnapshotQuery{AsOf: at(-1)}, "", "", ""},
	}
	for _, tt := range tests {
		snap, err := db.Snapshot(tt.q)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := presences(snap); got != tt.present {
			t.Errorf("%s: present = %q, want %q", tt.name, got, tt.present)
		}
		var fresh, stale []string
		for _, src := range []string{"lambda", "vastai"} {
			if _, ok := snap.Runs[src]; ok {
				fresh = append(fresh, src)
			}
		}
		for _, r := range snap.Stale {
			stale = append(stale, r.Source)
		}
		if got := strings.Join(fresh, " "); got != tt.runs {
			t.Errorf("%s: fresh sources = %q, want %q", tt.name, got, tt.runs)
		}
		if got := strings.Join(stale, " "); got != tt.stale {
			t.Errorf("%s: stale sources = %q, want %q", tt.name, got, tt.stale)
		}
		for _, p := range snap.Present {
			if r := snap.Runs[p.Source]; !p.RunStarted.Equal(r.Started) {
				t.Errorf("%s: %s/%s RunStarted = %v, want %v", tt.name, p.Source, p.ID, p.RunStarted, r.Started)
			}
		}
	}
}

func TestSnapshotLastListed(t *testing.T) {
	db := mustOpen(t)
	series(t, db)
	snap, err := db.Snapshot(SnapshotQuery{AsOf: at(3)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		gpu  string
		kind listings.Kind
		want time.Time
	}{
		{"RTX 4090", listings.OnDemand, at(3)},
		{"RTX 4090", listings.Interruptible, at(3)},
		// H100 rows: the last run with listings was vastai's day 1 run,
		// where lambda's day-0 run was still fresh: LastOKRun is the newest.
		{"H100 SXM", listings.OnDemand, at(1)},
	}
	for _, tt := range tests {
		if got := snap.LastListed[listings.RowKey(tt.gpu, tt.kind, "USD")]; !got.Equal(tt.want) {
			t.Errorf("LastListed[%s %s] = %v, want %v", tt.gpu, tt.kind, got, tt.want)
		}
	}
	if len(snap.LastListed) != 3 {
		t.Errorf("LastListed has %d keys, want 3: %v", len(snap.LastListed), snap.LastListed)
	}
	past, err := db.Snapshot(SnapshotQuery{AsOf: at(0), GPUs: []string{"H100 SXM"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := past.LastListed[listings.RowKey("H100 SXM", listings.OnDemand, "USD")]; !got.Equal(at(0)) || len(past.LastListed) != 1 {
		t.Errorf("LastListed at day 0 for H100 = %v (%d keys), want %v alone", got, len(past.LastListed), at(0))
	}
}

func TestHistory(t *testing.T) {
	db := mustOpen(t)
	series(t, db)
	rows, err := db.History("RTX 4090", listings.OnDemand, at(1), at(3))
	if err != nil {
		t.Fatal(err)
	}
	wantFloor := []string{"0.40", "0.45", "0.45"}
	if len(rows) != len(wantFloor) {
		t.Fatalf("History = %d rows, want %d", len(rows), len(wantFloor))
	}
	for i, r := range rows {
		if got := r.Floor.Decimal(); got != wantFloor[i] || !r.AsOf.Equal(at(i+1)) {
			t.Errorf("row %d: floor %s at %v, want %s at %v", i, got, r.AsOf, wantFloor[i], at(i+1))
		}
	}
	all, err := db.History("RTX 4090", "", time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	// 5 ok runs store rows (4 vast, 1 lambda) for both kinds.
	if len(all) != 10 {
		t.Errorf("History of all kinds = %d rows, want 10", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].AsOf.Before(all[i-1].AsOf) {
			t.Errorf("History out of time order at %d: %v after %v", i, all[i].AsOf, all[i-1].AsOf)
		}
	}
}

func TestRunsAndSources(t *testing.T) {
	db := mustOpen(t)
	series(t, db)
	runs, err := db.Runs("", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.Source+"@"+r.Started.Format("02T15")+":"+string(r.Status))
	}
	want := "vastai@05T03:ok lambda@05T04:ok vastai@06T03:ok vastai@06T15:failed vastai@07T03:ok vastai@08T03:ok"
	if strings.Join(got, " ") != want {
		t.Errorf("Runs = %q, want %q", strings.Join(got, " "), want)
	}
	since, err := db.Runs("vastai", at(1).Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(since) != 3 {
		t.Errorf("Runs(vastai, since day 1 + 1h) = %d runs, want 3", len(since))
	}
	r, ok, err := db.LatestOK("vastai", at(2).Add(-time.Minute))
	if err != nil || !ok || !r.Started.Equal(at(1)) {
		t.Errorf("LatestOK(vastai, day 2 - 1m) = %v %v %v, want day 1", r.Started, ok, err)
	}
	if _, ok, _ := db.LatestOK("lambda", at(0)); ok {
		t.Errorf("LatestOK(lambda, day 0) found a run, want none")
	}
	srcs, err := db.Sources()
	if err != nil || strings.Join(srcs, " ") != "lambda vastai" {
		t.Errorf("Sources = %q, %v; want lambda vastai", srcs, err)
	}
	gpus, err := db.GPUsSeen()
	if err != nil || strings.Join(gpus, ",") != "RTX 4090,H100 SXM" {
		t.Errorf("GPUsSeen = %q, %v; want catalog order RTX 4090,H100 SXM", gpus, err)
	}
}

func TestBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "listings.db")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	opens := []struct {
		name string
		open func(string, Options) (*DB, error)
	}{
		{"second writer", Open},
		{"reader", OpenReadOnly},
	}
	for _, o := range opens {
		db, err := o.open(path, Options{Timeout: 100 * time.Millisecond})
		if err == nil {
			db.Close()
			t.Errorf("%s: opened while the writer holds the lock, want ErrBusy", o.name)
			continue
		}
		if !errors.Is(err, ErrBusy) || !strings.HasPrefix(err.Error(), "index busy:") {
			t.Errorf("%s: err = %v, want one wrapping ErrBusy and starting %q", o.name, err, "index busy:")
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadOnly(path, Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("reader after the writer closed: %v", err)
	}
	r.Close()
}

func TestOpenReadOnlyMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "there")
	path := filepath.Join(dir, "listings.db")
	db, err := OpenReadOnly(path, Options{})
	if err != nil {
		t.Fatalf("OpenReadOnly(missing) = %v, want an empty index", err)
	}
	defer db.Close()
	snap, err := db.Snapshot(SnapshotQuery{AsOf: at(0)})
	if err != nil || len(snap.Present) != 0 || len(snap.Runs) != 0 || snap.LastListed == nil {
		t.Errorf("Snapshot = %+v, %v; want empty", snap, err)
	}
	runs, err := db.Runs("", time.Time{})
	if err != nil || len(runs) != 0 {
		t.Errorf("Runs = %v, %v; want none", runs, err)
	}
	for name, q := range map[string]func() (int, error){
		"Sources":  func() (int, error) { s, err := db.Sources(); return len(s), err },
		"GPUsSeen": func() (int, error) { s, err := db.GPUsSeen(); return len(s), err },
		"History": func() (int, error) {
			s, err := db.History("RTX 4090", listings.OnDemand, time.Time{}, time.Time{})
			return len(s), err
		},
		"Gone":  func() (int, error) { s, err := db.Gone(time.Time{}, time.Time{}); return len(s), err },
		"Check": func() (int, error) { s, err := db.Check(); return len(s), err },
		"WalkRuns": func() (int, error) {
			n := 0
			err := db.WalkRuns(time.Time{}, time.Time{}, func(listings.Run, []RunListing) error { n++; return nil })
			return n, err
		},
	} {
		if n, err := q(); n != 0 || err != nil {
			t.Errorf("%s on a missing index = %d results, %v; want none", name, n, err)
		}
	}
	if _, ok, err := db.LatestOK("vastai", at(0)); ok || err != nil {
		t.Errorf("LatestOK = %v, %v; want none", ok, err)
	}
	if _, err := db.WriteRun(okRun("vastai", at(0)), nil, nil); err == nil {
		t.Errorf("WriteRun on a read-only index succeeded")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenReadOnly created %s (stat: %v)", dir, err)
	}
}

func TestOpenCreatesParent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "listings.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Path() != path {
		t.Errorf("Path = %q, want %q", db.Path(), path)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("index file: %v", err)
	}
}

func TestForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	db, err := OpenReadOnly(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Runs("", time.Time{}); err == nil || !strings.Contains(err.Error(), "not a listings index") {
		t.Errorf("Runs on a foreign file: err = %v, want not a listings index", err)
	}
	faults, err := db.Check()
	if err != nil || len(faults) == 0 || !strings.Contains(faults[0], "missing") {
		t.Errorf("Check on a foreign file = %q, %v; want a missing bucket fault", faults, err)
	}
}
