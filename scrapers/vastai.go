package scrapers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/listings-dev/listings"
)

// VastURL is Vast.ai's offer search endpoint.
const VastURL = "https://console.vast.ai/api/v0/bundles/"

// VastDefaultLimit is the number of offers asked for unless the source's
// config says otherwise (Options["limit"]). The recorded full market had
// 1,396 offers.
const VastDefaultLimit = 5000

// RejectNotRentable counts offers the search returned although they say
// they are rented or not rentable.
const RejectNotRentable = "not rentable"

// maxText caps the length of free text taken from a source (DESIGN §7).
const maxText = 200

// Vast collects Vast.ai's rentable offers (source "vastai", enabled by
// default). It posts the search query to env.URL, with VAST_API_KEY as a
// Bearer token when set (the search works without one), and parses the
// answer with ParseVast.
type Vast struct{}

func init() { Register(Vast{}, true) }

// Name returns "vastai".
func (Vast) Name() string { return "vastai" }

// DefaultURL returns VastURL.
func (Vast) DefaultURL() string { return VastURL }

// Collect fetches every rentable, unrented on-demand offer and parses it.
func (Vast) Collect(ctx context.Context, env *Env) (*Result, error) {
	limit := VastDefaultLimit
	if n, ok := intOption(env.Options, "limit"); ok && n > 0 {
		limit = n
	}
	query := map[string]any{
		"rentable": map[string]bool{"eq": true},
		"rented":   map[string]bool{"eq": false},
		"type":     "on-demand",
		"limit":    limit,
	}
	header := http.Header{}
	if key := envValue(env, "VAST_API_KEY"); key != "" {
		header.Set("Authorization", "Bearer "+key)
	}
	body, err := env.Client.PostJSON(ctx, env.URL, query, header)
	if err != nil {
		return nil, fmt.Errorf("vastai: search offers: %w", err)
	}
	ls, rejects, err := ParseVast(body, env.Now, env.PriceCap)
	if err != nil {
		return nil, err
	}
	return &Result{Listings: ls, Rejects: rejects}, nil
}

// intOption reads an integer from a config table, whatever number type the
// decoder chose.
func intOption(opts map[string]any, key string) (int, bool) {
	switch v := opts[key].(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<31 {
			return int(v), true
		}
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return int(n), true
		}
	}
	return 0, false
}

// vastOffer holds the fields of one offer that ParseVast reads, raw, so
// that each field's type is checked on its own: a wrong type rejects the
// row, never the page.
type vastOffer struct {
	ID           json.RawMessage `json:"id"`
	GPUName      json.RawMessage `json:"gpu_name"`
	GPURAM       json.RawMessage `json:"gpu_ram"`
	NumGPUs      json.RawMessage `json:"num_gpus"`
	DPHBase      json.RawMessage `json:"dph_base"`
	MinBid       json.RawMessage `json:"min_bid"`
	Geolocation  json.RawMessage `json:"geolocation"`
	Reliability2 json.RawMessage `json:"reliability2"`
	Reliability  json.RawMessage `json:"reliability"`
	DiskSpace    json.RawMessage `json:"disk_space"`
	StorageCost  json.RawMessage `json:"storage_cost"`
	Verification json.RawMessage `json:"verification"`
	BWNVLink     json.RawMessage `json:"bw_nvlink"`
	PCIGen       json.RawMessage `json:"pci_gen"`
	Rentable     json.RawMessage `json:"rentable"`
	Rented       json.RawMessage `json:"rented"`
}

// errWrongType marks a field that holds something other than its type.
var errWrongType = errors.New("wrong type")

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// vastNumber reads a JSON number as float64 (Vast writes 4.0 and 4 for the
// same field). ok is false for null or absent; a string, bool or object is
// errWrongType.
func vastNumber(raw json.RawMessage, field string) (v float64, ok bool, err error) {
	if isNull(raw) {
		return 0, false, nil
	}
	c := raw[0]
	if c != '-' && (c < '0' || c > '9') {
		return 0, false, fmt.Errorf("%s %s: %w", field, clip(string(raw), 40), errWrongType)
	}
	v, err = strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s %s: %w", field, clip(string(raw), 40), errWrongType)
	}
	return v, true, nil
}

// vastString reads a JSON string; null or absent is "".
func vastString(raw json.RawMessage, field string) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s %s: %w", field, clip(string(raw), 40), errWrongType)
	}
	return clip(strings.TrimSpace(s), maxText), nil
}

