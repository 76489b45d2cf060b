package scrapers

import (
	"strings"
	"testing"

	"github.com/listings-dev/listings"
)

// parseErrorCase is a response a JSON parser must refuse as a whole, with
// an error containing want.
type parseErrorCase struct{ name, body, want string }

// testParseErrors runs parse on each case's body and checks that it fails
// with the expected error.
func testParseErrors(t *testing.T, parse func([]byte, listings.Price) ([]listings.Listing, []listings.Reject, error), cases []parseErrorCase) {
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
