package scrapers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/listings-dev/listings"
)

// LambdaURL is Lambda Cloud's instance-types endpoint.
const LambdaURL = "https://cloud.lambda.ai/api/v1/instance-types"

// ErrNoLambdaKey is returned by the lambda source's Collect when
// LAMBDA_API_KEY is not set. A plain `collect` tells it apart from other
// failures and skips the source with a note; `collect --source lambda`
// fails with it.
var ErrNoLambdaKey = errors.New("lambda: LAMBDA_API_KEY is not set (the lambda source needs an API key)")

// Lambda collects Lambda Cloud's instance types (source "lambda").
//
// It is registered enabled, but needs LAMBDA_API_KEY (sent as a Bearer
// token, never logged nor put in an error): without it Collect returns
// ErrNoLambdaKey. Each instance type is one on-demand listing whose id is the
// type name ("gpu_8x_h100_sxm5"); the price is per GPU.
type Lambda struct{}

func init() { Register(Lambda{}, true) }

// Name returns "lambda".
func (Lambda) Name() string { return "lambda" }

// DefaultURL returns LambdaURL.
func (Lambda) DefaultURL() string { return LambdaURL }

// Collect fetches env.URL with the key from LAMBDA_API_KEY and parses it.
func (Lambda) Collect(ctx context.Context, env *Env) (*Result, error) {
	key := envValue(env, "LAMBDA_API_KEY")
	if key == "" {
		return nil, ErrNoLambdaKey
	}
	header := http.Header{}
	header.Set("Authorization", "Bearer "+key)
	body, err := env.Client.Get(ctx, env.URL, header)
	if err != nil {
		if msg := lambdaError(body); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		// The server may echo what it was sent; the key never leaves.
		return nil, errors.New(strings.ReplaceAll(fmt.Sprintf("lambda: fetch instance types: %v", err), key, "[redacted]"))
	}
	ls, rejects, err := ParseLambda(body, env.PriceCap)
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), key, "[redacted]"))
	}
	return &Result{Listings: ls, Rejects: rejects}, nil
}

// lambdaDescription reads "8x H100 (80 GB SXM5)": count, model, VRAM per
// GPU and the form factor when given.
var lambdaDescription = regexp.MustCompile(`^(\d+)x (.+?) \((\d+) GB(?: ([A-Za-z0-9]+))?\)`)

// lambdaType is one value of the data map.
type lambdaType struct {
	InstanceType struct {
		Name              string   `json:"name"`
		Description       string   `json:"description"`
		GPUDescription    string   `json:"gpu_description"`
		PriceCentsPerHour *float64 `json:"price_cents_per_hour"`
		Specs             struct {
			GPUs       *float64 `json:"gpus"`
			StorageGiB *float64 `json:"storage_gib"`
		} `json:"specs"`
	} `json:"instance_type"`
	Regions []struct {
		Name string `json:"name"`
	} `json:"regions_with_capacity_available"`
}

// ParseLambda parses Lambda's instance-types response
// {"data": {"<type>": {"instance_type": {...},
// "regions_with_capacity_available": [...]}}}. An {"error": {...}} body is
// an error with the server's message.
//
// The per-GPU price is price_cents_per_hour / 100 / specs.gpus, computed
// exactly. Model, VRAM and form come from description ("8x H100 (80 GB
// SXM5)"); a description that does not read that way keeps the listing
// under the raw name (unknown, VRAM 0). A count in the description that
// disagrees with specs.gpus rejects the row as malformed, since the price
// division would be a guess. CPU-only types (specs.gpus 0, gpu_description
// "N/A") are rejected as "zero gpus", so they show in the run's counts
// rather than vanish. An empty regions_with_capacity_available means sold
// out: the listing is kept with Available false (the index keeps it out of
// statistics); otherwise Region is the comma-joined region names. DiskGB is
// specs.storage_gib as listed (GiB, not converted). Duplicate type names
// keep the first.
func ParseLambda(body []byte, limit listings.Price) ([]listings.Listing, []listings.Reject, error) {
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, nil, fmt.Errorf("lambda: decode response: %w", err)
	}
	if len(env.Error) > 0 {
		if msg := lambdaError(body); msg != "" {
			return nil, nil, fmt.Errorf("lambda: api error: %s", msg)
		}
	}
	data := bytes.TrimSpace(env.Data)
	if len(data) == 0 || data[0] != '{' {
		return nil, nil, errors.New("lambda: decode response: no data object in the answer")
	}
	// Walk the object by tokens: it keeps the server's order and sees
	// duplicate keys, which a map would silently merge.
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("lambda: decode data: %w", err)
	}
	b := NewBatch("lambda")
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("lambda: decode data: %w", err)
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("lambda: decode data[%q]: %w", clipText(name, 80), err)
		}
		var t lambdaType
		if err := json.Unmarshal(raw, &t); err != nil {
			b.Rejectf(name, listings.RejectBadRow, "%v", err)
			continue
		}
		lambdaListing(b, name, &t, limit)
	}
	return b.Listings, b.Rejects, nil
}

