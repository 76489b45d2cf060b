package index

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	listings "github.com/listings-dev/listings"
)

// Deriver turns the market snapshot taken when an ok run is written into
// the statistics rows stored for that run, and names the listings of the
// run's source that are floor listings in it, as Listing.Key values
// (id 0x00 kind). The stats package provides one; WriteRun accepts nil.
type Deriver func(snap *listings.Snapshot) (rows []listings.Row, floor []string)

// WriteResult says what a WriteRun did to the segments.
type WriteResult struct {
	Duplicate bool // the run was already stored; nothing changed
	Opened    int  // segments opened (appearances and price changes)
	Extended  int  // open segments whose end moved to this run
	Closed    int  // presences that ended (each has a Gone record)
}

// state is a listing's entry in the listings/<source> bucket.
type state struct {
	Listing   listings.Listing `json:"listing"`
	FirstSeen time.Time        `json:"first_seen,omitzero"`
	LastSeen  time.Time        `json:"last_seen,omitzero"`
	LastRun   time.Time        `json:"last_run"`
	Present   bool             `json:"present"`
	SegKey    []byte           `json:"seg_key,omitempty"`
}

var unixEpoch = time.Unix(0, 0)

// WriteRun stores one run of one source and the listings it collected in
// one bbolt transaction: the run record, the listing states, the segments,
// the Gone records, the stats rows derive returns and the floor marks all
// commit together or not at all.
//
// A failed run is stored as a record only: it changes no listing and no
// segment. Writing a (source, started) already stored changes nothing and
// returns WriteResult{Duplicate: true}. An ok run older than the source's
// latest ok run is refused; failed runs may arrive in any order.
//
// Of listings with the same (id, kind) the first is kept and the others are
// ignored. A listing with an empty Source takes the run's; another source,
// an empty id, kind or GPU, or a 0x00 byte in them, is an error. Listings
// with Available false update their state but open no segment: they count
// as absent, and a present one is closed. Floor keys naming no present
// listing of the run's source are ignored.
func (db *DB) WriteRun(run listings.Run, ls []listings.Listing, derive Deriver) (WriteResult, error) {
	fail := func(err error) (WriteResult, error) {
		return WriteResult{}, fmt.Errorf("index: write run %s %s: %w",
			run.Source, run.Started.UTC().Format(time.RFC3339Nano), err)
	}
	if db.bolt == nil || db.readOnly {
		return fail(fmt.Errorf("%s is open read-only", db.path))
	}
	if err := checkPart("source", run.Source); err != nil {
		return fail(err)
	}
	if !run.Started.After(unixEpoch) || run.Started.After(maxTime) {
		return fail(errors.New("start time outside 1970..2262"))
	}
	if run.Status != listings.RunOK && run.Status != listings.RunFailed {
		return fail(fmt.Errorf("unknown status %q", run.Status))
	}
	run.Started = run.Started.UTC()
	if !run.Finished.IsZero() {
		run.Finished = run.Finished.UTC()
	}
	var uniq []listings.Listing
	if run.Status == listings.RunOK {
		seen := make(map[string]bool, len(ls))
		uniq = make([]listings.Listing, 0, len(ls))
		for _, l := range ls {
			if l.Source == "" {
				l.Source = run.Source
			}
			if l.Source != run.Source {
				return fail(fmt.Errorf("listing %q is of source %q", l.ID, l.Source))
			}
			for _, p := range [][2]string{{"listing id", l.ID}, {"kind", string(l.Kind)}, {"gpu", l.GPU}} {
				if err := checkPart(p[0], p[1]); err != nil {
					return fail(fmt.Errorf("listing %q: %w", l.ID, err))
				}
			}
			if strings.IndexByte(l.Currency, sep) >= 0 {
				return fail(fmt.Errorf("listing %q: currency holds a 0x00 byte", l.ID))
			}
			if k := l.Key(); !seen[k] {
				seen[k] = true
				uniq = append(uniq, l)
			}
		}
	}
	var res WriteResult
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		w := &writer{tx: tx, run: run, maxAge: db.opts.MaxAge}
		return w.write(uniq, derive, &res)
	})
	if err != nil {
		return fail(err)
	}
	return res, nil
}

// writer holds the buckets of one WriteRun transaction.
type writer struct {
	tx     *bolt.Tx
	run    listings.Run
	maxAge time.Duration

	states   *bolt.Bucket
	present  *bolt.Bucket
	segments *bolt.Bucket
	bysource *bolt.Bucket
}

