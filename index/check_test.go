package index

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	listings "github.com/listings-dev/listings"
)

// plant changes the index behind WriteRun's back, as a bug or a torn
// write would.
func plant(tb testing.TB, db *DB, fn func(tx *bolt.Tx) error) {
	tb.Helper()
	if err := db.bolt.Update(fn); err != nil {
		tb.Fatalf("plant: %v", err)
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name  string
		plant func(tx *bolt.Tx) error
		want  string // a fault containing this
	}{
		{"segment ending before it starts", func(tx *bolt.Tx) error {
			s := listings.Segment{Source: "vastai", ID: "9", GPU: "RTX 4090", Kind: listings.OnDemand,
				Currency: "USD", Start: at(1), End: at(0), FirstSeen: at(1)}
			k := segKey(&s)
			if err := tx.Bucket(bucketSegments).Put(k, encodeSegment(&s)); err != nil {
				return err
			}
			return tx.Bucket(bucketBySource).Put(key("vastai", at(1), "9", "on-demand"), k)
		}, "before start"},
		{"segment starting at no run", func(tx *bolt.Tx) error {
			s := listings.Segment{Source: "vastai", ID: "9", GPU: "RTX 4090", Kind: listings.OnDemand,
				Currency: "USD", Start: at(1).Add(1), End: at(2), FirstSeen: at(1).Add(1)}
			k := segKey(&s)
			if err := tx.Bucket(bucketSegments).Put(k, encodeSegment(&s)); err != nil {
				return err
			}
			return tx.Bucket(bucketBySource).Put(key("vastai", s.Start, "9", "on-demand"), k)
		}, "start is not an ok run"},
		{"overlapping segments", func(tx *bolt.Tx) error {
			// A second segment of listing 1 on-demand inside its presence.
			s := listings.Segment{Source: "vastai", ID: "1", GPU: "RTX 4090", Kind: listings.OnDemand,
				Currency: "USD", Start: at(1), End: at(1), FirstSeen: at(0)}
			k := segKey(&s)
			if err := tx.Bucket(bucketSegments).Put(k, encodeSegment(&s)); err != nil {
				return err
			}
			return tx.Bucket(bucketBySource).Put(key("vastai", at(1), "1", "on-demand"), k)
		}, "overlaps"},
		{"bysource to nowhere", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketBySource).Put(key("vastai", at(1), "7", "on-demand"), []byte("nowhere"))
		}, "segment missing"},
		{"run that does not decode", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketRuns).Put(key("vastai", at(5)), []byte("{"))
		}, "decode"},
		{"present entry lost", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketPresent).Delete(key("vastai", "1", "on-demand"))
		}, "present entry is missing"},
		{"open segment lost", func(tx *bolt.Tx) error {
			s := listings.Segment{Source: "vastai", ID: "1", GPU: "RTX 4090", Kind: listings.OnDemand, Start: at(2)}
			return tx.Bucket(bucketSegments).Delete(segKey(&s))
		}, "open segment is missing"},
		{"stats rows lost", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketStats).Delete(key("RTX 4090", "on-demand", "USD", at(3)))
		}, "stats rows stored"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := mustOpen(t)
			series(t, db)
			if faults, err := db.Check(); err != nil || faults != nil {
				t.Fatalf("Check before planting = %q, %v; want no faults", faults, err)
			}
			plant(t, db, tt.plant)
			faults, err := db.Check()
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range faults {
				found = found || strings.Contains(f, tt.want)
			}
			if !found {
				t.Errorf("Check = %q, want a fault containing %q", faults, tt.want)
			}
		})
	}
}

// indexFile writes an index of one run of 2,000 listings, closes it, and
// returns its path and bytes, for tests that damage the file.
func indexFile(t *testing.T) (string, []byte) {
	t.Helper()
	db := mustOpen(t)
	var ls []listings.Listing
	for i := 0; i < 2000; i++ {
		ls = append(ls, offer(t, "vastai", fmt.Sprint(i), "RTX 4090", listings.OnDemand, fmt.Sprintf("0.%d", 100+i%800)))
	}
	mustWrite(t, db, okRun("vastai", at(0)), ls, nil)
	path := db.Path()
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// TestCheckDamagedFile: pages overwritten with garbage are reported as
// faults, never a panic.
func TestCheckDamagedFile(t *testing.T) {
	path, b := indexFile(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for p := 4; p < len(b)/4096; p += 3 { // leave the meta pages, smash every third page after them
		for i := p * 4096; i < (p+1)*4096 && i < len(b); i++ {
			b[i] = byte(rng.IntN(256))
		}
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(path, Options{})
	if err != nil {
		return // refusing to open a damaged file is an answer too
	}
	defer ro.Close()
	faults, err := ro.Check()
	if err == nil && len(faults) == 0 {
		t.Error("check found no fault in a file with smashed pages")
	}
}

// TestOpenTruncatedFile: a copy cut short is refused with a clear error at
// open; bbolt alone would crash the process reading past the end.
func TestOpenTruncatedFile(t *testing.T) {
	path, b := indexFile(t)
	for _, keep := range []int{3 * 4096, 16 * 4096} {
		if err := os.WriteFile(path, b[:keep], 0o600); err != nil {
			t.Fatal(err)
		}
		if ro, err := OpenReadOnly(path, Options{}); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Errorf("read-only open of a file cut to %d bytes: %v; want a 'damaged' error", keep, err)
			if err == nil {
				ro.Close()
			}
		}
		if w, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Errorf("writer open of a file cut to %d bytes: %v; want a 'damaged' error", keep, err)
			if err == nil {
				w.Close()
			}
		}
	}
	if err := os.WriteFile(path, []byte("not a database at all, just text"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(path, Options{}); err == nil {
		t.Error("a text file opened as an index")
	}
}
