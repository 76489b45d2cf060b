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

// RunListing is one listing present in one ok run, as WalkRuns reports it.
type RunListing struct {
	listings.Segment // the segment covering the run
	// Attrs are the listing's latest attributes: the index keeps no older
	// ones, so a region or reliability that changed shows its latest value.
	Attrs listings.Listing
	// LastSeen is the last ok run of the continuous presence this run is
	// part of, as far as the index knows (the presence may go on).
	LastSeen time.Time
	// GoneAt is the ok run at which that presence ended, zero while it
	// goes on.
	GoneAt time.Time
	// PresenceFloorAt is the FloorAt of the presence's last segment: the
	// first run of the whole presence at which the listing was a floor
	// listing (a later segment may carry a mark this one lacks).
	PresenceFloorAt time.Time
}

// WalkRuns calls fn for every ok run with from <= Started <= to (a zero to
// means no upper bound), in time order (ties by source), with the listings
// present in that run in segment key order (gpu, kind, start, id): the same
// listings a Snapshot at the run's start reports for its source. It sweeps
// each source's segments in start order through `bysource`, so memory is
// bounded by the listings present at once, not by history. fn runs inside
// the read transaction and may keep present; an error from fn stops the walk
// and is returned as is.
func (db *DB) WalkRuns(from, to time.Time, fn func(run listings.Run, present []RunListing) error) error {
	if to.IsZero() {
		to = maxTime
	}
	var fnErr error
	err := db.view(func(tx *bolt.Tx) error {
		var sweeps []*sweep
		for _, src := range firstParts(tx.Bucket(bucketRuns).Cursor(), nil) {
			s, err := newSweep(tx, src, from, to)
			if err != nil {
				return err
			}
			if s.ok {
				sweeps = append(sweeps, s)
			}
		}
		for len(sweeps) > 0 {
			// The next run: the earliest head, ties by source (sweeps are in
			// source order).
			i := 0
			for j, s := range sweeps {
				if s.head.Started.Before(sweeps[i].head.Started) {
					i = j
				}
			}
			s := sweeps[i]
			present, err := s.present()
			if err != nil {
				return err
			}
			if err := fn(s.head, present); err != nil {
				fnErr = err
				return err
			}
			if err := s.advance(); err != nil {
				return err
			}
			if !s.ok {
				sweeps = append(sweeps[:i], sweeps[i+1:]...)
			}
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("index: walk runs: %w", err)
	}
	return nil
}

// sweep walks one source's ok runs and keeps the set of its segments that
// cover the current run.
type sweep struct {
	tx     *bolt.Tx
	source string
	to     uint64

	runs   *bolt.Cursor // at head
	head   listings.Run
	ok     bool // head is valid
	prefix []byte

	bys     *bolt.Cursor // at the next bysource entry not yet taken
	bysKey  []byte
	bysVal  []byte
	segs    *bolt.Bucket
	states  *bolt.Bucket
	runsB   *bolt.Bucket
	active  map[string]RunListing // segment key -> listing
	nextRun map[uint64]uint64     // end -> next ok run start (0: none); a small cache
}

func newSweep(tx *bolt.Tx, source string, from, to time.Time) (*sweep, error) {
	s := &sweep{
		tx: tx, source: source, to: nanos(to), prefix: prefix(source),
		segs:    tx.Bucket(bucketSegments),
		states:  tx.Bucket(bucketListings).Bucket([]byte(source)),
		runsB:   tx.Bucket(bucketRuns),
		active:  map[string]RunListing{},
		nextRun: map[uint64]uint64{},
	}
	s.runs = s.runsB.Cursor()
	k, v := s.runs.Seek(key(source, from))
	if err := s.settle(k, v); err != nil {
		return nil, err
	}
	s.bys = tx.Bucket(bucketBySource).Cursor()
	s.bysKey, s.bysVal = s.bys.Seek(s.prefix)
	return s, nil
}

// settle moves the runs cursor from k to the first ok run in range.
func (s *sweep) settle(k, v []byte) error {
	for ; k != nil && bytes.HasPrefix(k, s.prefix); k, v = s.runs.Next() {
		if binary.BigEndian.Uint64(k[len(s.prefix):]) > s.to {
			break
		}
		var r listings.Run
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode run %q: %w", k, err)
		}
		if r.Status == listings.RunOK {
			s.head, s.ok = r, true
			return nil
		}
	}
	s.ok = false
	return nil
}

func (s *sweep) advance() error {
	k, v := s.runs.Next()
	return s.settle(k, v)
}

// present updates the active set to the head run and returns it sorted.
func (s *sweep) present() ([]RunListing, error) {
	t := s.head.Started
	for sk, rl := range s.active {
		if rl.End.Before(t) {
			delete(s.active, sk)
		}
	}
	hi := nanos(t)
	for ; s.bysKey != nil && bytes.HasPrefix(s.bysKey, s.prefix); s.bysKey, s.bysVal = s.bys.Next() {
		if len(s.bysKey) < len(s.prefix)+8 {
			return nil, fmt.Errorf("bysource key %q: %w", s.bysKey, errBadKey)
		}
		if binary.BigEndian.Uint64(s.bysKey[len(s.prefix):]) > hi {
			break
		}
		v := s.segs.Get(s.bysVal)
		if v == nil {
			return nil, fmt.Errorf("bysource %q: segment %q missing", s.bysKey, s.bysVal)
		}
		seg, err := decodeSegment(s.bysVal, v)
		if err != nil {
			return nil, err
		}
		if seg.End.Before(t) {
			continue // over before this run (or before from)
		}
		rl, err := s.listing(seg)
		if err != nil {
			return nil, err
		}
		s.active[string(s.bysVal)] = rl
	}
	keys := make([]string, 0, len(s.active))
	for k := range s.active {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]RunListing, len(keys))
	for i, k := range keys {
		out[i] = s.active[k]
	}
	return out, nil
}

