package index

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	listings "github.com/listings-dev/listings"
)

var t0 = time.Date(2024, 11, 5, 3, 0, 0, 0, time.UTC)

// at is the start of the nightly run of day d.
func at(d int) time.Time { return t0.Add(time.Duration(d) * 24 * time.Hour) }

// mustOpen opens a writer on a fresh index in a temp dir, closed at cleanup.
func mustOpen(tb testing.TB) *DB {
	tb.Helper()
	db, err := Open(filepath.Join(tb.TempDir(), "listings.db"), Options{Timeout: time.Second})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func okRun(src string, t time.Time) listings.Run {
	return listings.Run{Source: src, Started: t, Finished: t.Add(time.Minute), Status: listings.RunOK}
}

func failedRun(src string, t time.Time) listings.Run {
	return listings.Run{Source: src, Started: t, Finished: t.Add(time.Minute), Status: listings.RunFailed, Error: "http 500"}
}

func price(tb testing.TB, s string) listings.Price {
	tb.Helper()
	p, err := listings.ParsePrice(s)
	if err != nil {
		tb.Fatalf("ParsePrice(%q): %v", s, err)
	}
	return p
}

// offer is an available USD listing of one GPU.
func offer(tb testing.TB, src, id, gpu string, kind listings.Kind, p string) listings.Listing {
	tb.Helper()
	return listings.Listing{
		Source: src, ID: id, GPU: gpu, Known: true, RawGPU: gpu, GPUCount: 1, VRAMGB: 24,
		Kind: kind, Price: price(tb, p), Currency: "USD", Reliability: 0.99, DiskGB: 100, Available: true,
	}
}

func mustWrite(tb testing.TB, db *DB, run listings.Run, ls []listings.Listing, d Deriver) WriteResult {
	tb.Helper()
	res, err := db.WriteRun(run, ls, d)
	if err != nil {
		tb.Fatalf("WriteRun(%s %s): %v", run.Source, run.Started.Format(time.RFC3339), err)
	}
	return res
}

// countKeys is the number of keys in a top-level bucket.
func countKeys(tb testing.TB, db *DB, bucket []byte) int {
	tb.Helper()
	n := 0
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucket).Stats().KeyN
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return n
}

// dump copies every key and value of the index, nested buckets included,
// as "bucket/nested/key" -> value.
func dump(tb testing.TB, db *DB) map[string]string {
	tb.Helper()
	out := map[string]string{}
	var walk func(path string, b *bolt.Bucket) error
	walk = func(path string, b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return walk(path+"/"+string(k), b.Bucket(k))
			}
			out[path+"/"+string(k)] = string(v)
			return nil
		})
	}
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return walk(string(name), b) })
	}); err != nil {
		tb.Fatal(err)
	}
	return out
}

// diffKeys lists the keys whose values differ between two dumps.
func diffKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func getState(tb testing.TB, db *DB, src string, l listings.Listing) state {
	tb.Helper()
	var st state
	found := false
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketListings).Bucket([]byte(src)).Get([]byte(l.Key()))
		if v == nil {
			return nil
		}
		found = true
		return json.Unmarshal(v, &st)
	}); err != nil {
		tb.Fatal(err)
	}
	if !found {
		tb.Fatalf("no state for %s/%s", src, l.Key())
	}
	return st
}

// floorDeriver is a small stand-in for stats: one row per (gpu, kind,
// currency) with the count and the minimum, and the cheapest listing of
// each row as its floor listing.
func floorDeriver(snap *listings.Snapshot) ([]listings.Row, []string) {
	rows := map[string]*listings.Row{}
	cheapest := map[string]listings.Presence{}
	var order []string
	for _, p := range snap.Present {
		rk := listings.RowKey(p.GPU, p.Kind, p.Currency)
		r, ok := rows[rk]
		if !ok {
			r = &listings.Row{GPU: p.GPU, Kind: p.Kind, Currency: p.Currency, AsOf: snap.AsOf, Live: true, Floor: p.Price}
			rows[rk] = r
			order = append(order, rk)
		}
		r.Listings++
		if p.Price <= r.Floor {
			r.Floor = p.Price
			cheapest[rk] = p
		}
		if p.RunStarted.After(r.LastOKRun) {
			r.LastOKRun = p.RunStarted
		}
	}
	var out []listings.Row
	var floor []string
	for _, rk := range order {
		out = append(out, *rows[rk])
		p := cheapest[rk]
		floor = append(floor, p.ID+"\x00"+string(p.Kind))
	}
	return out, floor
}
