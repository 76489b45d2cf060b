package stats

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/listings-dev/listings"
)

// benchSnapshot builds a market of about 1,400 listings over 70 catalog GPUs
// from three sources, both main kinds, some EUR prices, 100 gone floor
// listings and a few rows known only from LastListed.
func benchSnapshot() *listings.Snapshot {
	r := rand.New(rand.NewPCG(7, 11))
	gpus := listings.Catalog()[:70]
	sources := []string{"vastai", "runpod", "cherryservers"}
	snap := &listings.Snapshot{
		AsOf:       t0,
		Runs:       map[string]listings.Run{},
		LastListed: map[string]time.Time{},
	}
	for i, s := range sources {
		snap.Runs[s] = listings.Run{Source: s, Started: t0.Add(-time.Duration(i) * time.Hour), Status: listings.RunOK,
			FX: map[string]listings.Price{"EUR": P("1.08")}}
	}
	for i := range 1400 {
		g := gpus[r.IntN(len(gpus))]
		src := sources[r.IntN(len(sources))]
		kind := od
		if r.IntN(4) == 0 {
			kind = itr
		}
		run := snap.Runs[src].Started
		p := pr(src, fmt.Sprint(i), g.Name, kind, "0", run.Add(-time.Duration(r.IntN(72))*time.Hour), run)
		p.Price = listings.Price(100_000 + r.Int64N(3_000_000))
		if src == "cherryservers" && r.IntN(2) == 0 {
			p.Currency = "EUR"
		}
		if r.IntN(10) == 0 {
			p.FloorAt = p.FirstSeen
		}
		snap.Present = append(snap.Present, p)
	}
	for i := range 100 {
		at := t0.Add(-time.Duration(r.IntN(200)) * time.Hour)
		g := gone(fmt.Sprint("g", i), "0.2", at.Add(-12*time.Hour), at.Add(-6*time.Hour), at)
		g.GPU = gpus[r.IntN(len(gpus))].Name
		snap.Gone = append(snap.Gone, g)
	}
	for _, g := range []string{"H200", "B200", "MI300X", "GH200"} {
		snap.LastListed[listings.RowKey(g, od, "USD")] = t0.Add(-48 * time.Hour)
	}
	return snap
}

func BenchmarkRows(b *testing.B) {
	snap := benchSnapshot()
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(Rows(snap, Params{}))
	}
	b.ReportMetric(float64(n), "rows")
}

func BenchmarkDerive(b *testing.B) {
	snap := benchSnapshot()
	derive := Derive(Params{}, "vastai")
	b.ReportAllocs()
	for b.Loop() {
		derive(snap)
	}
}

func BenchmarkFlagsPending(b *testing.B) {
	snap := benchSnapshot()
	b.ReportAllocs()
	for b.Loop() {
		Flags(snap, Params{}, true)
	}
}

func BenchmarkPercentile(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	xs := make([]listings.Price, 311)
	for i := range xs {
		xs[i] = listings.Price(r.Int64N(2_000_000))
	}
	slices.Sort(xs)
	for b.Loop() {
		Percentile(xs, 0.1)
	}
}
