package index

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	listings "github.com/listings-dev/listings"
)

// vastListings reads the real 1,396-offer Vast.ai recording with a few
// fields, one on-demand listing per offer.
func vastListings(tb testing.TB) []listings.Listing {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", "vastai", "vast-search-offers-full-2024-11-05.json"))
	if err != nil {
		tb.Fatalf("read recording: %v", err)
	}
	var offers []struct {
		ID       int64   `json:"id"`
		GPUName  string  `json:"gpu_name"`
		NumGPUs  int     `json:"num_gpus"`
		GPURAM   float64 `json:"gpu_ram"`
		DPHBase  float64 `json:"dph_base"`
		Disk     float64 `json:"disk_space"`
		Location string  `json:"geolocation"`
	}
	if err := json.Unmarshal(b, &offers); err != nil {
		tb.Fatalf("decode recording: %v", err)
	}
	out := make([]listings.Listing, 0, len(offers))
	for _, o := range offers {
		if o.NumGPUs <= 0 {
			continue
		}
		gpu, known := listings.Normalize(o.GPUName, o.GPURAM/1024)
		p, err := listings.PriceFromFloat(o.DPHBase / float64(o.NumGPUs))
		if err != nil {
			continue
		}
		out = append(out, listings.Listing{
			Source: "vastai", ID: fmt.Sprint(o.ID), GPU: gpu, Known: known, RawGPU: o.GPUName,
			GPUCount: o.NumGPUs, VRAMGB: o.GPURAM / 1024, Kind: listings.OnDemand, Price: p,
			Currency: "USD", Region: o.Location, Reliability: -1, DiskGB: o.Disk, Available: true,
		})
	}
	if len(out) != 1396 {
		tb.Fatalf("recording gave %d listings, want 1396", len(out))
	}
	return out
}

func BenchmarkWriteRunFirst(b *testing.B) {
	ls := vastListings(b)
	dir := b.TempDir()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		db, err := Open(filepath.Join(dir, fmt.Sprintf("%d.db", i)), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res := mustWrite(b, db, okRun("vastai", t0), ls, floorDeriver)
		b.StopTimer()
		if res.Opened != len(ls) {
			b.Fatalf("opened %d, want %d", res.Opened, len(ls))
		}
		db.Close()
		os.Remove(db.Path())
		b.StartTimer()
	}
}

func BenchmarkWriteRunUnchanged(b *testing.B) {
	ls := vastListings(b)
	db := mustOpen(b)
	mustWrite(b, db, okRun("vastai", t0), ls, floorDeriver)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := mustWrite(b, db, okRun("vastai", t0.Add(time.Duration(i+1)*time.Hour)), ls, floorDeriver)
		if res.Opened != 0 || res.Extended != len(ls) {
			b.Fatalf("WriteResult = %+v, want %d extended only", res, len(ls))
		}
	}
}

// churn returns the market of run r: every 31st listing changes price each
// run and every 53rd is missing on odd runs.
func churn(ls []listings.Listing, r int) []listings.Listing {
	out := make([]listings.Listing, 0, len(ls))
	for i, l := range ls {
		if i%53 == 0 && r%2 == 1 {
			continue
		}
		if i%31 == 0 {
			l.Price += listings.Price(r * 1000)
		}
		out = append(out, l)
	}
	return out
}

// BenchmarkSnapshotOneGPU reads the RTX 4090 market now, after 30 and
// after 300 runs of churn: the latest market comes from the open segments,
// so its cost stays flat as history grows. "past" reads the market of the
// first run, which scans that GPU's segments up to then.
func BenchmarkSnapshotOneGPU(b *testing.B) {
	ls := vastListings(b)
	for _, runs := range []int{30, 300} {
		db := mustOpen(b)
		for r := 0; r < runs; r++ {
			mustWrite(b, db, okRun("vastai", t0.Add(time.Duration(r)*12*time.Hour)), churn(ls, r), floorDeriver)
		}
		for _, at := range []struct {
			name string
			asOf time.Time
		}{{"now", t0.Add(time.Duration(runs-1) * 12 * time.Hour)}, {"past", t0.Add(time.Hour)}} {
			b.Run(fmt.Sprintf("runs=%d/%s", runs, at.name), func(b *testing.B) {
				q := SnapshotQuery{AsOf: at.asOf, GPUs: []string{"RTX 4090"}, MaxAge: -1}
				b.ReportAllocs()
				for b.Loop() {
					snap, err := db.Snapshot(q)
					if err != nil {
						b.Fatal(err)
					}
					if len(snap.Present) < 300 {
						b.Fatalf("%d RTX 4090 listings, want about 311", len(snap.Present))
					}
				}
			})
		}
	}
}
