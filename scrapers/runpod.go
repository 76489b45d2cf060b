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

	"github.com/listings-dev/listings"
)

// RunPodURL is the RunPod GraphQL endpoint.
const RunPodURL = "https://api.runpod.io/graphql"

// runPodQuery asks for the price catalogue: one entry per GPU type with its
// per-GPU prices in both clouds.
const runPodQuery = "query GpuTypes { gpuTypes { id displayName memoryInGb maxGpuCount secureCloud communityCloud securePrice communityPrice secureSpotPrice communitySpotPrice } }"

// rejectPlaceholder counts RunPod's placeholder GPU type "unknown", which
// the API lists beside the real ones.
const rejectPlaceholder = "placeholder type"

// RunPod collects RunPod's GPU types (source "runpod", enabled by default).
//
// Listing ids are "<gpuType id>/secure" and "<gpuType id>/community"
// ("NVIDIA GeForce RTX 4090/secure"); the same id appears once per kind, the
// on-demand price (securePrice, communityPrice) and the interruptible one
// (secureSpotPrice, communitySpotPrice), so (id, kind) is unique. Prices are
// per GPU already; GPUCount is 1, MaxCount is maxGpuCount, Region is the
// cloud ("secure" or "community"). RUNPOD_API_KEY, when set, is sent as a
// Bearer token; the price catalogue does not need it.
type RunPod struct{}

func init() { Register(RunPod{}, true) }

// Name returns "runpod".
func (RunPod) Name() string { return "runpod" }

// DefaultURL returns RunPodURL.
func (RunPod) DefaultURL() string { return RunPodURL }

// Collect posts the gpuTypes query to env.URL and parses the answer.
func (RunPod) Collect(ctx context.Context, env *Env) (*Result, error) {
	header := http.Header{}
	if key := envValue(env, "RUNPOD_API_KEY"); key != "" {
		header.Set("Authorization", "Bearer "+key)
	}
	body, err := env.Client.PostJSON(ctx, env.URL, map[string]string{"query": runPodQuery}, header)
	if err != nil {
		// GraphQL servers answer bad queries with 400 and an errors list:
		// say what the server said, not only the status.
		if msg := runPodErrors(body); msg != "" {
			return nil, fmt.Errorf("runpod: fetch gpu types: %w: %s", err, msg)
		}
		return nil, fmt.Errorf("runpod: fetch gpu types: %w", err)
	}
	ls, rejects, err := ParseRunPod(body, env.PriceCap)
	if err != nil {
		return nil, err
	}
	return &Result{Listings: ls, Rejects: rejects}, nil
}

// runPodType is one entry of gpuTypes. Numbers are floats (DESIGN §2) and
// pointers, so that null and absent ("not offered") differ from 0.
type runPodType struct {
	ID                 string   `json:"id"`
	DisplayName        string   `json:"displayName"`
	MemoryInGb         *float64 `json:"memoryInGb"`
	MaxGpuCount        *float64 `json:"maxGpuCount"`
	SecureCloud        *bool    `json:"secureCloud"`
	CommunityCloud     *bool    `json:"communityCloud"`
	SecurePrice        *float64 `json:"securePrice"`
	CommunityPrice     *float64 `json:"communityPrice"`
	SecureSpotPrice    *float64 `json:"secureSpotPrice"`
	CommunitySpotPrice *float64 `json:"communitySpotPrice"`
}

// ParseRunPod parses a RunPod gpuTypes response: the GraphQL envelope
// {"data":{"gpuTypes":[...]}} or a bare array of GPU types (the form in which
// recordings such as fixtures/runpod keep it). A GraphQL {"errors":[...]}
// answer is an error carrying the messages, even when partial data came
// with it: a partial catalogue would read as GPUs that disappeared.
//
// Per GPU type and cloud, prices count only when the cloud's flag
// (secureCloud, communityCloud) is true: RunPod fills the other cloud with
// placeholders (0, or 0.5 for MI300X and B200). A null or absent price means
// "not offered" and makes no listing; an explicit 0 under an enabled cloud
// is rejected as a zero price, never taken as free. When the on-demand price
// is rejected the same cloud's spot price is dropped too (DESIGN §7). The
// placeholder type "unknown" is rejected as "placeholder type". A GPU type
// with a field of the wrong type is rejected as a malformed row; the rest of
// the response is kept.
func ParseRunPod(body []byte, limit listings.Price) ([]listings.Listing, []listings.Reject, error) {
	rows, err := runPodRows(body)
	if err != nil {
		return nil, nil, err
	}
	b := NewBatch("runpod")
	for i, raw := range rows {
		var t runPodType
		if err := json.Unmarshal(raw, &t); err != nil {
			// Unmarshal fills what it can before a type error, so the id,
			// when it is a string, still names the row.
			b.Rejectf(t.ID, listings.RejectBadRow, "gpuTypes[%d]: %v", i, err)
			continue
		}
		runPodType2Listings(b, &t, limit)
	}
	return b.Listings, b.Rejects, nil
}