func (w *writer) write(ls []listings.Listing, derive Deriver, res *WriteResult) error {
	run := w.run
	runs := w.tx.Bucket(bucketRuns)
	rk := key(run.Source, run.Started)
	if old := runs.Get(rk); old != nil {
		// Idempotent: the same (source, started) again changes nothing. The
		// one exception is an ok run replacing a failed one at the same
		// time (a replay of the same archived page after a fetch failure):
		// a failed run changed nothing but its own record, so it can go.
		var prev listings.Run
		if err := json.Unmarshal(old, &prev); err != nil || prev.Status == listings.RunOK || run.Status != listings.RunOK {
			res.Duplicate = true
			return nil
		}
	}
	if run.Status == listings.RunOK {
		latest, ok, err := latestOK(runs, run.Source, maxTime)
		if err != nil {
			return err
		}
		if ok && latest.Started.After(run.Started) {
			return fmt.Errorf("run is older than the latest ok run %s of %s; out-of-order imports are not supported",
				latest.Started.Format(time.RFC3339Nano), run.Source)
		}
	}
	v, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("encode run: %w", err)
	}
	if err := runs.Put(rk, v); err != nil {
		return fmt.Errorf("put run: %w", err)
	}
	if run.Status != listings.RunOK {
		return nil // a failed run changes no listing and no segment
	}

	w.states, err = w.tx.Bucket(bucketListings).CreateBucketIfNotExists([]byte(run.Source))
	if err != nil {
		return fmt.Errorf("listings bucket: %w", err)
	}
	w.present = w.tx.Bucket(bucketPresent)
	w.segments = w.tx.Bucket(bucketSegments)
	w.bysource = w.tx.Bucket(bucketBySource)

	available := make(map[string]bool, len(ls))
	for i := range ls {
		if err := w.listing(&ls[i], available, res); err != nil {
			return err
		}
	}
	if err := w.closeAbsent(available, res); err != nil {
		return err
	}
	return w.derive(derive)
}

// listing records one listing of the run.
func (w *writer) listing(l *listings.Listing, available map[string]bool, res *WriteResult) error {
	run := w.run
	lk := []byte(l.Key())
	var st state
	if !l.Available {
		// Keep the presence facts for closeAbsent; only the attributes and
		// the last run change.
		if v := w.states.Get(lk); v != nil {
			if err := json.Unmarshal(v, &st); err != nil {
				return fmt.Errorf("decode state of %q: %w", l.ID, err)
			}
		}
		st.Listing = *l
		st.LastRun = run.Started
		return w.putState(lk, &st)
	}
	// An available listing's new state follows from the present index and
	// its open segment alone, so the old state need not be decoded (the
	// hot path of an unchanged market).
	available[string(lk)] = true
	st.Listing = *l
	st.LastRun = run.Started
	var prev *listings.Segment
	if sk := w.present.Get(key(l.Source, l.ID, string(l.Kind))); sk != nil {
		st.SegKey = append([]byte(nil), sk...)
		s, err := w.segment(st.SegKey)
		if err != nil {
			return fmt.Errorf("open segment of %q: %w", l.ID, err)
		}
		prev = &s
		st.FirstSeen = s.FirstSeen
	} else {
		st.FirstSeen = run.Started
	}
	switch {
	case prev != nil && prev.Price == l.Price && prev.Currency == l.Currency && prev.GPU == l.GPU:
		prev.End = run.Started
		prev.DiskGB = l.DiskGB
		if err := w.segments.Put(st.SegKey, encodeSegment(prev)); err != nil {
			return fmt.Errorf("extend segment: %w", err)
		}
		res.Extended++
	default:
		s := listings.Segment{
			Source: l.Source, ID: l.ID, GPU: l.GPU, Kind: l.Kind,
			Price: l.Price, Currency: l.Currency,
			Start: run.Started, End: run.Started,
			FirstSeen: st.FirstSeen, DiskGB: l.DiskGB,
		}
		if prev != nil {
			s.FloorAt = prev.FloorAt // the floor mark belongs to the presence
		}
		sk := segKey(&s)
		if err := w.segments.Put(sk, encodeSegment(&s)); err != nil {
			return fmt.Errorf("open segment: %w", err)
		}
		if err := w.bysource.Put(key(l.Source, s.Start, l.ID, string(l.Kind)), sk); err != nil {
			return fmt.Errorf("put bysource: %w", err)
		}
		if err := w.present.Put(key(l.Source, l.ID, string(l.Kind)), sk); err != nil {
			return fmt.Errorf("put present: %w", err)
		}
		st.SegKey = sk
		res.Opened++
	}
	st.Present = true
	st.LastSeen = run.Started
	return w.putState(lk, &st)
}

