package index

import (
	"strings"
	"testing"
	"time"

	listings "github.com/listings-dev/listings"
)

// TestWriteRunSequence drives one source through appear, unchanged, failed,
// price change, disappear, reappear and sold-out runs, checking the segment
// counts and Gone records after each.
func TestWriteRunSequence(t *testing.T) {
	db := mustOpen(t)
	const src = "vastai"
	a40 := offer(t, src, "A", "RTX 4090", listings.OnDemand, "0.40")
	a35 := offer(t, src, "A", "RTX 4090", listings.OnDemand, "0.35")
	aOut := a35
	aOut.Available = false
	b := offer(t, src, "B", "RTX 3090", listings.OnDemand, "0.50")

	steps := []struct {
		name     string
		run      listings.Run
		ls       []listings.Listing
		want     WriteResult
		segments int
		gone     int
	}{
		{"appear", okRun(src, at(0)), []listings.Listing{a40, b}, WriteResult{Opened: 2}, 2, 0},
		{"unchanged", okRun(src, at(1)), []listings.Listing{a40, b}, WriteResult{Extended: 2}, 2, 0},
		{"failed", failedRun(src, at(2)), nil, WriteResult{}, 2, 0},
		{"price change", okRun(src, at(3)), []listings.Listing{a35, b}, WriteResult{Opened: 1, Extended: 1}, 3, 0},
		{"disappear", okRun(src, at(4)), []listings.Listing{a35}, WriteResult{Extended: 1, Closed: 1}, 3, 1},
		{"reappear", okRun(src, at(5)), []listings.Listing{a35, b}, WriteResult{Opened: 1, Extended: 1}, 4, 1},
		{"sold out", okRun(src, at(6)), []listings.Listing{aOut, b}, WriteResult{Extended: 1, Closed: 1}, 4, 2},
		{"unchanged again", okRun(src, at(7)), []listings.Listing{aOut, b}, WriteResult{Extended: 1}, 4, 2},
	}
	for _, s := range steps {
		got := mustWrite(t, db, s.run, s.ls, nil)
		if got != s.want {
			t.Errorf("%s: WriteResult = %+v, want %+v", s.name, got, s.want)
		}
		if n := countKeys(t, db, bucketSegments); n != s.segments {
			t.Errorf("%s: %d segments, want %d", s.name, n, s.segments)
		}
		if n := countKeys(t, db, bucketBySource); n != s.segments {
			t.Errorf("%s: %d bysource entries, want %d", s.name, n, s.segments)
		}
		if n := countKeys(t, db, bucketGone); n != s.gone {
			t.Errorf("%s: %d gone records, want %d", s.name, n, s.gone)
		}
	}

	gone, err := db.Gone(time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := []listings.Gone{
		{Source: src, ID: "B", GPU: "RTX 3090", Kind: listings.OnDemand, Price: price(t, "0.50"), Currency: "USD",
			FirstSeen: at(0), LastSeen: at(3), GoneAt: at(4)},
		{Source: src, ID: "A", GPU: "RTX 4090", Kind: listings.OnDemand, Price: price(t, "0.35"), Currency: "USD",
			FirstSeen: at(0), LastSeen: at(5), GoneAt: at(6)},
	}
	if len(gone) != len(want) {
		t.Fatalf("Gone = %+v, want %+v", gone, want)
	}
	for i := range want {
		if !sameGone(gone[i], want[i]) {
			t.Errorf("Gone[%d] = %+v, want %+v", i, gone[i], want[i])
		}
	}

	stB := getState(t, db, src, b)
	if !stB.Present || !stB.FirstSeen.Equal(at(5)) || !stB.LastSeen.Equal(at(7)) {
		t.Errorf("state of B: present %v first %v last %v, want true %v %v", stB.Present, stB.FirstSeen, stB.LastSeen, at(5), at(7))
	}
	stA := getState(t, db, src, aOut)
	if stA.Present || stA.Listing.Available || !stA.LastSeen.Equal(at(5)) || !stA.LastRun.Equal(at(7)) {
		t.Errorf("state of A: present %v available %v last seen %v last run %v, want false false %v %v",
			stA.Present, stA.Listing.Available, stA.LastSeen, stA.LastRun, at(5), at(7))
	}
	if faults, err := db.Check(); err != nil || faults != nil {
		t.Errorf("Check = %q, %v; want no faults", faults, err)
	}
}

func sameGone(a, b listings.Gone) bool {
	return a.Source == b.Source && a.ID == b.ID && a.GPU == b.GPU && a.Kind == b.Kind &&
		a.Price == b.Price && a.Currency == b.Currency && a.FirstSeen.Equal(b.FirstSeen) &&
		a.LastSeen.Equal(b.LastSeen) && a.GoneAt.Equal(b.GoneAt) && a.FloorAt.Equal(b.FloorAt)
}

// TestUnchangedMarketCostsNothing: many unchanged runs add no segment.
func TestUnchangedMarketCostsNothing(t *testing.T) {
	db := mustOpen(t)
	ls := []listings.Listing{
		offer(t, "vastai", "1", "RTX 4090", listings.OnDemand, "0.42"),
		offer(t, "vastai", "1", "RTX 4090", listings.Interruptible, "0.20"),
		offer(t, "vastai", "2", "H100 SXM", listings.OnDemand, "2.10"),
	}
	mustWrite(t, db, okRun("vastai", at(0)), ls, floorDeriver)
	before := countKeys(t, db, bucketSegments)
	for d := 1; d <= 10; d++ {
		res := mustWrite(t, db, okRun("vastai", at(d)), ls, floorDeriver)
		if res.Opened != 0 || res.Extended != 3 || res.Closed != 0 {
			t.Fatalf("day %d: WriteResult = %+v, want 3 extended only", d, res)
		}
	}
	if got := countKeys(t, db, bucketSegments); got != before {
		t.Errorf("segments after 10 unchanged runs = %d, want %d", got, before)
	}
}

// TestFailedRunChangesNothing: a failed run adds its record and nothing else,
// and does not break presence.
func TestFailedRunChangesNothing(t *testing.T) {
	db := mustOpen(t)
	ls := []listings.Listing{offer(t, "vastai", "1", "RTX 4090", listings.OnDemand, "0.42")}
	mustWrite(t, db, okRun("vastai", at(0)), ls, floorDeriver)
	before := dump(t, db)
	res := mustWrite(t, db, failedRun("vastai", at(1)), nil, floorDeriver)
	if res != (WriteResult{}) {
		t.Errorf("failed run: WriteResult = %+v, want zero", res)
	}
	after := dump(t, db)
	want := []string{"runs/" + string(key("vastai", at(1)))}
	if got := diffKeys(before, after); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("failed run changed %q, want only %q", got, want)
	}
	res = mustWrite(t, db, okRun("vastai", at(2)), ls, floorDeriver)
	if res != (WriteResult{Extended: 1}) {
		t.Errorf("ok run after failed: WriteResult = %+v, want one extended", res)
	}
	if n := countKeys(t, db, bucketGone); n != 0 {
		t.Errorf("gone records = %d, want 0", n)
	}
	if st := getState(t, db, "vastai", ls[0]); !st.FirstSeen.Equal(at(0)) {
		t.Errorf("first seen = %v, want %v (presence continuous across the failed run)", st.FirstSeen, at(0))
	}
}

