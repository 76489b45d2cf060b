package index

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	listings "github.com/listings-dev/listings"
)

// TestWalkRunsMatchesSnapshot: across a 4-run series of two sources (with
// a failed run, a price change, a disappearance and a reappearance) WalkRuns
// reports for each ok run exactly the listings a Snapshot at that run shows
// for its source.
func TestWalkRunsMatchesSnapshot(t *testing.T) {
	db := mustOpen(t)
	series(t, db)
	// A reappearance and a disappearance on top of the series.
	mustWrite(t, db, okRun("lambda", at(3).Add(time.Hour)), nil, floorDeriver)
	mustWrite(t, db, okRun("lambda", at(3).Add(2*time.Hour)), []listings.Listing{
		offer(t, "lambda", "h", "H100 SXM", listings.OnDemand, "2.49"),
	}, floorDeriver)

	var got []string
	err := db.WalkRuns(time.Time{}, time.Time{}, func(run listings.Run, present []RunListing) error {
		got = append(got, run.Source+"@"+run.Started.Format("02T15"))
		snap, err := db.Snapshot(SnapshotQuery{AsOf: run.Started})
		if err != nil {
			return err
		}
		var want []listings.Presence
		for _, p := range snap.Present {
			if p.Source == run.Source {
				want = append(want, p)
			}
		}
		if len(present) != len(want) {
			t.Errorf("%s %s: %d listings, snapshot has %d", run.Source, run.Started.Format(time.RFC3339), len(present), len(want))
			return nil
		}
		for i := range want {
			if g, w := fmt.Sprintf("%+v", present[i].Segment), fmt.Sprintf("%+v", want[i].Segment); g != w {
				t.Errorf("%s %s listing %d: %s, want %s", run.Source, run.Started.Format(time.RFC3339), i, g, w)
			}
			if present[i].Attrs.ID != want[i].ID || present[i].Attrs.Kind != want[i].Kind {
				t.Errorf("%s listing %d: attributes of %s/%s, want %s/%s", run.Source, i,
					present[i].Attrs.ID, present[i].Attrs.Kind, want[i].ID, want[i].Kind)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"vastai@05T03", "lambda@05T04", "vastai@06T03", "vastai@07T03", "vastai@08T03", "lambda@08T04", "lambda@08T05"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("runs walked = %v, want %v", got, want)
	}
}

// TestWalkRunsPresence checks the presence facts of one listing per run and
// the from/to bounds.
func TestWalkRunsPresence(t *testing.T) {
	db := mustOpen(t)
	series(t, db)
	type fact struct{ first, last, gone time.Time }
	facts := map[string]fact{} // run day -> facts of vastai/2 and vastai/1 on-demand
	err := db.WalkRuns(at(1), at(2), func(run listings.Run, present []RunListing) error {
		for _, p := range present {
			if p.Kind == listings.OnDemand {
				facts[run.Started.Format("02")+"/"+p.ID] = fact{p.FirstSeen, p.LastSeen, p.GoneAt}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fact{
		// 2 was last seen on day 1 and gone on day 2.
		"06/2": {at(0), at(1), at(2)},
		// 1 changed price on day 2 and is still present on day 3: its
		// presence goes on across the change.
		"06/1": {at(0), at(3), time.Time{}},
		"07/1": {at(0), at(3), time.Time{}},
	}
	if len(facts) != len(want) {
		t.Errorf("walked %v, want keys of %v", facts, want)
	}
	for k, w := range want {
		g, ok := facts[k]
		if !ok || !g.first.Equal(w.first) || !g.last.Equal(w.last) || !g.gone.Equal(w.gone) {
			t.Errorf("%s: first/last/gone = %v %v %v, want %v %v %v", k, g.first, g.last, g.gone, w.first, w.last, w.gone)
		}
	}
}

func TestWalkRunsStopsOnError(t *testing.T) {
	db := mustOpen(t)
	series(t, db)
	stop := errors.New("stop")
	n := 0
	err := db.WalkRuns(time.Time{}, time.Time{}, func(listings.Run, []RunListing) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("WalkRuns = %v after %d calls, want stop after 1", err, n)
	}
}

// TestSnapshotPathsAgree: over 25 runs of random churn (price changes,
// disappearances, reappearances, failed runs) the market of each source's
// latest run, read from the open segments, equals what a scan of the
// segments finds, and both equal WalkRuns' sweep.
func TestSnapshotPathsAgree(t *testing.T) {
	db := mustOpen(t)
	rng := rand.New(rand.NewPCG(7, 9))
	price := map[string]int{}
	for r := 0; r < 25; r++ {
		at := t0.Add(time.Duration(r) * 6 * time.Hour)
		if rng.IntN(6) == 0 {
			mustWrite(t, db, failedRun("vastai", at), nil, floorDeriver)
			continue
		}
		var ls []listings.Listing
		for i := 0; i < 40; i++ {
			id := fmt.Sprint(i)
			if rng.IntN(5) == 0 {
				continue // absent this run
			}
			if price[id] == 0 || rng.IntN(4) == 0 {
				price[id] = 100 + rng.IntN(900)
			}
			gpu := []string{"RTX 4090", "RTX 3090", "H100 SXM"}[i%3]
			ls = append(ls, offer(t, "vastai", id, gpu, listings.OnDemand, fmt.Sprintf("0.%03d", price[id])))
		}
		mustWrite(t, db, okRun("vastai", at), ls, floorDeriver)

		// Now: the present bucket. The same instant as a scan: ask for the
		// market a nanosecond later with the run as the latest, or compare
		// with the sweep, which never reads the present bucket.
		snap, err := db.Snapshot(SnapshotQuery{AsOf: at})
		if err != nil {
			t.Fatal(err)
		}
		var sweep []string
		err = db.WalkRuns(at, at, func(run listings.Run, present []RunListing) error {
			for _, p := range present {
				sweep = append(sweep, fmt.Sprintf("%s/%s@%s", p.GPU, p.ID, p.Price))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range snap.Present {
			got = append(got, fmt.Sprintf("%s/%s@%s", p.GPU, p.ID, p.Price))
		}
		sort.Strings(got)
		sort.Strings(sweep)
		if fmt.Sprint(got) != fmt.Sprint(sweep) || len(got) != len(ls) {
			t.Fatalf("run %d: snapshot %d listings %v\nsweep %d %v\nwritten %d", r, len(got), got, len(sweep), sweep, len(ls))
		}
	}
	// And every past run again, now through the scan.
	err := db.WalkRuns(time.Time{}, time.Time{}, func(run listings.Run, present []RunListing) error {
		snap, err := db.Snapshot(SnapshotQuery{AsOf: run.Started})
		if err != nil {
			return err
		}
		if len(snap.Present) != len(present) {
			t.Errorf("%s: snapshot %d, sweep %d", run.Started.Format(time.RFC3339), len(snap.Present), len(present))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