// closeAbsent ends the presence of every present listing of the source that
// this run did not list as available.
func (w *writer) closeAbsent(available map[string]bool, res *WriteResult) error {
	run := w.run
	p := prefix(run.Source)
	var gone [][]byte // listing keys (id 0x00 kind)
	c := w.present.Cursor()
	for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
		if lk := k[len(p):]; !available[string(lk)] {
			gone = append(gone, append([]byte(nil), lk...))
		}
	}
	gb := w.tx.Bucket(bucketGone)
	for _, lk := range gone {
		var st state
		v := w.states.Get(lk)
		if v == nil {
			return fmt.Errorf("present listing %q has no state", lk)
		}
		if err := json.Unmarshal(v, &st); err != nil {
			return fmt.Errorf("decode state of %q: %w", lk, err)
		}
		s, err := w.segment(st.SegKey)
		if err != nil {
			return fmt.Errorf("open segment of %q: %w", lk, err)
		}
		g := listings.Gone{
			Source: s.Source, ID: s.ID, GPU: s.GPU, Kind: s.Kind,
			Price: s.Price, Currency: s.Currency,
			FirstSeen: st.FirstSeen, LastSeen: st.LastSeen, GoneAt: run.Started,
			FloorAt: s.FloorAt,
		}
		gv, err := json.Marshal(g)
		if err != nil {
			return fmt.Errorf("encode gone: %w", err)
		}
		if err := gb.Put(key(run.Started, s.Source, s.ID, string(s.Kind)), gv); err != nil {
			return fmt.Errorf("put gone: %w", err)
		}
		if err := w.present.Delete(append(prefix(run.Source), lk...)); err != nil {
			return fmt.Errorf("delete present: %w", err)
		}
		st.Present = false
		if err := w.putState(lk, &st); err != nil {
			return err
		}
		res.Closed++
	}
	return nil
}

// derive builds the snapshot at the run, stores the rows derive returns and
// marks the floor listings.
func (w *writer) derive(derive Deriver) error {
	run := w.run
	var rows []listings.Row
	var floor []string
	if derive != nil {
		snap, err := snapshot(w.tx, SnapshotQuery{AsOf: run.Started, MaxAge: w.maxAge})
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		rows, floor = derive(snap)
	}
	sb := w.tx.Bucket(bucketStats)
	keys := make(map[string]bool, len(rows))
	for i := range rows {
		r := &rows[i]
		for _, p := range [][2]string{{"row gpu", r.GPU}, {"row kind", string(r.Kind)}, {"row currency", r.Currency}} {
			if err := checkPart(p[0], p[1]); err != nil {
				return err
			}
		}
		v, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode row: %w", err)
		}
		k := key(r.GPU, string(r.Kind), r.Currency, run.Started)
		if err := sb.Put(k, v); err != nil {
			return fmt.Errorf("put row: %w", err)
		}
		keys[string(k)] = true
	}
	n := binary.BigEndian.AppendUint64(nil, uint64(len(keys)))
	if err := w.tx.Bucket(bucketDerived).Put(key(run.Source, run.Started), n); err != nil {
		return fmt.Errorf("put derived: %w", err)
	}
	for _, fk := range floor {
		sk := w.present.Get(append(prefix(run.Source), fk...))
		if sk == nil {
			continue
		}
		sk = append([]byte(nil), sk...)
		s, err := w.segment(sk)
		if err != nil {
			return fmt.Errorf("floor segment: %w", err)
		}
		if !s.FloorAt.IsZero() {
			continue
		}
		s.FloorAt = run.Started
		if err := w.segments.Put(sk, encodeSegment(&s)); err != nil {
			return fmt.Errorf("mark floor: %w", err)
		}
	}
	return nil
}

func (w *writer) segment(sk []byte) (listings.Segment, error) {
	v := w.segments.Get(sk)
	if v == nil {
		return listings.Segment{}, fmt.Errorf("segment %q missing", sk)
	}
	return decodeSegment(sk, v)
}

func (w *writer) putState(lk []byte, st *state) error {
	v, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	if err := w.states.Put(lk, v); err != nil {
		return fmt.Errorf("put state: %w", err)
	}
	return nil
}

// latestOK finds the latest ok run of source started at or before t.
func latestOK(runs *bolt.Bucket, source string, t time.Time) (listings.Run, bool, error) {
	p := prefix(source)
	c := runs.Cursor()
	for k, v := seekLE(c, key(source, t)); k != nil && bytes.HasPrefix(k, p); k, v = c.Prev() {
		var r listings.Run
		if err := json.Unmarshal(v, &r); err != nil {
			return r, false, fmt.Errorf("decode run %q: %w", k, err)
		}
		if r.Status == listings.RunOK {
			return r, true, nil
		}
	}
	return listings.Run{}, false, nil
}