func TestWriteRunIdempotent(t *testing.T) {
	db := mustOpen(t)
	ls := []listings.Listing{
		offer(t, "vastai", "1", "RTX 4090", listings.OnDemand, "0.42"),
		offer(t, "vastai", "2", "RTX 4090", listings.OnDemand, "0.50"),
	}
	mustWrite(t, db, okRun("vastai", at(0)), ls, floorDeriver)
	mustWrite(t, db, failedRun("vastai", at(1)), nil, nil)
	mustWrite(t, db, okRun("vastai", at(2)), ls[:1], floorDeriver)
	before := dump(t, db)
	for _, run := range []listings.Run{okRun("vastai", at(0)), failedRun("vastai", at(1)), okRun("vastai", at(2))} {
		res := mustWrite(t, db, run, ls, floorDeriver)
		if !res.Duplicate || res.Opened+res.Extended+res.Closed != 0 {
			t.Errorf("rewrite of %s: WriteResult = %+v, want Duplicate only", run.Started.Format(time.RFC3339), res)
		}
	}
	if got := diffKeys(before, dump(t, db)); len(got) != 0 {
		t.Errorf("rewrites changed %q", got)
	}
}

func TestWriteRunOutOfOrder(t *testing.T) {
	db := mustOpen(t)
	ls := []listings.Listing{offer(t, "vastai", "1", "RTX 4090", listings.OnDemand, "0.42")}
	mustWrite(t, db, okRun("vastai", at(2)), ls, nil)
	_, err := db.WriteRun(okRun("vastai", at(1)), ls, nil)
	if err == nil || !strings.Contains(err.Error(), "out-of-order imports are not supported") {
		t.Errorf("older ok run: err = %v, want out-of-order error", err)
	}
	if _, err := db.WriteRun(failedRun("vastai", at(1)), nil, nil); err != nil {
		t.Errorf("older failed run: err = %v, want nil", err)
	}
	if _, err := db.WriteRun(okRun("runpod", at(1)), []listings.Listing{offer(t, "runpod", "x", "RTX 4090", listings.OnDemand, "0.69")}, nil); err != nil {
		t.Errorf("older ok run of another source: err = %v, want nil", err)
	}
	if faults, err := db.Check(); err != nil || faults != nil {
		t.Errorf("Check = %q, %v; want no faults", faults, err)
	}
}

