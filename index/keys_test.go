package index

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	listings "github.com/listings-dev/listings"
)

func TestSegmentCodec(t *testing.T) {
	tests := []listings.Segment{
		{Source: "vastai", ID: "12345", GPU: "RTX 4090", Kind: listings.OnDemand, Price: 422186, Currency: "USD",
			Start: at(0), End: at(3), FirstSeen: at(0), DiskGB: 512.5},
		{Source: "cherryservers", ID: "gpu-1", GPU: "A100 80GB PCIe", Kind: listings.Monthly, Price: 1_500_000, Currency: "EUR",
			Start: at(2), End: at(2), FirstSeen: at(1), FloorAt: at(1)},
		{Source: "x", ID: "y", GPU: "Mystery GPU", Kind: listings.Interruptible, Price: -1,
			Start: at(0).Add(time.Nanosecond), End: at(0).Add(time.Nanosecond), FirstSeen: at(0)},
	}
	for _, want := range tests {
		got, err := decodeSegment(segKey(&want), encodeSegment(&want))
		if err != nil {
			t.Errorf("decode %s/%s: %v", want.Source, want.ID, err)
			continue
		}
		if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
			t.Errorf("round trip:\n got %s\nwant %s", g, w)
		}
	}
	if _, err := decodeSegment([]byte("gpu\x00kind"), []byte{1}); err == nil {
		t.Errorf("decodeSegment of a short key and value succeeded")
	}
}

func TestKeyOrder(t *testing.T) {
	// Byte order must be time order, and a name must not prefix a longer one.
	tests := []struct{ a, b []byte }{
		{key("vastai", at(0)), key("vastai", at(0).Add(time.Nanosecond))},
		{key("vastai", at(0).Add(255)), key("vastai", at(0).Add(256))},
		{key("vastai", time.Unix(1<<31, 0)), key("vastai", time.Unix(1<<33, 0))},
		{key("RTX 4090", "on-demand"), key("RTX 4090 Ti", "interruptible")},
	}
	for _, tt := range tests {
		if bytes.Compare(tt.a, tt.b) >= 0 {
			t.Errorf("key %q sorts at or after %q", tt.a, tt.b)
		}
	}
}

func TestNanos(t *testing.T) {
	tests := []struct {
		t    time.Time
		want uint64
	}{
		{time.Time{}, 0},
		{time.Unix(-5, 0), 0},
		{time.Unix(0, 7), 7},
		{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), math.MaxInt64},
	}
	for _, tt := range tests {
		if got := nanos(tt.t); got != tt.want {
			t.Errorf("nanos(%v) = %d, want %d", tt.t, got, tt.want)
		}
	}
	if got := fromNanos(nanos(at(1))); !got.Equal(at(1)) {
		t.Errorf("fromNanos(nanos(%v)) = %v", at(1), got)
	}
}
