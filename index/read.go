package index

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	listings "github.com/listings-dev/listings"
)

// SnapshotQuery selects a market snapshot.
type SnapshotQuery struct {
	AsOf time.Time
	// MaxAge is the oldest a source's latest ok run may be and still count;
	// 0 means listings.DefaultMaxAge, a negative value no limit.
	MaxAge time.Duration
	GPUs   []string        // canonical names; nil means all
	Kinds  []listings.Kind // nil means all
	// GoneWindow is how far before AsOf disappeared floor listings are
	// reported; 0 means listings.FlagWindow.
	GoneWindow time.Duration
}

func (q SnapshotQuery) withDefaults() SnapshotQuery {
	if q.MaxAge == 0 {
		q.MaxAge = listings.DefaultMaxAge
	}
	if q.GoneWindow == 0 {
		q.GoneWindow = listings.FlagWindow
	}
	return q
}

// Snapshot returns the market at q.AsOf (DESIGN §4): for each source its
// latest ok run started at or before AsOf, split into fresh runs and stale
// ones by MaxAge; the segments of the fresh runs' sources that cover their
// run, ordered by (gpu, kind, start, source, id); the floor listings (FloorAt
// set, at or before GoneAt) that disappeared in the GoneWindow before AsOf,
// in GoneAt order; and, per row key, the last time a stored stats row at or
// before AsOf had listings (its LastOKRun, or the time it was stored).
func (db *DB) Snapshot(q SnapshotQuery) (*listings.Snapshot, error) {
	var snap *listings.Snapshot
	err := db.view(func(tx *bolt.Tx) error {
		var err error
		snap, err = snapshot(tx, q)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("index: snapshot at %s: %w", q.AsOf.Format(time.RFC3339), err)
	}
	if snap == nil { // empty index
		q = q.withDefaults()
		snap = &listings.Snapshot{AsOf: q.AsOf, MaxAge: q.MaxAge,
			Runs: map[string]listings.Run{}, LastListed: map[string]time.Time{}}
	}
	return snap, nil
}

// snapshot builds the snapshot inside tx; WriteRun calls it in its write
// transaction so the deriver sees the run being written.
func snapshot(tx *bolt.Tx, q SnapshotQuery) (*listings.Snapshot, error) {
	q = q.withDefaults()
	snap := &listings.Snapshot{
		AsOf: q.AsOf, MaxAge: q.MaxAge,
		Runs: map[string]listings.Run{}, LastListed: map[string]time.Time{},
	}
	asOf := nanos(q.AsOf)
	runs := tx.Bucket(bucketRuns)
	if runs == nil {
		return snap, nil
	}
	var latest []listings.Run
	for _, src := range firstParts(runs.Cursor(), nil) {
		r, ok, err := latestOK(runs, src, q.AsOf)
		if err != nil {
			return nil, err
		}
		if ok {
			latest = append(latest, r)
		}
	}
	fresh, stale := listings.FreshRuns(latest, q.AsOf, q.MaxAge)
	for _, r := range fresh {
		snap.Runs[r.Source] = r
	}
	snap.Stale = stale

	gpuOK := func(string) bool { return true }
	if q.GPUs != nil {
		set := setOf(q.GPUs)
		gpuOK = func(g string) bool { return set[g] }
	}
	kindOK := func(listings.Kind) bool { return true }
	if q.Kinds != nil {
		set := map[listings.Kind]bool{}
		for _, k := range q.Kinds {
			set[k] = true
		}
		kindOK = func(k listings.Kind) bool { return set[k] }
	}

	// Present. A source whose snapshot run is its latest ok run (the usual
	// case: a query about now) is read from the present bucket, its open
	// segments: the cost is the size of that market, not of its history.
	// Older snapshot runs (--as-of in the past) are found by scanning the
	// (gpu, kind) prefixes of segments in start order up to AsOf.
	segs := tx.Bucket(bucketSegments)
	scan := map[string]bool{}
	for _, r := range fresh {
		last, ok, err := latestOK(runs, r.Source, maxTime)
		if err != nil {
			return nil, err
		}
		if !ok || !last.Started.Equal(r.Started) {
			scan[r.Source] = true
			continue
		}
		if segs == nil {
			continue
		}
		err = presentOf(tx.Bucket(bucketPresent), segs, r, gpuOK, kindOK, func(s listings.Segment) {
			snap.Present = append(snap.Present, listings.Presence{Segment: s, RunStarted: r.Started})
		})
		if err != nil {
			return nil, err
		}
	}
	if segs != nil && len(scan) > 0 {
		c := segs.Cursor()
		err := eachPrefix(c, q.GPUs, q.Kinds, nil, func(p []byte) error {
			for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
				if len(k) < len(p)+8 {
					return fmt.Errorf("segment key %q: %w", k, errBadKey)
				}
				if binary.BigEndian.Uint64(k[len(p):]) > asOf {
					break
				}
				s, err := decodeSegment(k, v)
				if err != nil {
					return err
				}
				r, ok := snap.Runs[s.Source]
				if !ok || !scan[s.Source] || s.Start.After(r.Started) || s.End.Before(r.Started) {
					continue
				}
				snap.Present = append(snap.Present, listings.Presence{Segment: s, RunStarted: r.Started})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}

	// One order whichever way a presence was found: the segments' key order.
	sort.Slice(snap.Present, func(i, j int) bool {
		a, b := &snap.Present[i].Segment, &snap.Present[j].Segment
		switch {
		case a.GPU != b.GPU:
			return a.GPU < b.GPU
		case a.Kind != b.Kind:
			return a.Kind < b.Kind
		case !a.Start.Equal(b.Start):
			return a.Start.Before(b.Start)
		case a.Source != b.Source:
			return a.Source < b.Source
		}
		return a.ID < b.ID
	})

	// Gone: floor listings that disappeared in the window.
	if gb := tx.Bucket(bucketGone); gb != nil {
		c := gb.Cursor()
		for k, v := c.Seek(key(q.AsOf.Add(-q.GoneWindow))); k != nil; k, v = c.Next() {
			if len(k) < 8 || binary.BigEndian.Uint64(k) > asOf {
				break
			}
			var g listings.Gone
			if err := json.Unmarshal(v, &g); err != nil {
				return nil, fmt.Errorf("decode gone %q: %w", k, err)
			}
			if g.FloorAt.IsZero() || g.FloorAt.After(g.GoneAt) || !gpuOK(g.GPU) || !kindOK(g.Kind) {
				continue
			}
			snap.Gone = append(snap.Gone, g)
		}
	}

	// LastListed: per row key, the latest stored row with listings.
	if sb := tx.Bucket(bucketStats); sb != nil {
		c := sb.Cursor()
		err := eachPrefix(c, q.GPUs, q.Kinds, []string{}, func(p []byte) error {
			for k, v := seekLE(c, append(append([]byte(nil), p...), key(q.AsOf)...)); k != nil && bytes.HasPrefix(k, p); k, v = c.Prev() {
				var r struct {
					Listings  int       `json:"listings"`
					LastOKRun time.Time `json:"last_ok_run"`
				}
				if err := json.Unmarshal(v, &r); err != nil {
					return fmt.Errorf("decode row %q: %w", k, err)
				}
				if r.Listings <= 0 {
					continue
				}
				t := r.LastOKRun
				if t.IsZero() {
					t = fromNanos(binary.BigEndian.Uint64(k[len(p):]))
				}
				parts := bytes.Split(p[:len(p)-1], []byte{sep})
				snap.LastListed[listings.RowKey(string(parts[0]), listings.Kind(parts[1]), string(parts[2]))] = t
				break
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return snap, nil
}

// eachPrefix calls fn with the key prefix "gpu 0x00 kind 0x00" (and, when
// currencies is non-nil, "gpu 0x00 kind 0x00 currency 0x00" for every
// currency stored) of each selected (gpu, kind) present in c's bucket, in key
// order. Nil gpus or kinds select every one stored; the stored ones are
// found by seeking from prefix to prefix, so unselected keys are never read.
func eachPrefix(c *bolt.Cursor, gpus []string, kinds []listings.Kind, currencies []string, fn func(p []byte) error) error {
	gs := gpus
	if gs == nil {
		gs = firstParts(c, nil)
	} else {
		gs = sortedSet(gs)
	}
	for _, g := range gs {
		var ks []string
		if kinds == nil {
			ks = firstParts(c, prefix(g))
		} else {
			for _, k := range kinds {
				ks = append(ks, string(k))
			}
			ks = sortedSet(ks)
		}
		for _, k := range ks {
			if currencies == nil {
				if err := fn(prefix(g, k)); err != nil {
					return err
				}
				continue
			}
			for _, cur := range firstParts(c, prefix(g, k)) {
				if err := fn(prefix(g, k, cur)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func setOf(ss []string) map[string]bool {
	m := make(map[string]bool, len(ss))
	for _, s := range ss {
		m[s] = true
	}
	return m
}

func sortedSet(ss []string) []string {
	m := setOf(ss)
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Runs returns the runs of source ("" for every source) started at or after
// since, in time order (ties by source).
func (db *DB) Runs(source string, since time.Time) ([]listings.Run, error) {
	var out []listings.Run
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRuns)
		c := b.Cursor()
		sources := []string{source}
		if source == "" {
			sources = firstParts(c, nil)
		}
		for _, src := range sources {
			p := prefix(src)
			for k, v := c.Seek(key(src, since)); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
				var r listings.Run
				if err := json.Unmarshal(v, &r); err != nil {
					return fmt.Errorf("decode run %q: %w", k, err)
				}
				out = append(out, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index: runs: %w", err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.Before(out[j].Started)
		}
		return out[i].Source < out[j].Source
	})
	return out, nil
}

// LatestOK returns the latest ok run of source started at or before asOf.
func (db *DB) LatestOK(source string, asOf time.Time) (listings.Run, bool, error) {
	var r listings.Run
	var ok bool
	err := db.view(func(tx *bolt.Tx) error {
		var err error
		r, ok, err = latestOK(tx.Bucket(bucketRuns), source, asOf)
		return err
	})
	if err != nil {
		return listings.Run{}, false, fmt.Errorf("index: latest ok run of %s: %w", source, err)
	}
	return r, ok, nil
}

// Sources returns the sources that have runs, sorted.
func (db *DB) Sources() ([]string, error) {
	var out []string
	err := db.view(func(tx *bolt.Tx) error {
		out = firstParts(tx.Bucket(bucketRuns).Cursor(), nil)
		return nil
	})
	return out, err
}

// History returns the stats rows stored for gpu and kind ("" for every
// kind) by ok runs started in [from, to] (a zero to means no upper bound),
// all currencies, in time order (ties by kind, then currency).
func (db *DB) History(gpu string, kind listings.Kind, from, to time.Time) ([]listings.Row, error) {
	type point struct {
		t   uint64
		row listings.Row
	}
	var pts []point
	if to.IsZero() {
		to = maxTime
	}
	var kinds []listings.Kind
	if kind != "" {
		kinds = []listings.Kind{kind}
	}
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketStats).Cursor()
		return eachPrefix(c, []string{gpu}, kinds, []string{}, func(p []byte) error {
			hi := nanos(to)
			for k, v := c.Seek(append(append([]byte(nil), p...), key(from)...)); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
				t := binary.BigEndian.Uint64(k[len(p):])
				if t > hi {
					break
				}
				var r listings.Row
				if err := json.Unmarshal(v, &r); err != nil {
					return fmt.Errorf("decode row %q: %w", k, err)
				}
				pts = append(pts, point{t, r})
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("index: history of %s: %w", gpu, err)
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].t < pts[j].t })
	out := make([]listings.Row, len(pts))
	for i := range pts {
		out[i] = pts[i].row
	}
	return out, nil
}

// Gone returns every listing that disappeared with GoneAt in [from, to] (a
// zero to means no upper bound), floor listing or not, in GoneAt order.
func (db *DB) Gone(from, to time.Time) ([]listings.Gone, error) {
	var out []listings.Gone
	if to.IsZero() {
		to = maxTime
	}
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketGone).Cursor()
		hi := nanos(to)
		for k, v := c.Seek(key(from)); k != nil; k, v = c.Next() {
			if len(k) < 8 || binary.BigEndian.Uint64(k) > hi {
				break
			}
			var g listings.Gone
			if err := json.Unmarshal(v, &g); err != nil {
				return fmt.Errorf("decode gone %q: %w", k, err)
			}
			out = append(out, g)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index: gone: %w", err)
	}
	return out, nil
}

// GPUsSeen returns the distinct GPU names of all segments, in catalog order
// (unknown names last, alphabetically).
func (db *DB) GPUsSeen() ([]string, error) {
	var out []string
	err := db.view(func(tx *bolt.Tx) error {
		out = firstParts(tx.Bucket(bucketSegments).Cursor(), nil)
		return nil
	})
	listings.SortGPUNames(out)
	return out, err
}

// presentOf calls fn with the open segment of every listing present in r,
// the latest ok run of its source, whose GPU and kind pass the filters. The
// present bucket maps source 0x00 id 0x00 kind to the segment key, which
// starts with gpu 0x00 kind 0x00, so the filters need no decoding.
func presentOf(present, segs *bolt.Bucket, r listings.Run, gpuOK func(string) bool, kindOK func(listings.Kind) bool, fn func(listings.Segment)) error {
	if present == nil {
		return nil
	}
	prefix := append([]byte(r.Source), 0)
	c := present.Cursor()
	for k, sk := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, sk = c.Next() {
		gpu, rest, ok := bytes.Cut(sk, []byte{0})
		if !ok {
			return fmt.Errorf("present %q: segment key %q: %w", k, sk, errBadKey)
		}
		kind, _, ok := bytes.Cut(rest, []byte{0})
		if !ok {
			return fmt.Errorf("present %q: segment key %q: %w", k, sk, errBadKey)
		}
		if !gpuOK(string(gpu)) || !kindOK(listings.Kind(kind)) {
			continue
		}
		v := segs.Get(sk)
		if v == nil {
			return fmt.Errorf("present %q: segment %q missing: %w", k, sk, errBadKey)
		}
		s, err := decodeSegment(sk, v)
		if err != nil {
			return err
		}
		if s.Start.After(r.Started) || s.End.Before(r.Started) {
			continue // not in this run: an index fault check reports
		}
		fn(s)
	}
	return nil
}