// listing completes a segment with the listing's attributes and the end of
// its presence: it follows the chain of segments that continue it (a price
// change opens the next one at the next ok run) until the next ok run has
// none.
func (s *sweep) listing(seg listings.Segment) (RunListing, error) {
	rl := RunListing{Segment: seg}
	lk := seg.ID + "\x00" + string(seg.Kind)
	if s.states != nil {
		if v := s.states.Get([]byte(lk)); v != nil {
			var st state
			if err := json.Unmarshal(v, &st); err != nil {
				return rl, fmt.Errorf("decode state of %q: %w", seg.ID, err)
			}
			rl.Attrs = st.Listing
		}
	}
	bys := s.tx.Bucket(bucketBySource)
	cur := seg
	for {
		next, err := s.nextOK(cur.End)
		if err != nil {
			return rl, err
		}
		if next == 0 {
			break // the presence goes on
		}
		sk := bys.Get(key(s.source, fromNanos(next), seg.ID, string(seg.Kind)))
		if sk == nil {
			rl.GoneAt = fromNanos(next)
			break
		}
		v := s.segs.Get(sk)
		if v == nil {
			return rl, fmt.Errorf("bysource: segment %q missing", sk)
		}
		if cur, err = decodeSegment(sk, v); err != nil {
			return rl, err
		}
	}
	rl.LastSeen = cur.End
	rl.PresenceFloorAt = cur.FloorAt
	return rl, nil
}

// nextOK returns the start of the source's first ok run after t (0: none).
func (s *sweep) nextOK(t time.Time) (uint64, error) {
	n := nanos(t)
	if v, ok := s.nextRun[n]; ok {
		return v, nil
	}
	if len(s.nextRun) > 4096 {
		clear(s.nextRun)
	}
	c := s.runsB.Cursor()
	var next uint64
	for k, v := c.Seek(key(s.source, fromNanos(n+1))); k != nil && bytes.HasPrefix(k, s.prefix); k, v = c.Next() {
		var r struct {
			Status listings.RunStatus `json:"status"`
		}
		if err := json.Unmarshal(v, &r); err != nil {
			return 0, fmt.Errorf("decode run %q: %w", k, err)
		}
		if r.Status == listings.RunOK {
			next = binary.BigEndian.Uint64(k[len(s.prefix):])
			break
		}
	}
	s.nextRun[n] = next
	return next, nil
}
