package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	listings "github.com/listings-dev/listings"
)

const sep = 0x00

// maxTime is the largest time that fits the key encoding (year 2262).
var maxTime = time.Unix(0, math.MaxInt64).UTC()

// nanos returns t as non-negative Unix nanoseconds, clamped to the range
// the keys can hold: times before 1970 (including the zero time) become 0,
// times after 2262 the maximum.
func nanos(t time.Time) uint64 {
	switch {
	case t.IsZero() || t.Unix() < 0:
		return 0
	case t.After(maxTime):
		return math.MaxInt64
	}
	return uint64(t.UnixNano())
}

// fromNanos is the inverse of nanos; 0 is the zero time.
func fromNanos(n uint64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(n)).UTC()
}

func appendTime(b []byte, t time.Time) []byte { return binary.BigEndian.AppendUint64(b, nanos(t)) }

// key joins parts with 0x00 separators; a part may be a string or a
// time.Time (8 bytes).
func key(parts ...any) []byte {
	n := 0
	for _, p := range parts {
		if s, ok := p.(string); ok {
			n += len(s) + 1
		} else {
			n += 9
		}
	}
	b := make([]byte, 0, n)
	for i, p := range parts {
		if i > 0 {
			b = append(b, sep)
		}
		switch v := p.(type) {
		case string:
			b = append(b, v...)
		case time.Time:
			b = appendTime(b, v)
		default:
			panic(fmt.Sprintf("index: key part of type %T", p))
		}
	}
	return b
}

// prefix is key(parts...) followed by a separator: the prefix of every key
// that starts with these parts.
func prefix(parts ...any) []byte { return append(key(parts...), sep) }

// after is the smallest key greater than every key starting with p.
func after(p []byte) []byte {
	b := append([]byte(nil), p...)
	b[len(b)-1]++ // p ends with the separator 0x00
	return b
}

var errBadKey = errors.New("malformed key")

// keyReader splits a key into its parts.
type keyReader struct {
	b   []byte
	err error
}

func (r *keyReader) str() string {
	if r.err != nil {
		return ""
	}
	i := bytes.IndexByte(r.b, sep)
	if i < 0 {
		s := string(r.b)
		r.b = nil
		return s
	}
	s := string(r.b[:i])
	r.b = r.b[i+1:]
	return s
}

func (r *keyReader) time() time.Time {
	if r.err != nil {
		return time.Time{}
	}
	if len(r.b) < 8 || (len(r.b) > 8 && r.b[8] != sep) {
		r.err = errBadKey
		return time.Time{}
	}
	t := fromNanos(binary.BigEndian.Uint64(r.b))
	if len(r.b) > 8 {
		r.b = r.b[9:]
	} else {
		r.b = nil
	}
	return t
}

// end reports an error unless every byte was read.
func (r *keyReader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = errBadKey
	}
	return r.err
}

// segKey is the key of a segment: gpu, kind, start, source, id, kind.
func segKey(s *listings.Segment) []byte {
	return key(s.GPU, string(s.Kind), s.Start, s.Source, s.ID, string(s.Kind))
}

// decodeSegment rebuilds a segment from its key and value.
func decodeSegment(k, v []byte) (listings.Segment, error) {
	r := keyReader{b: k}
	var s listings.Segment
	s.GPU = r.str()
	s.Kind = listings.Kind(r.str())
	s.Start = r.time()
	s.Source = r.str()
	s.ID = r.str()
	kind2 := r.str()
	if err := r.end(); err != nil {
		return s, fmt.Errorf("segment key %q: %w", k, errBadKey)
	}
	if kind2 != string(s.Kind) {
		return s, fmt.Errorf("segment key %q: kinds %q and %q differ", k, s.Kind, kind2)
	}
	if len(v) < 41 || v[0] != 1 {
		return s, fmt.Errorf("segment %q: malformed value (%d bytes)", k, len(v))
	}
	s.Price = listings.Price(int64(binary.BigEndian.Uint64(v[1:])))
	s.End = fromNanos(binary.BigEndian.Uint64(v[9:]))
	s.FirstSeen = fromNanos(binary.BigEndian.Uint64(v[17:]))
	s.FloorAt = fromNanos(binary.BigEndian.Uint64(v[25:]))
	s.DiskGB = math.Float64frombits(binary.BigEndian.Uint64(v[33:]))
	s.Currency = string(v[41:])
	return s, nil
}

// encodeSegment is the value of a segment (see the package comment).
func encodeSegment(s *listings.Segment) []byte {
	b := make([]byte, 0, 41+len(s.Currency))
	b = append(b, 1)
	b = binary.BigEndian.AppendUint64(b, uint64(int64(s.Price)))
	b = appendTime(b, s.End)
	b = appendTime(b, s.FirstSeen)
	b = appendTime(b, s.FloorAt)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(s.DiskGB))
	return append(b, s.Currency...)
}

// checkPart refuses a key part that is empty or holds the separator.
func checkPart(what, s string) error {
	if s == "" {
		return fmt.Errorf("empty %s", what)
	}
	if strings.IndexByte(s, sep) >= 0 {
		return fmt.Errorf("%s %q holds a 0x00 byte", what, s)
	}
	return nil
}

// seekLE positions c at the last key <= k and returns it (nil if none).
func seekLE(c *bolt.Cursor, k []byte) ([]byte, []byte) {
	ck, cv := c.Seek(k)
	if ck == nil {
		return c.Last()
	}
	if bytes.Equal(ck, k) {
		return ck, cv
	}
	return c.Prev()
}

// firstParts enumerates the distinct first parts of the keys in c that start
// with p (the part up to the next separator), in key order, by skipping
// from one part to the next with Seek.
func firstParts(c *bolt.Cursor, p []byte) []string {
	var out []string
	k, _ := c.Seek(p)
	for k != nil && bytes.HasPrefix(k, p) {
		rest := k[len(p):]
		i := bytes.IndexByte(rest, sep)
		if i < 0 {
			// A key without a further separator: not one of ours; step over it.
			k, _ = c.Next()
			continue
		}
		part := string(rest[:i])
		out = append(out, part)
		k, _ = c.Seek(after(append(append([]byte(nil), p...), rest[:i+1]...)))
	}
	return out
}
