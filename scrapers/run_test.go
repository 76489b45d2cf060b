package scrapers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/listings-dev/listings"
)

// fakeSource is a Source whose Collect is a function.
type fakeSource struct {
	name    string
	url     string
	collect func(ctx context.Context, env *Env) (*Result, error)
}

func (f fakeSource) Name() string       { return f.name }
func (f fakeSource) DefaultURL() string { return f.url }
func (f fakeSource) Collect(ctx context.Context, env *Env) (*Result, error) {
	return f.collect(ctx, env)
}

func TestCollectRunRecord(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	var gotEnv *Env
	src := fakeSource{name: "fake", url: "https://example.invalid/api", collect: func(ctx context.Context, env *Env) (*Result, error) {
		gotEnv = env
		return &Result{
			Listings: []listings.Listing{
				{ID: "a", GPU: "RTX 4090", Known: true, Kind: listings.OnDemand, Price: 400000},
				{ID: "b", GPU: "Voodoo 5500", Kind: listings.OnDemand, Price: 100000},
				{ID: "c", GPU: "Voodoo 5500", Kind: listings.OnDemand, Price: 100000},
			},
			Rejects: []listings.Reject{{ID: "x", Reason: listings.RejectZeroGPUs}, {ID: "y", Reason: listings.RejectZeroGPUs}, {ID: "z", Reason: listings.RejectNegative}},
			Notes:   []string{"a note"},
		}, nil
	}}
	fx := map[string]listings.Price{"EUR": 1080000}
	run, ls := Collect(context.Background(), src, RunOptions{Now: now, FX: fx, Client: fastClient()})
	want := listings.Run{
		Source: "fake", Started: now.UTC(), Status: listings.RunOK, Listings: 3,
		Rejects: map[string]int{listings.RejectZeroGPUs: 2, listings.RejectNegative: 1},
		Unknown: map[string]int{"Voodoo 5500": 2}, FX: fx, Notes: []string{"a note"},
	}
	if fmt.Sprint(run.Rejects, run.Unknown, run.FX, run.Notes) != fmt.Sprint(want.Rejects, want.Unknown, want.FX, want.Notes) ||
		run.Source != want.Source || run.Status != want.Status || run.Listings != want.Listings || len(ls) != 3 {
		t.Errorf("run:\n got %+v\nwant %+v", run, want)
	}
	if run.Started != want.Started || run.Started.Location() != time.UTC || run.Finished.Before(run.Started) {
		t.Errorf("times: got started %s finished %s, want started %s (UTC)", run.Started, run.Finished, want.Started)
	}
	if gotEnv.URL != src.url || gotEnv.PriceCap != DefaultPriceCap || !gotEnv.Now.Equal(now) || gotEnv.Client == nil || gotEnv.Log == nil {
		t.Errorf("env: got URL %q cap %v now %s", gotEnv.URL, gotEnv.PriceCap, gotEnv.Now)
	}
}

func TestCollectFailures(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	tests := []struct {
		name    string
		collect func(ctx context.Context, env *Env) (*Result, error)
		timeout time.Duration
		wantErr string
	}{
		{"error", func(ctx context.Context, env *Env) (*Result, error) {
			return nil, errors.New("fake: fetch: HTTP 500")
		}, 0, "fake: fetch: HTTP 500"},
		{"panic", func(ctx context.Context, env *Env) (*Result, error) {
			var m map[string]int
			m["x"] = 1
			return nil, nil
		}, 0, "fake: panic: assignment to entry in nil map"},
		{"nil result", func(ctx context.Context, env *Env) (*Result, error) {
			return nil, nil
		}, 0, Msg0Listings},
		{"zero listings", func(ctx context.Context, env *Env) (*Result, error) {
			return &Result{Rejects: []listings.Reject{{Reason: listings.RejectBadRow}}}, nil
		}, 0, Msg0Listings},
		{"source ignores its deadline", func(ctx context.Context, env *Env) (*Result, error) {
			<-block
			return nil, nil
		}, 50 * time.Millisecond, "timeout after 50ms"},
		{"source returns the deadline error", func(ctx context.Context, env *Env) (*Result, error) {
			<-ctx.Done()
			return nil, fmt.Errorf("fake: fetch: %w", ctx.Err())
		}, 50 * time.Millisecond, "timeout after 50ms: fake: fetch: context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fakeSource{name: "fake", collect: tt.collect}
			run, ls := Collect(context.Background(), src, RunOptions{Timeout: tt.timeout, Client: fastClient()})
			if run.Status != listings.RunFailed || run.Error != tt.wantErr || ls != nil || run.Listings != 0 {
				t.Errorf("got %s %q with %d listings, want failed %q with none", run.Status, run.Error, len(ls), tt.wantErr)
			}
		})
	}
}

func TestCollectKeepsSecretsOutOfErrors(t *testing.T) {
	const key = "vk-0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusInternalServerError)
	}))
	defer srv.Close()
	getenv := func(k string) string {
		if k == "VAST_API_KEY" {
			return key
		}
		return ""
	}
	tests := []struct {
		name string
		src  Source
		url  string
	}{
		{"key in the header", Vast{}, srv.URL},
		{"key in the query", Vast{}, srv.URL + "/?api_key=" + key},
		{"key in the query, connection refused", Vast{}, "http://127.0.0.1:1/?api_key=" + key},
		{"a source that quotes its key", fakeSource{name: "leaky", collect: func(ctx context.Context, env *Env) (*Result, error) {
			return nil, fmt.Errorf("leaky: login with %q failed", env.Getenv("VAST_API_KEY"))
		}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := fastClient()
			o.MaxRetries = -1
			run, _ := Collect(context.Background(), tt.src, RunOptions{URL: tt.url, Getenv: getenv, Client: o})
			if run.Status != listings.RunFailed || run.Error == "" {
				t.Fatalf("got %s %q, want a failed run", run.Status, run.Error)
			}
			if strings.Contains(run.Error, key) || strings.Contains(run.Error, "0123456789abcdef") {
				t.Errorf("error leaks the key: %q", run.Error)
			}
		})
	}
}