// runPodRows finds the array of GPU types in body.
func runPodRows(body []byte) ([]json.RawMessage, error) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var rows []json.RawMessage
		if err := json.Unmarshal(body, &rows); err != nil {
			return nil, fmt.Errorf("runpod: decode gpu types: %w", err)
		}
		return rows, nil
	}
	var env struct {
		Data *struct {
			GpuTypes json.RawMessage `json:"gpuTypes"`
		} `json:"data"`
		Errors json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("runpod: decode response: %w", err)
	}
	if len(env.Errors) > 0 && string(env.Errors) != "null" && string(env.Errors) != "[]" {
		if msg := runPodErrors(body); msg != "" {
			return nil, fmt.Errorf("runpod: graphql: %s", msg)
		}
		return nil, fmt.Errorf("runpod: graphql errors: %s", clipText(string(env.Errors), 300))
	}
	if env.Data == nil || len(env.Data.GpuTypes) == 0 || string(env.Data.GpuTypes) == "null" {
		return nil, errors.New("runpod: decode response: no data.gpuTypes in the answer")
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(env.Data.GpuTypes, &rows); err != nil {
		return nil, fmt.Errorf("runpod: decode data.gpuTypes: %w", err)
	}
	return rows, nil
}

// runPodErrors returns the messages of a GraphQL errors list in body,
// joined by "; ", or "" when body holds none.
func runPodErrors(body []byte) string {
	var env struct {
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &env) != nil || len(env.Errors) == 0 {
		return ""
	}
	msgs := make([]string, 0, len(env.Errors))
	for _, e := range env.Errors {
		if m := strings.TrimSpace(e.Message); m != "" {
			msgs = append(msgs, clipText(m, 200))
		}
	}
	if len(msgs) == 0 {
		return "an error without a message"
	}
	return strings.Join(msgs, "; ")
}

// runPodType2Listings adds the listings of one GPU type to b.
func runPodType2Listings(b *Batch, t *runPodType, limit listings.Price) {
	if t.ID == "" {
		b.Reject("", listings.RejectNoID, t.DisplayName)
		return
	}
	if t.ID == "unknown" {
		b.Reject(t.ID, rejectPlaceholder, t.DisplayName)
		return
	}
	vram := 0.0
	if t.MemoryInGb != nil {
		vram = *t.MemoryInGb
	}
	maxCount, ok := wholeNumber(t.MaxGpuCount)
	if !ok || vram < 0 {
		b.Rejectf(t.ID, listings.RejectBadRow, "memoryInGb %v maxGpuCount %v", fmtFloat(t.MemoryInGb), fmtFloat(t.MaxGpuCount))
		return
	}
	gpu, known := normalizeGPU(vram, t.ID, t.DisplayName)
	clouds := []struct {
		name        string
		on          *bool
		price, spot *float64
	}{
		{"secure", t.SecureCloud, t.SecurePrice, t.SecureSpotPrice},
		{"community", t.CommunityCloud, t.CommunityPrice, t.CommunitySpotPrice},
	}
	for _, c := range clouds {
		if c.on == nil || !*c.on {
			continue
		}
		base := listings.Listing{
			ID:          t.ID + "/" + c.name,
			GPU:         gpu,
			Known:       known,
			RawGPU:      clipText(t.ID, maxGPUName),
			GPUCount:    1,
			VRAMGB:      vram,
			Region:      c.name,
			Reliability: -1,
			Available:   true,
			MaxCount:    maxCount,
		}
		if c.price != nil {
			p, reason := CheckPrice(*c.price, limit)
			if reason != "" {
				// No spot row for an offer whose on-demand price is bad.
				b.Rejectf(base.ID, reason, "%sPrice=%v", c.name, *c.price)
				continue
			}
			l := base
			l.Kind, l.Price = listings.OnDemand, p
			l.Listed = c.name + "Price=" + strconv.FormatFloat(*c.price, 'f', -1, 64)
			b.Add(l)
		}
		if c.spot != nil {
			p, reason := CheckPrice(*c.spot, limit)
			if reason != "" {
				b.Rejectf(base.ID, reason, "%sSpotPrice=%v", c.name, *c.spot)
				continue
			}
			l := base
			l.Kind, l.Price = listings.Interruptible, p
			l.Listed = c.name + "SpotPrice=" + strconv.FormatFloat(*c.spot, 'f', -1, 64)
			b.Add(l)
		}
	}
}

// wholeNumber reads an optional JSON count: absent or null is 0; a negative,
// fractional or absurd count is not ok.
func wholeNumber(v *float64) (int, bool) {
	if v == nil {
		return 0, true
	}
	f := *v
	if f < 0 || f > 1<<20 || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}

// fmtFloat formats an optional number for a reject's detail.
func fmtFloat(v *float64) string {
	if v == nil {
		return "null"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

// clipText caps untrusted text from a source (error messages, names) at n
// bytes, on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(c byte) bool { return c&0xC0 != 0x80 }

// maxGPUName is the longest GPU name given to listings.Normalize. Real names
// are under 60 bytes; Normalize's cost grows with the square of the words in
// a name, so an absurd "name" from a broken or hostile response would stall
// the run. Longer names are kept, clipped, as unknown.
const maxGPUName = 120

// normalizeGPU is listings.Normalize for untrusted names: trying each
// non-empty name in turn, the first catalog match wins; with none, the first
// non-empty name is kept (clipped to maxGPUName) as unknown.
func normalizeGPU(vram float64, names ...string) (string, bool) {
	first := ""
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if first == "" {
			first = n
		}
		if len(n) > maxGPUName {
			continue
		}
		if g, ok := listings.Normalize(n, vram); ok {
			return g, true
		}
	}
	return clipText(first, maxGPUName), false
}

// envValue reads an environment variable through env.Getenv; a nil Getenv
// means an empty environment.
func envValue(env *Env, key string) string {
	if env == nil || env.Getenv == nil {
		return ""
	}
	return strings.TrimSpace(env.Getenv(key))
}
