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

// Check verifies the index and returns every fault found (nil: healthy). An
// empty (missing) index is healthy. It runs bbolt's own consistency check,
// then this tool's invariants:
//   - every bucket exists and the layout version is known;
//   - every run decodes and its key matches its source and start;
//   - every segment key and value decode, Start <= End <= the source's
//     latest ok run, Start and End are ok runs of its source, FirstSeen <=
//     Start and FloorAt, when set, lies in [FirstSeen, End];
//   - no two segments of one listing overlap, and every segment has its
//     bysource entry and every bysource entry points at an existing segment
//     of the same source, start and listing;
//   - every listing state decodes; a present state has a present entry
//     naming its SegKey, that segment exists and ends at its LastSeen, and
//     its LastRun and LastSeen are ok runs of the source; every present entry
//     belongs to a present state;
//   - every gone record decodes, matches its key, has LastSeen < GoneAt and
//     GoneAt is an ok run of its source;
//   - every stats row decodes and matches its key, and its time is an ok
//     run; every ok run has a derived count, and at least that many stats
//     rows carry its start time (rows of runs of other sources at the same
//     instant share keys, hence "at least").
func (db *DB) Check() ([]string, error) {
	var faults []string
	if db.bolt == nil {
		return nil, nil
	}
	err := db.bolt.View(func(tx *bolt.Tx) (err error) {
		// bbolt panics on some damaged pages instead of returning an error;
		// a damaged file is a fault to report, not a crash.
		defer func() {
			if r := recover(); r != nil {
				faults = append(faults, fmt.Sprintf("bbolt: the file is damaged: %v", r))
				err = nil
			}
		}()
		for err := range tx.Check() {
			faults = append(faults, "bbolt: "+err.Error())
		}
		if len(faults) > 0 {
			return nil // the invariants cannot be read from a broken file
		}
		c := &checker{tx: tx}
		c.run()
		faults = append(faults, c.faults...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index: check: %w", err)
	}
	return faults, nil
}

type checker struct {
	tx     *bolt.Tx
	faults []string
	okRuns map[string]bool   // source 0x00 started -> ok run
	latest map[string]uint64 // source -> latest ok run
	okAt   map[uint64]bool   // start times of ok runs
}

func (c *checker) faultf(format string, args ...any) {
	c.faults = append(c.faults, fmt.Sprintf(format, args...))
}

func (c *checker) isOK(source string, t time.Time) bool {
	return c.okRuns[string(key(source, t))]
}

func (c *checker) run() {
	for _, name := range allBuckets {
		if c.tx.Bucket(name) == nil {
			c.faultf("bucket %s missing", name)
			return
		}
	}
	if v := c.tx.Bucket(bucketMeta).Get(keyVersion); len(v) != 1 || v[0] != layoutVersion {
		c.faultf("meta: layout version %v, want %d", v, layoutVersion)
	}
	c.runs()
	c.segments()
	c.states()
	c.gone()
	c.stats()
}

func (c *checker) runs() {
	c.okRuns = map[string]bool{}
	c.latest = map[string]uint64{}
	c.okAt = map[uint64]bool{}
	c.tx.Bucket(bucketRuns).ForEach(func(k, v []byte) error {
		var r listings.Run
		if err := json.Unmarshal(v, &r); err != nil {
			c.faultf("run %q: decode: %v", k, err)
			return nil
		}
		if !bytes.Equal(k, key(r.Source, r.Started)) {
			c.faultf("run %q: key does not match source %q started %s", k, r.Source, r.Started.Format(time.RFC3339Nano))
			return nil
		}
		if r.Status == listings.RunOK {
			c.okRuns[string(k)] = true
			n := nanos(r.Started)
			c.okAt[n] = true
			if n > c.latest[r.Source] {
				c.latest[r.Source] = n
			}
		}
		return nil
	})
}

func (c *checker) segments() {
	segs := c.tx.Bucket(bucketSegments)
	bys := c.tx.Bucket(bucketBySource)
	n := 0
	segs.ForEach(func(k, v []byte) error {
		n++
		s, err := decodeSegment(k, v)
		if err != nil {
			c.faultf("segment: %v", err)
			return nil
		}
		id := fmt.Sprintf("segment %s/%s/%s at %s", s.Source, s.ID, s.Kind, s.Start.Format(time.RFC3339))
		switch {
		case s.End.Before(s.Start):
			c.faultf("%s: end %s before start", id, s.End.Format(time.RFC3339))
		case nanos(s.End) > c.latest[s.Source]:
			c.faultf("%s: end %s after the latest ok run of its source", id, s.End.Format(time.RFC3339))
		}
		if !c.isOK(s.Source, s.Start) {
			c.faultf("%s: start is not an ok run of %s", id, s.Source)
		}
		if !c.isOK(s.Source, s.End) {
			c.faultf("%s: end %s is not an ok run of %s", id, s.End.Format(time.RFC3339), s.Source)
		}
		if s.FirstSeen.After(s.Start) {
			c.faultf("%s: first seen %s after start", id, s.FirstSeen.Format(time.RFC3339))
		}
		if !s.FloorAt.IsZero() && (s.FloorAt.Before(s.FirstSeen) || s.FloorAt.After(s.End)) {
			c.faultf("%s: floor at %s outside its presence", id, s.FloorAt.Format(time.RFC3339))
		}
		if got := bys.Get(key(s.Source, s.Start, s.ID, string(s.Kind))); !bytes.Equal(got, k) {
			c.faultf("%s: bysource entry missing or pointing elsewhere", id)
		}
		return nil
	})

	// bysource, in (source, start) order: entries resolve, and segments of
	// one listing do not overlap (each starts after the previous one ends).
	lastEnd := map[string]time.Time{} // source 0x00 id 0x00 kind -> end
	m := 0
	bys.ForEach(func(k, v []byte) error {
		m++
		r := keyReader{b: k}
		src, start, id, kind := r.str(), r.time(), r.str(), r.str()
		if err := r.end(); err != nil {
			c.faultf("bysource %q: %v", k, err)
			return nil
		}
		sv := segs.Get(v)
		if sv == nil {
			c.faultf("bysource %s/%s/%s at %s: segment missing", src, id, kind, start.Format(time.RFC3339))
			return nil
		}
		s, err := decodeSegment(v, sv)
		if err != nil {
			return nil // reported above
		}
		if s.Source != src || s.ID != id || string(s.Kind) != kind || !s.Start.Equal(start) {
			c.faultf("bysource %s/%s/%s at %s: points at another segment", src, id, kind, start.Format(time.RFC3339))
			return nil
		}
		lk := src + "\x00" + id + "\x00" + kind
		if e, ok := lastEnd[lk]; ok && !s.Start.After(e) {
			c.faultf("listing %s/%s/%s: segment at %s overlaps the previous one (ends %s)",
				src, id, kind, s.Start.Format(time.RFC3339), e.Format(time.RFC3339))
		}
		lastEnd[lk] = s.End
		return nil
	})
	if n != m {
		c.faultf("segments: %d segments but %d bysource entries", n, m)
	}
}

func (c *checker) states() {
	segs := c.tx.Bucket(bucketSegments)
	present := c.tx.Bucket(bucketPresent)
	nPresent := 0
	c.tx.Bucket(bucketListings).ForEachBucket(func(src []byte) error {
		source := string(src)
		c.tx.Bucket(bucketListings).Bucket(src).ForEach(func(k, v []byte) error {
			var st state
			if err := json.Unmarshal(v, &st); err != nil {
				c.faultf("listing %s/%q: decode state: %v", source, k, err)
				return nil
			}
			id := fmt.Sprintf("listing %s/%s/%s", source, st.Listing.ID, st.Listing.Kind)
			if string(k) != st.Listing.Key() {
				c.faultf("%s: stored under key %q", id, k)
			}
			if !c.isOK(source, st.LastRun) {
				c.faultf("%s: last run %s is not an ok run", id, st.LastRun.Format(time.RFC3339))
			}
			if !st.Present {
				return nil
			}
			nPresent++
			if !c.isOK(source, st.LastSeen) {
				c.faultf("%s: last seen %s is not an ok run", id, st.LastSeen.Format(time.RFC3339))
			}
			if pv := present.Get(append(prefix(source), k...)); !bytes.Equal(pv, st.SegKey) {
				c.faultf("%s: present but its present entry is missing or names another segment", id)
			}
			sv := segs.Get(st.SegKey)
			if sv == nil {
				c.faultf("%s: present but its open segment is missing", id)
				return nil
			}
			s, err := decodeSegment(st.SegKey, sv)
			if err != nil {
				return nil // reported with the segments
			}
			if !s.End.Equal(st.LastSeen) || !s.FirstSeen.Equal(st.FirstSeen) {
				c.faultf("%s: open segment ends %s (first seen %s), state last seen %s (first seen %s)", id,
					s.End.Format(time.RFC3339), s.FirstSeen.Format(time.RFC3339),
					st.LastSeen.Format(time.RFC3339), st.FirstSeen.Format(time.RFC3339))
			}
			return nil
		})
		return nil
	})
	if n := present.Stats().KeyN; n != nPresent {
		c.faultf("present: %d entries but %d present listing states", n, nPresent)
	}
}

func (c *checker) gone() {
	c.tx.Bucket(bucketGone).ForEach(func(k, v []byte) error {
		var g listings.Gone
		if err := json.Unmarshal(v, &g); err != nil {
			c.faultf("gone %q: decode: %v", k, err)
			return nil
		}
		id := fmt.Sprintf("gone %s/%s/%s at %s", g.Source, g.ID, g.Kind, g.GoneAt.Format(time.RFC3339))
		if !bytes.Equal(k, key(g.GoneAt, g.Source, g.ID, string(g.Kind))) {
			c.faultf("%s: key does not match", id)
		}
		if !g.LastSeen.Before(g.GoneAt) || g.FirstSeen.After(g.LastSeen) {
			c.faultf("%s: first seen %s, last seen %s out of order", id,
				g.FirstSeen.Format(time.RFC3339), g.LastSeen.Format(time.RFC3339))
		}
		if !c.isOK(g.Source, g.GoneAt) {
			c.faultf("%s: gone at is not an ok run", id)
		}
		return nil
	})
}

func (c *checker) stats() {
	rowsAt := map[uint64]uint64{}
	c.tx.Bucket(bucketStats).ForEach(func(k, v []byte) error {
		var r listings.Row
		if err := json.Unmarshal(v, &r); err != nil {
			c.faultf("stats %q: decode: %v", k, err)
			return nil
		}
		if len(k) < 8 {
			c.faultf("stats %q: %v", k, errBadKey)
			return nil
		}
		t := binary.BigEndian.Uint64(k[len(k)-8:])
		if !bytes.Equal(k, key(r.GPU, string(r.Kind), r.Currency, fromNanos(t))) {
			c.faultf("stats row %s/%s/%s: key %q does not match", r.GPU, r.Kind, r.Currency, k)
		}
		if !c.okAt[t] {
			c.faultf("stats row %s/%s/%s at %s: no ok run then", r.GPU, r.Kind, r.Currency, fromNanos(t).Format(time.RFC3339))
		}
		rowsAt[t]++
		return nil
	})
	derived := c.tx.Bucket(bucketDerived)
	keys := make([]string, 0, len(c.okRuns))
	for k := range c.okRuns {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := keyReader{b: []byte(k)}
		src, t := r.str(), r.time()
		v := derived.Get([]byte(k))
		if len(v) != 8 {
			c.faultf("run %s at %s: ok run without a derived count", src, t.Format(time.RFC3339))
			continue
		}
		if want, got := binary.BigEndian.Uint64(v), rowsAt[nanos(t)]; got < want {
			c.faultf("run %s at %s: %d stats rows stored, deriver returned %d", src, t.Format(time.RFC3339), got, want)
		}
	}
}