// vastBool reads a JSON boolean; null or absent is def.
func vastBool(raw json.RawMessage, field string, def bool) (bool, error) {
	switch string(raw) {
	case "", "null":
		return def, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%s %s: %w", field, clip(string(raw), 40), errWrongType)
}

// vastID reads the offer id: a number, written as a decimal integer string
// without exponent, or (tolerated) a string.
func vastID(raw json.RawMessage) (string, error) {
	if len(raw) > 0 && raw[0] == '"' {
		return vastString(raw, "id")
	}
	v, ok, err := vastNumber(raw, "id")
	if err != nil || !ok {
		return "", err
	}
	return strconv.FormatFloat(v, 'f', -1, 64), nil
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// ParseVast reads a Vast.ai search response: the API's {"offers": [...]}
// or, as well, a bare JSON array of offers (what `vastai search offers
// --raw` prints, as in the recorded fixtures). A body that is not one of
// these (malformed or truncated JSON, an error object) is an error: the run
// fails. Each offer is then decoded on its own, numbers as float64; a field
// of the wrong type rejects that offer only (RejectBadPrice for dph_base,
// RejectBadRow otherwise).
//
// Each usable offer yields an on-demand listing at dph_base / num_gpus (the
// GPU part of the price; storage, storage_cost per GB-month, is kept apart)
// and, when 0 < min_bid <= dph_base, an interruptible one with the same id
// at min_bid / num_gpus; a min_bid above dph_base is rejected with
// listings.RejectBidAboveBase. An offer whose on-demand price is rejected
// yields no interruptible row. The GPU is gpu_name normalised with gpu_ram
// (MiB per GPU); Reliability is reliability2, else reliability, else -1;
// Interconnect is "NVLink" when bw_nvlink > 0, else "PCIe <pci_gen>" when
// known. Offers that say rented:true or rentable:false are rejected
// (RejectNotRentable): the query asked for rentable ones. Of offers with
// the same id the first is kept. now is accepted for symmetry with the
// other parsers; Vast's offers carry no time of their own that we keep.
func ParseVast(body []byte, now time.Time, limit listings.Price) ([]listings.Listing, []listings.Reject, error) {
	_ = now
	offers, err := vastOffers(body)
	if err != nil {
		return nil, nil, err
	}
	b := NewBatch("vastai")
	seen := make(map[string]bool, len(offers))
	for i, raw := range offers {
		parseVastOffer(b, seen, i, raw, limit)
	}
	return b.Listings, b.Rejects, nil
}

// vastOffers splits the body into raw offers.
func vastOffers(body []byte) ([]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, errors.New("vastai: decode offers: empty response")
	}
	var offers []json.RawMessage
	switch trimmed[0] {
	case '[':
		if err := json.Unmarshal(trimmed, &offers); err != nil {
			return nil, fmt.Errorf("vastai: decode offers: %w", err)
		}
	case '{':
		var page struct {
			Offers *[]json.RawMessage `json:"offers"`
			Error  json.RawMessage    `json:"error"`
			Msg    json.RawMessage    `json:"msg"`
		}
		if err := json.Unmarshal(trimmed, &page); err != nil {
			return nil, fmt.Errorf("vastai: decode offers: %w", err)
		}
		if page.Offers == nil {
			detail := ""
			for _, m := range []json.RawMessage{page.Msg, page.Error} {
				if !isNull(m) {
					detail = ": " + clip(string(m), maxText)
					break
				}
			}
			return nil, fmt.Errorf("vastai: decode offers: response has no offers%s", detail)
		}
		offers = *page.Offers
	default:
		return nil, fmt.Errorf("vastai: decode offers: response is not JSON (starts with %q)", clip(string(trimmed), 20))
	}
	return offers, nil
}

// parseVastOffer turns one offer into up to two listings or rejects.
func parseVastOffer(b *Batch, seen map[string]bool, i int, raw json.RawMessage, limit listings.Price) {
	var o vastOffer
	if err := json.Unmarshal(raw, &o); err != nil {
		b.Rejectf("", listings.RejectBadRow, "offer %d: %v", i, err)
		return
	}
	id, err := vastID(o.ID)
	if err != nil {
		b.Rejectf("", listings.RejectBadRow, "offer %d: %v", i, err)
		return
	}
	if id == "" {
		b.Rejectf("", listings.RejectNoID, "offer %d", i)
		return
	}
	// The first offer with an id is the one kept, whatever becomes of it: a
	// later copy never stands in for a first one rejected for its price.
	if seen[id] {
		b.Reject(id, listings.RejectDuplicateID, "offer "+strconv.Itoa(i))
		return
	}
	seen[id] = true
	bad := func(reason string, err error) {
		b.Rejectf(id, reason, "%v", err)
	}
	dph, hasDPH, err := vastNumber(o.DPHBase, "dph_base")
	if err != nil {
		bad(listings.RejectBadPrice, err)
		return
	}
	n, _, err := vastNumber(o.NumGPUs, "num_gpus")
	if err != nil {
		bad(listings.RejectBadRow, err)
		return
	}
	var l listings.Listing
	l.ID = id
	rentable, err := vastBool(o.Rentable, "rentable", true)
	if err != nil {
		bad(listings.RejectBadRow, err)
		return
	}
	rented, err := vastBool(o.Rented, "rented", false)
	if err != nil {
		bad(listings.RejectBadRow, err)
		return
	}
	if l.RawGPU, err = vastString(o.GPUName, "gpu_name"); err != nil {
		bad(listings.RejectBadRow, err)
		return
	}
	ram, _, err := vastNumber(o.GPURAM, "gpu_ram")
	if err != nil {
		bad(listings.RejectBadRow, err)
		return
	}
	if l.Region, err = vastString(o.Geolocation, "geolocation"); err != nil {
		bad(listings.RejectBadRow, err)
		return
	}
	if l.Verification, err = vastString(o.Verification, "verification"); err != nil {
		bad(listings.RejectBadRow, err)
		return
	}
	rel2, has2, err := vastNumber(o.Reliability2, "reliability2")
	if err != nil {
		bad(listings.RejectBadRow, err)
		return
	}
	rel, has1, err := vastNumber(o.Reliability, "reliability")
	if err != nil {
		bad(listings.RejectBadRow, err)
		return
	}
	disk, _, err := vastNumber(o.DiskSpace, "disk_space")
	if err != nil {
		bad(listings.RejectBadRow, err)
		return
	}
	storage, hasStorage, err := vastNumber(o.StorageCost, "storage_cost")
	if err != nil {
		bad(listings.RejectBadRow, err)
		return
	}
	nvlink, _, err := vastNumber(o.BWNVLink, "bw_nvlink")
	if err != nil {
		bad(listings.RejectBadRow, err)
		return
	}
	pci, _, err := vastNumber(o.PCIGen, "pci_gen")
	if err != nil {
		bad(listings.RejectBadRow, err)
		return
	}
	// A bad bid loses the interruptible row only; it is reported once the
	// on-demand row stands.
	minBid, hasBid, bidErr := vastNumber(o.MinBid, "min_bid")

	switch {
	case !rentable || rented:
		b.Rejectf(id, RejectNotRentable, "rentable=%t rented=%t", rentable, rented)
		return
	case l.RawGPU == "":
		b.Reject(id, listings.RejectBadRow, "no gpu_name")
		return
	case n != math.Trunc(n) || n > 1<<16:
		b.Rejectf(id, listings.RejectBadRow, "num_gpus %s is not a GPU count", num(n))
		return
	case n <= 0:
		b.Rejectf(id, listings.RejectZeroGPUs, "num_gpus=%s", num(n))
		return
	}
	if !hasDPH {
		dph = 0
	}
	price, reason := CheckPrice(dph/n, limit)
	if reason != "" {
		b.Rejectf(id, reason, "dph_base=%s num_gpus=%s", num(dph), num(n))
		return
	}

	l.GPUCount = int(n)
	l.VRAMGB = math.Round(ram/1024*10) / 10
	l.GPU, l.Known = listings.Normalize(l.RawGPU, l.VRAMGB)
	l.Kind = listings.OnDemand
	l.Price = price
	l.Currency = listings.USD
	l.Listed = "dph_base=" + num(dph) + " num_gpus=" + num(n)
	switch {
	case has2 && rel2 >= 0 && rel2 <= 1:
		l.Reliability = rel2
	case has1 && rel >= 0 && rel <= 1:
		l.Reliability = rel
	default:
		l.Reliability = -1
	}
	if disk > 0 {
		l.DiskGB = disk
	}
	if hasStorage && storage > 0 {
		if p, err := listings.PriceFromFloat(storage); err == nil {
			l.StoragePrice = p
		}
	}
	l.Available = true
	switch {
	case nvlink > 0:
		l.Interconnect = "NVLink"
	case pci > 0:
		l.Interconnect = "PCIe " + strconv.FormatFloat(pci, 'f', 1, 64)
	}
	b.Add(l)

	if bidErr != nil {
		b.Rejectf(id, listings.RejectBadPrice, "interruptible: %v", bidErr)
		return
	}
	if !hasBid {
		return
	}
	if minBid > dph {
		b.Rejectf(id, listings.RejectBidAboveBase, "min_bid=%s dph_base=%s", num(minBid), num(dph))
		return
	}
	bid, reason := CheckPrice(minBid/n, limit)
	if reason != "" {
		b.Rejectf(id, reason, "interruptible: min_bid=%s num_gpus=%s", num(minBid), num(n))
		return
	}
	il := l
	il.Kind = listings.Interruptible
	il.Price = bid
	il.Listed = "min_bid=" + num(minBid) + " dph_base=" + num(dph) + " num_gpus=" + num(n)
	b.Add(il)
}