func TestWriteRunRefuses(t *testing.T) {
	db := mustOpen(t)
	good := offer(t, "vastai", "1", "RTX 4090", listings.OnDemand, "0.42")
	other := good
	other.Source = "runpod"
	noID := good
	noID.ID = ""
	nul := good
	nul.ID = "a\x00b"
	tests := []struct {
		name string
		run  listings.Run
		ls   []listings.Listing
		want string
	}{
		{"empty source", okRun("", at(0)), nil, "empty source"},
		{"zero start", okRun("vastai", time.Time{}), nil, "start time"},
		{"bad status", listings.Run{Source: "vastai", Started: at(0), Status: "meh"}, nil, "unknown status"},
		{"other source", okRun("vastai", at(0)), []listings.Listing{other}, "of source"},
		{"no id", okRun("vastai", at(0)), []listings.Listing{noID}, "empty listing id"},
		{"nul in id", okRun("vastai", at(0)), []listings.Listing{nul}, "0x00"},
	}
	for _, tt := range tests {
		_, err := db.WriteRun(tt.run, tt.ls, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	if n := countKeys(t, db, bucketRuns); n != 0 {
		t.Errorf("runs after refused writes = %d, want 0", n)
	}
}

// TestDuplicateIDsKeepFirst: of two listings with one identity the first
// is stored.
func TestDuplicateIDsKeepFirst(t *testing.T) {
	db := mustOpen(t)
	first := offer(t, "vastai", "1", "RTX 4090", listings.OnDemand, "0.42")
	second := offer(t, "vastai", "1", "RTX 4090", listings.OnDemand, "0.10")
	res := mustWrite(t, db, okRun("vastai", at(0)), []listings.Listing{first, second}, nil)
	if res.Opened != 1 {
		t.Errorf("Opened = %d, want 1", res.Opened)
	}
	snap, err := db.Snapshot(SnapshotQuery{AsOf: at(0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Present) != 1 || snap.Present[0].Price != first.Price {
		t.Errorf("present = %+v, want the first listing at %s", snap.Present, first.Price)
	}
}

// TestFloorAt: floor keys mark the open segment once; the mark survives a
// price change and reaches the Gone record and the snapshot's Gone list.
func TestFloorAt(t *testing.T) {
	db := mustOpen(t)
	const src = "vastai"
	cheap := offer(t, src, "A", "RTX 4090", listings.OnDemand, "0.30")
	cheap2 := offer(t, src, "A", "RTX 4090", listings.OnDemand, "0.32")
	dear := offer(t, src, "B", "RTX 4090", listings.OnDemand, "0.50")
	short := offer(t, src, "C", "RTX 4090", listings.OnDemand, "0.90")

	mustWrite(t, db, okRun(src, at(0)), []listings.Listing{cheap, dear, short}, floorDeriver)
	mustWrite(t, db, okRun(src, at(1)), []listings.Listing{cheap2, dear}, floorDeriver)
	mustWrite(t, db, okRun(src, at(2)), []listings.Listing{dear}, floorDeriver)

	segs := segmentsOf(t, db, "A")
	if len(segs) != 2 {
		t.Fatalf("segments of A = %d, want 2", len(segs))
	}
	for i, s := range segs {
		if !s.FloorAt.Equal(at(0)) {
			t.Errorf("segment %d of A: FloorAt = %v, want %v", i, s.FloorAt, at(0))
		}
		if !s.FirstSeen.Equal(at(0)) {
			t.Errorf("segment %d of A: FirstSeen = %v, want %v", i, s.FirstSeen, at(0))
		}
	}
	// B became the floor at day 2, when A had gone.
	if segs := segmentsOf(t, db, "B"); len(segs) != 1 || !segs[0].FloorAt.Equal(at(2)) {
		t.Errorf("segments of B = %+v, want one with FloorAt %v", segs, at(2))
	}

	all, err := db.Gone(at(0), at(2))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Fatalf("Gone = %+v, want A and C", all)
	}
	snap, err := db.Snapshot(SnapshotQuery{AsOf: at(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Gone) != 1 || snap.Gone[0].ID != "A" || !snap.Gone[0].FloorAt.Equal(at(0)) ||
		!snap.Gone[0].GoneAt.Equal(at(2)) || !snap.Gone[0].LastSeen.Equal(at(1)) {
		t.Errorf("snapshot Gone = %+v, want A gone at %v with FloorAt %v", snap.Gone, at(2), at(0))
	}
	// Outside the window it is not reported.
	snap, err = db.Snapshot(SnapshotQuery{AsOf: at(2).Add(48 * time.Hour), GoneWindow: 24 * time.Hour, MaxAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Gone) != 0 {
		t.Errorf("snapshot Gone 2 days later with a 1-day window = %+v, want none", snap.Gone)
	}
	if faults, err := db.Check(); err != nil || faults != nil {
		t.Errorf("Check = %q, %v; want no faults", faults, err)
	}
}

// segmentsOf returns the segments of listing id (on-demand, source vastai)
// in start order.
func segmentsOf(tb testing.TB, db *DB, id string) []listings.Segment {
	tb.Helper()
	var out []listings.Segment
	err := db.WalkRuns(time.Time{}, time.Time{}, func(run listings.Run, present []RunListing) error {
		for _, p := range present {
			if p.ID == id && p.Start.Equal(run.Started) {
				out = append(out, p.Segment)
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// TestWriteRunAllOrNothing: an error late in the transaction (a row the
// stats bucket cannot key) leaves no trace of the run.
func TestWriteRunAllOrNothing(t *testing.T) {
	db := mustOpen(t)
	ls := []listings.Listing{offer(t, "vastai", "1", "RTX 4090", listings.OnDemand, "0.42")}
	mustWrite(t, db, okRun("vastai", at(0)), ls, floorDeriver)
	before := dump(t, db)
	bad := func(*listings.Snapshot) ([]listings.Row, []string) {
		return []listings.Row{{GPU: "bad\x00gpu", Kind: listings.OnDemand, Currency: "USD"}}, nil
	}
	changed := append(ls[:0:0], ls...)
	changed[0].Price++
	if _, err := db.WriteRun(okRun("vastai", at(1)), changed, bad); err == nil {
		t.Fatal("WriteRun with an unkeyable row succeeded")
	}
	if got := diffKeys(before, dump(t, db)); len(got) != 0 {
		t.Errorf("failed WriteRun left %q", got)
	}
}

// TestOKRunReplacesFailedRunAtSameTime: replaying an archived page after a
// failed fetch at the same observed time records the ok run; a second ok run
// at that time is still a no-op.
func TestOKRunReplacesFailedRunAtSameTime(t *testing.T) {
	db := mustOpen(t)
	at := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	failed := listings.Run{Source: "vastai", Started: at, Finished: at, Status: listings.RunFailed, Error: "unexpected EOF"}
	if _, err := db.WriteRun(failed, nil, nil); err != nil {
		t.Fatal(err)
	}
	ok := listings.Run{Source: "vastai", Started: at, Finished: at, Status: listings.RunOK, Listings: 1}
	l := listings.Listing{Source: "vastai", ID: "1", GPU: "RTX 4090", Known: true, GPUCount: 1, Kind: listings.OnDemand,
		Price: 400000, Currency: listings.USD, Available: true}
	res, err := db.WriteRun(ok, []listings.Listing{l}, nil)
	if err != nil || res.Duplicate || res.Opened != 1 {
		t.Fatalf("ok run over a failed one: %+v, %v; want it written with one segment", res, err)
	}
	runs, err := db.Runs("vastai", time.Time{})
	if err != nil || len(runs) != 1 || runs[0].Status != listings.RunOK {
		t.Fatalf("runs = %+v, %v; want the ok run alone", runs, err)
	}
	res, err = db.WriteRun(ok, []listings.Listing{l}, nil)
	if err != nil || !res.Duplicate {
		t.Errorf("the same ok run again: %+v, %v; want a duplicate no-op", res, err)
	}
	res, err = db.WriteRun(failed, nil, nil)
	if err != nil || !res.Duplicate {
		t.Errorf("a failed run over an ok one: %+v, %v; want a no-op", res, err)
	}
	if faults, err := db.Check(); err != nil || len(faults) > 0 {
		t.Errorf("check: %v %v", faults, err)
	}
}
