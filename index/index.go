// Package index is the bbolt store of the price index (DESIGN §3): it writes
// one source run at a time and answers market snapshots, run lists, history
// points and disappeared listings. It is the only package that imports bbolt.
//
// # Keys
//
// Every key is byte-sortable: strings are joined with 0x00 separators and
// times are big-endian int64 Unix nanoseconds (8 bytes), so byte order is
// time order. Times before 1970 are not stored (WriteRun refuses a run that
// starts before the Unix epoch). Strings that are part of a key (source, id,
// kind, gpu, currency) must not contain 0x00; WriteRun refuses them.
//
// # Buckets
//
//   - meta: "version" → the layout version (one byte, 1).
//   - runs: source 0x00 started → listings.Run as JSON (times in UTC).
//   - listings: one nested bucket per source; in it id 0x00 kind → the
//     listing's state as JSON: {listing (latest attributes, whether or not
//     available), first_seen (start of the current or last continuous
//     presence), last_seen (last ok run that listed it available),
//     last_run (last ok run that listed it at all), present, seg_key (the
//     key of its open segment while present, of its last segment after)}.
//   - present: source 0x00 id 0x00 kind → segment key of the open segment,
//     one entry per listing present in its source's latest ok run. It lets a
//     run close the listings it no longer lists without reading every
//     listing the source ever had, and a snapshot of the latest market read
//     that market alone, not the history of its segments.
//   - segments: gpu 0x00 kind 0x00 start 0x00 source 0x00 id 0x00 kind →
//     a span during which the listing was continuously present (available)
//     at one price. The value is a compact binary record: version byte 1,
//     then big-endian int64 price (micro-units), end, first_seen, floor_at
//     (Unix nanoseconds, 0 for a zero time), float64 bits of disk_gb, and
//     the currency code as the remaining bytes. The other fields come from
//     the key. A segment opens only when a listing appears or its price,
//     currency or GPU name changes; otherwise its end moves to the new run.
//   - bysource: source 0x00 start 0x00 id 0x00 kind → segment key; the
//     secondary index that WalkRuns sweeps in time order.
//   - gone: gone_at 0x00 source 0x00 id 0x00 kind → listings.Gone as JSON,
//     for every presence that ended (the first ok run of the source after
//     last_seen that did not list it available; gone_at is that run's start).
//   - stats: gpu 0x00 kind 0x00 currency 0x00 started → listings.Row as JSON,
//     the rows the Deriver returned for the snapshot at each ok run.
//   - derived: source 0x00 started → big-endian uint64 count of the distinct
//     stats keys the Deriver's rows took for that ok run (0 without a
//     deriver); Check uses it.
//
// # Concurrency
//
// bbolt locks the file: a writer (Open) takes an exclusive lock, a reader
// (OpenReadOnly) a shared one. Both wait at most Options.Timeout and then
// fail with an error wrapping ErrBusy. No handle should be kept open between
// jobs (DESIGN §3, invariant 3).
package index

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	listings "github.com/listings-dev/listings"
)

// ErrBusy is wrapped by the error of Open and OpenReadOnly when another
// process holds the file lock longer than Options.Timeout.
var ErrBusy = errors.New("index busy: a collection is writing; retry")

// DefaultTimeout is the file-lock wait when Options.Timeout is zero.
const DefaultTimeout = 2 * time.Second

// Bucket names.
var (
	bucketMeta     = []byte("meta")
	bucketRuns     = []byte("runs")
	bucketListings = []byte("listings")
	bucketPresent  = []byte("present")
	bucketSegments = []byte("segments")
	bucketBySource = []byte("bysource")
	bucketGone     = []byte("gone")
	bucketStats    = []byte("stats")
	bucketDerived  = []byte("derived")

	allBuckets = [][]byte{bucketMeta, bucketRuns, bucketListings, bucketPresent,
		bucketSegments, bucketBySource, bucketGone, bucketStats, bucketDerived}

	keyVersion = []byte("version")
)

// layoutVersion is the version of the bucket layout stored in meta.
const layoutVersion = 1

// Options configure Open and OpenReadOnly.
type Options struct {
	// Timeout is how long to wait for the file lock; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxAge is the max_age of the snapshot built when a run is written;
	// 0 means listings.DefaultMaxAge.
	MaxAge time.Duration
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxAge == 0 {
		o.MaxAge = listings.DefaultMaxAge
	}
	return o
}

// DB is an open index file. A DB opened with OpenReadOnly on a missing file
// is an empty index: every query returns nothing.
type DB struct {
	path     string
	opts     Options
	bolt     *bolt.DB // nil for a missing read-only index
	readOnly bool
}

// Open opens the index at path for writing, creating the file and its
// parent directory when missing. It waits at most o.Timeout for the file
// lock and then fails with an error wrapping ErrBusy.
func Open(path string, o Options) (*DB, error) {
	o = o.withDefaults()
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("index: open %s: %w", path, err)
		}
	}
	if err := precheck(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("index: open: %w", err)
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.Timeout})
	if err != nil {
		return nil, openError(path, err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch v := meta.Get(keyVersion); {
		case v == nil:
			return meta.Put(keyVersion, []byte{layoutVersion})
		case len(v) != 1 || v[0] != layoutVersion:
			return fmt.Errorf("layout version %v, want %d", v, layoutVersion)
		}
		return nil
	})
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("index: open %s: %w", path, err)
	}
	return &DB{path: path, opts: o, bolt: b}, nil
}

// OpenReadOnly opens the index at path for reading. A missing file is an
// empty index and is not created. It waits at most o.Timeout for the file
// lock (held by a writer) and then fails with an error wrapping ErrBusy.
func OpenReadOnly(path string, o Options) (*DB, error) {
	o = o.withDefaults()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return &DB{path: path, opts: o, readOnly: true}, nil
	} else if err != nil {
		return nil, fmt.Errorf("index: open %s: %w", path, err)
	}
	if err := precheck(path); err != nil {
		return nil, fmt.Errorf("index: open: %w", err)
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.Timeout, ReadOnly: true})
	if err != nil {
		return nil, openError(path, err)
	}
	return &DB{path: path, opts: o, bolt: b, readOnly: true}, nil
}

func openError(path string, err error) error {
	if errors.Is(err, bolt.ErrTimeout) {
		return fmt.Errorf("%w (open %s: %w)", ErrBusy, path, err)
	}
	return fmt.Errorf("index: open %s: %w", path, err)
}

// Close releases the file and its lock.
func (db *DB) Close() error {
	if db.bolt == nil {
		return nil
	}
	if err := db.bolt.Close(); err != nil {
		return fmt.Errorf("index: close %s: %w", db.path, err)
	}
	return nil
}

// Path is the file the index was opened from.
func (db *DB) Path() string { return db.path }

// view runs fn in a read transaction; on an empty read-only index it does
// nothing.
func (db *DB) view(fn func(tx *bolt.Tx) error) error {
	if db.bolt == nil {
		return nil
	}
	return db.bolt.View(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("%s is not a listings index (bucket %s missing)", db.path, name)
			}
		}
		return fn(tx)
	})
}
