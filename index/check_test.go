package index

import (
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
