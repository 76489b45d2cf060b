package main

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/listings-dev/listings/fixtures"
)

func init() { register("demo", cmdDemo) }

// demoFeed is what the demo's loopback server answers for one source on
// each of the four nights it replays.
type demoFeed struct {
	source string
	nights [4]string // fixture paths under fixtures.FS
}

// demoFeeds lists the bundled fixtures the demo replays. Vast.ai changes
// from night to night (a floor listing appears and vanishes, another
// stays); the other sources serve the same recording each night.
var demoFeeds = []demoFeed{
	{"vastai", [4]string{"vastai/night1.json", "vastai/night2.json", "vastai/night3.json", "vastai/night4.json"}},
	{"runpod", same4("runpod/runpod-graphql-gputypes-full-2025-06-21.json")},
	{"lambda", same4("lambda/lambda-instance-types.json")},
	{"tensordock", same4("tensordock/locations.json")},
	{"cherryservers", same4("cherryservers/gpu-servers.html")},
	{"servermania", same4("servermania/gpu-servers.html")},
	{"nimbus", same4("htmltable/pricing.html")},
}

// demoHTMLTable is the README's worked example of a user-defined source:
// a pricing page no Go code knows, described in the config alone.
var demoHTMLTable = SourceConfig{
	Kind: "html-table", URL: "https://nimbus.example/pricing", TableHeader: "On-demand price", GPUColumn: "GPU", CountColumn: "GPUs",
	PriceColumn: "On-demand price", VRAMColumn: "VRAM", IDColumn: "Instance", RegionCol: "Region",
	Unit: "hourly", Currency: "USD",
}

func same4(p string) [4]string { return [4]string{p, p, p, p} }

// demoEnv is the environment the demo's collectors see: the real one plus
// placeholder keys, which only ever reach the loopback server.
func demoEnv(getenv func(string) string) func(string) string {
	return func(k string) string {
		if k == "LAMBDA_API_KEY" {
			return "demo-key-loopback-only"
		}
		return getenv(k)
	}
}

func cmdDemo(ctx context.Context, a *app, args []string) error {
	fset := a.flagSet("demo", "[--db PATH]")
	dbPath := fset.String("db", "", "keep the demo index at this path (default: a temporary file, removed after)")
	if err := parse(fset, args); err != nil {
		return err
	}
	if *dbPath == "" {
		*dbPath = a.dbFlag // `listings --db X demo` keeps the index at X too ($LISTINGS_DB does not: it names your real index)
	}
	if *dbPath == "" {
		dir, err := os.MkdirTemp("", "listings-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		a.dbPath = filepath.Join(dir, "listings.db")
	} else {
		if _, err := os.Stat(*dbPath); err == nil {
			return fmt.Errorf("demo: %s exists; the demo writes a fresh index (remove it or pick another path)", *dbPath)
		}
		a.dbPath = *dbPath
	}
	var night atomic.Int32 // the night being served; atomic: the handlers run on the server's goroutines
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nAllow: /\n")
	})
	for _, f := range demoFeeds {
		mux.HandleFunc("/"+f.source+"/", func(w http.ResponseWriter, r *http.Request) {
			file := f.nights[night.Load()]
			b, err := fs.ReadFile(fixtures.FS, file)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			if strings.HasSuffix(file, ".html") {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			w.Write(b)
		})
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()

	if a.cfg.Source == nil {
		a.cfg.Source = map[string]SourceConfig{}
	}
	if _, ok := a.cfg.Source["nimbus"]; !ok {
		a.cfg.Source["nimbus"] = demoHTMLTable
	}
	var names []string
	urls := map[string]string{}
	for _, f := range demoFeeds {
		names = append(names, f.source)
		urls[f.source] = srv.URL + "/" + f.source + "/"
	}
	now := a.now().UTC().Truncate(time.Minute)
	fmt.Fprintf(a.stdout, "listings demo: replaying %d bundled sources over four nights into %s\n", len(names), a.dbPath)
	fmt.Fprintf(a.stdout, "(a loopback server at %s serves the fixtures through the real collectors; no network)\n\n", srv.URL)
	for n := 0; n < 4; n++ {
		night.Store(int32(n))
		observed := now.Add(-time.Duration(3-n) * 24 * time.Hour)
		_, _, err := a.collect(ctx, collectOptions{
			sources: names, urls: urls, observed: observed, timeout: 30 * time.Second,
			getenv: demoEnv(a.getenv), hostDelay: -1, // one loopback host serves every source
		})
		if err != nil {
			return err
		}
	}
	section := func(title string) { fmt.Fprintf(a.stdout, "\n== %s\n", title) }
	section("runs: listings runs")
	if err := cmdRuns(ctx, a, nil); err != nil {
		return err
	}
	section("market: listings gpus --kind on-demand")
	if err := cmdGPUs(ctx, a, []string{"--kind", "on-demand"}); err != nil {
		return err
	}
	section("one GPU: listings median --gpu 4090")
	if err := cmdMedian(ctx, a, []string{"--gpu", "4090"}); err != nil && err != errSilent {
		return err
	}
	section("disappearing floor listings: listings flags --pending")
	if err := cmdFlags(ctx, a, []string{"--pending"}); err != nil {
		return err
	}
	for _, extra := range demoExtras {
		section(extra.title)
		if err := extra.run(ctx, a); err != nil && err != errSilent {
			return err
		}
	}
	if *dbPath != "" {
		fmt.Fprintf(a.stdout, "\nthe index is kept at %s: try `listings --db %s median --gpu a100`\n", a.dbPath, a.dbPath)
	}
	return nil
}

// demoExtras are further sections other commands add to the demo (the
// recommender, the export).
var demoExtras []struct {
	title string
	run   func(ctx context.Context, a *app) error
}
