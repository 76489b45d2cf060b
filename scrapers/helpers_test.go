package scrapers

import (
	"strings"
	"testing"

	"github.com/listings-dev/listings"
)

// jsonParser is the shape of the JSON sources' parse functions.
type jsonParser func([]byte, listings.Price) ([]listings.Listing, []listings.Reject, error)

// fuzzJSONParser fuzzes parse from seeds: it must never panic, never
// return listings with an error, and every listing it keeps must pass
// checkParsed.
func fuzzJSONParser(f *testing.F, parse jsonParser, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ls, _, err := parse(body, DefaultPriceCap)
		if err != nil && len(ls) > 0 {
			t.Fatalf("got %d listings with error %v", len(ls), err)
		}
		checkParsed(t, ls, DefaultPriceCap)
	})
}

// benchJSONParser measures parse on body.
func benchJSONParser(b *testing.B, parse jsonParser, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := parse(body, DefaultPriceCap); err != nil {
			b.Fatal(err)
		}
	}
}

// parseErrorCase is a response a JSON parser must refuse as a whole, with
// an error containing want.
type parseErrorCase struct{ name, body, want string }

// testParseErrors runs parse on each case's body and checks that it fails
// with the expected error.
func testParseErrors(t *testing.T, parse jsonParser, cases []parseErrorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ls, _, err := parse([]byte(tc.body), DefaultPriceCap)
			if err == nil {
				t.Fatalf("got %d listings and no error, want an error containing %q", len(ls), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}