// lambdaListing adds the listing of one instance type to b.
func lambdaListing(b *Batch, name string, t *lambdaType, limit listings.Price) {
	it := &t.InstanceType
	if name == "" {
		name = it.Name
	}
	gpus, ok := wholeNumber(it.Specs.GPUs)
	if !ok {
		b.Rejectf(name, listings.RejectBadRow, "specs.gpus=%s", fmtFloat(it.Specs.GPUs))
		return
	}
	m := lambdaDescription.FindStringSubmatch(it.Description)
	if gpus == 0 {
		if m != nil && it.Specs.GPUs == nil {
			gpus, _ = strconv.Atoi(m[1]) // no specs.gpus: the description's count
		}
		if gpus == 0 {
			b.Rejectf(name, listings.RejectZeroGPUs, "%s", clipText(it.Description, 80))
			return
		}
	}
	raw := strings.TrimSpace(it.GPUDescription)
	if raw == "" {
		raw = strings.TrimSpace(it.Description)
	}
	model, vram, form := raw, 0.0, ""
	if m != nil {
		if n, err := strconv.Atoi(m[1]); err != nil || n != gpus {
			b.Rejectf(name, listings.RejectBadRow, "specs.gpus=%d but description %q", gpus, clipText(it.Description, 80))
			return
		}
		v, _ := strconv.Atoi(m[3])
		model, vram, form = m[2], float64(v), m[4]
	}
	if it.PriceCentsPerHour == nil {
		b.Reject(name, listings.RejectZeroPrice, "price_cents_per_hour missing")
		return
	}
	cents := *it.PriceCentsPerHour
	if _, reason := CheckPrice(cents/100/float64(gpus), limit); reason != "" {
		b.Rejectf(name, reason, "price_cents_per_hour=%v gpus=%d", cents, gpus)
		return
	}
	// Exact: the whole-instance cents as micro-cents, divided once.
	whole, err := listings.PriceFromFloat(cents)
	price := whole.MulDiv(1, int64(100*gpus))
	if err != nil || price <= 0 {
		b.Rejectf(name, listings.RejectZeroPrice, "price_cents_per_hour=%v gpus=%d", cents, gpus)
		return
	}
	gpu, known := normalizeGPU(vram, model+" "+form)
	regions := make([]string, 0, len(t.Regions))
	for _, r := range t.Regions {
		if r.Name != "" {
			regions = append(regions, clipText(r.Name, 64))
		}
	}
	disk := 0.0
	if it.Specs.StorageGiB != nil && *it.Specs.StorageGiB > 0 {
		disk = *it.Specs.StorageGiB
	}
	b.Add(listings.Listing{
		ID:           name,
		GPU:          gpu,
		Known:        known,
		RawGPU:       clipText(raw, maxGPUName),
		GPUCount:     gpus,
		VRAMGB:       vram,
		Kind:         listings.OnDemand,
		Price:        price,
		Listed:       fmt.Sprintf("price_cents_per_hour=%s gpus=%d", strconv.FormatFloat(cents, 'f', -1, 64), gpus),
		Region:       strings.Join(regions, ","),
		Reliability:  -1,
		DiskGB:       disk,
		Available:    len(t.Regions) > 0,
		Interconnect: form,
	})
}

// lambdaError returns the message of a Lambda {"error": {"code",
// "message"}} body, or "" when body is not one.
func lambdaError(body []byte) string {
	var env struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error == nil {
		return ""
	}
	msg := strings.TrimSpace(env.Error.Message)
	if msg == "" {
		msg = "an error without a message"
	}
	if env.Error.Code != "" {
		msg = env.Error.Code + ": " + msg
	}
	return clipText(msg, 200)
}
