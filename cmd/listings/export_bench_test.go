package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/listings-dev/listings"
	"github.com/listings-dev/listings/index"
)

// The export benchmarks run on an index of benchListings listings over
// enough hourly runs to hold about LISTINGS_BENCH_ROWS listing rows (default
// 30,000; -short: 3,000). With LISTINGS_BENCH_ROWS=2250000 the index is
// 1,500 listings × 1,500 runs and takes a minute or two to build.
// Each benchmark builds its index in b.TempDir(); LISTINGS_BENCH_DB keeps
// (and reuses) it at that path instead, so the big one is built once and
// the CLI can be measured on it with /usr/bin/time -v.
const benchListings = 1500

// benchDB builds the benchmark index in b.TempDir(), or at
// LISTINGS_BENCH_DB, where an index already there is reused.
func benchDB(b *testing.B) (string, int) {
	b.Helper()
	rows := 30_000
	if testing.Short() {
		rows = 3_000
	}
	if s := os.Getenv("LISTINGS_BENCH_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("LISTINGS_BENCH_ROWS=%q: want a positive row count", s)
		}
		rows = n
	}
	nl := min(benchListings, rows)
	runs := max(1, rows/nl)
	path := os.Getenv("LISTINGS_BENCH_DB")
	if path == "" {
		path = filepath.Join(b.TempDir(), "listings.db")
	} else if _, err := os.Stat(path); err == nil {
		return path, nl * runs
	}
	start := time.Now()
	if err := writeBenchIndex(path, nl, runs); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %s: %d listings × %d runs in %s", path, nl, runs, time.Since(start).Round(time.Millisecond))
	return path, nl * runs
}

// writeBenchIndex writes runs hourly runs of one source listing nl
// listings, about 1% of which change price at each run.
func writeBenchIndex(path string, nl, runs int) error {
	db, err := index.Open(path, index.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	gpus := []string{"RTX 4090", "RTX 3090", "A100 80GB SXM", "H100 SXM", "L40S", "RTX A6000"}
	rng := rand.New(rand.NewPCG(1, 2))
	ls := make([]listings.Listing, nl)
	for i := range ls {
		ls[i] = listings.Listing{
			Source: "bench", ID: fmt.Sprintf("offer-%06d", i), GPU: gpus[i%len(gpus)], Known: true,
			GPUCount: 1 + i%8, VRAMGB: 24, Kind: listings.OnDemand, Price: listings.Price(200_000 + rng.IntN(3_000_000)),
			Currency: listings.USD, Region: fmt.Sprintf("region-%d", i%40), Reliability: 0.9 + float64(i%10)/100,
			DiskGB: 200, Available: true,
		}
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for r := 0; r < runs; r++ {
		for k := 0; k < max(1, nl/100); k++ {
			i := rng.IntN(nl)
			ls[i].Price = listings.Price(200_000 + rng.IntN(3_000_000))
		}
		started := t0.Add(time.Duration(r) * time.Hour)
		run := listings.Run{Source: "bench", Started: started, Finished: started.Add(time.Minute), Status: listings.RunOK, Listings: nl}
		if _, err := db.WriteRun(run, ls, nil); err != nil {
			return fmt.Errorf("write run %d: %w", r, err)
		}
	}
	return nil
}

// peakMem samples the heap while a benchmark runs.
type peakMem struct {
	stop           chan struct{}
	done           chan struct{}
	heapInuse, sys uint64
}

func startPeakMem() *peakMem {
	p := &peakMem{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			p.heapInuse = max(p.heapInuse, ms.HeapInuse)
			p.sys = max(p.sys, ms.Sys)
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peakMem) report(b *testing.B, rows int) {
	close(p.stop)
	<-p.done
	b.ReportMetric(float64(p.heapInuse)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(p.sys)/(1<<20), "peak-sys-MB")
	b.ReportMetric(float64(rows), "rows/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}

func benchExport(b *testing.B, out func(i int) (string, io.Writer), args ...string) {
	db, rows := benchDB(b)
	dir := b.TempDir()
	getenv := func(k string) string {
		switch k {
		case "HOME":
			return dir
		case "XDG_CONFIG_HOME":
			return filepath.Join(dir, "config")
		}
		return ""
	}
	runtime.GC()
	mem := startPeakMem()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		path, w := out(i)
		code := runEnv(context.Background(), append([]string{"--db", db, "export", "--out", path}, args...), w, os.Stderr, getenv, time.Now)
		if code != 0 {
			b.Fatalf("export exit %d", code)
		}
	}
	b.StopTimer()
	mem.report(b, rows)
}

func BenchmarkExportCSV(b *testing.B) {
	benchExport(b, func(int) (string, io.Writer) { return "-", io.Discard })
}

func BenchmarkExportParquet(b *testing.B) {
	dir := b.TempDir()
	benchExport(b, func(i int) (string, io.Writer) {
		return filepath.Join(dir, fmt.Sprint("out-", i)), io.Discard
	}, "--format", "parquet")
}

// BenchmarkExportCSVSpooled exports to /dev/null, a device: the path of a
// pipe or terminal, spooled to a temporary file and copied once the index
// is closed. Against BenchmarkExportCSV it prices the spool.
func BenchmarkExportCSVSpooled(b *testing.B) {
	benchExport(b, func(int) (string, io.Writer) { return os.DevNull, io.Discard })
}
