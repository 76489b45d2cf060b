package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/listings-dev/listings/fixtures"
)

type flagRow struct {
	Source    string  `json:"source"`
	ID        string  `json:"id"`
	GPU       string  `json:"gpu"`
	Kind      string  `json:"kind"`
	Price     float64 `json:"price"`
	GoneAt    *string `json:"gone_at"`
	LifetimeS int64   `json:"lifetime_s"`
	Status    string  `json:"status"`
}

func (c *cli) flags(args ...string) []flagRow {
	c.t.Helper()
	c.mustRun(append([]string{"flags", "--json"}, args...)...)
	var rows []flagRow
	if err := json.Unmarshal([]byte(c.stdout), &rows); err != nil {
		c.t.Fatalf("flags --json: %v\n%s", err, c.stdout)
	}
	return rows
}

func fixture(t *testing.T, path string) []byte {
	t.Helper()
	b, err := fs.ReadFile(fixtures.FS, path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNightlySeries collects the four-night Vast.ai series 24 h apart:
// the floor listing seen only in night 2 is unconfirmed after night 2 and
// disappeared with lifetime 0 after night 3; the cheap listing present every
// night is never flagged and sets the durable floor.
func TestNightlySeries(t *testing.T) {
	c := newCLI(t)
	srv := newSwitchable(t, nil)
	base := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	const vanishing, durable = "13424436", "13489095"
	for n := 1; n <= 4; n++ {
		srv.set(bodyHandler(fixture(t, fmt.Sprintf("vastai/night%d.json", n))))
		at := base.Add(time.Duration(n-1) * 24 * time.Hour)
		c.now = at.Add(time.Hour)
		c.mustRun("collect", "--source", "vastai", "--source-url", "vastai="+srv.srv.URL, "--observed-at", at.Format(time.RFC3339))
		r := c.median("--gpu", "4090")[0]
		pending := c.flags("--pending", "--gpu", "4090")
		gone := c.flags("--gpu", "4090")
		find := func(rows []flagRow, id, kind string) *flagRow {
			for i := range rows {
				if rows[i].ID == id && rows[i].Kind == kind {
					return &rows[i]
				}
			}
			return nil
		}
		for _, rows := range [][]flagRow{pending, gone} {
			if f := find(rows, durable, "on-demand"); f != nil && n > 1 {
				t.Errorf("night %d: the listing present every night is flagged: %+v", n, f)
			}
		}
		switch n {
		case 1:
			if r.DurableFloor != nil {
				t.Errorf("night 1: durable floor %v, want none (nothing has lasted 24 h)", *r.DurableFloor)
			}
		case 2:
			if f := find(pending, vanishing, "on-demand"); f == nil || f.Status != "unconfirmed" {
				t.Errorf("night 2: %s should be an unconfirmed floor listing: %+v", vanishing, pending)
			}
			if len(gone) != 0 {
				t.Errorf("night 2: flags without --pending lists %+v, want only disappeared (none yet)", gone)
			}
			if r.Floor == nil || *r.Floor != 0.16 {
				t.Errorf("night 2: floor %v, want 0.16", r.Floor)
			}
		case 3, 4:
			f := find(gone, vanishing, "on-demand")
			if f == nil || f.Status != "disappeared" || f.LifetimeS != 0 || f.GoneAt == nil {
				t.Fatalf("night %d: %s should be disappeared with lifetime 0: %+v", n, vanishing, gone)
			}
			if want := base.Add(48 * time.Hour).Format(time.RFC3339); *f.GoneAt != want {
				t.Errorf("night %d: gone_at %s, want %s (night 3's run)", n, *f.GoneAt, want)
			}
			if r.Disappearing != 1 {
				t.Errorf("night %d: 4090 row disappearing = %d, want 1", n, r.Disappearing)
			}
		}
		if n >= 2 && (r.DurableFloor == nil || *r.DurableFloor != 0.166667) {
			t.Errorf("night %d: durable floor %v, want 0.166667 (offer %s, present since night 1)", n, r.DurableFloor, durable)
		}
	}
	// The past is still answerable: as of night 2 the vanishing listing was
	// present and the floor was 0.16.
	r := c.median("--gpu", "4090", "--as-of", base.Add(24*time.Hour+time.Minute).Format(time.RFC3339))[0]
	if r.Floor == nil || *r.Floor != 0.16 || r.Listings != 64 {
		t.Errorf("as of night 2: floor %v listings %d, want 0.16 and 64", r.Floor, r.Listings)
	}
	// Three weeks after the last run nothing is live: exit 1 and no price.
	c.now = base.Add(24 * 24 * time.Hour)
	if code := c.run("median", "--gpu", "4090"); code != 1 || !strings.Contains(c.stdout, "no live price") {
		t.Errorf("three weeks later: exit %d, output:\n%s\nwant exit 1 and \"no live price\"", code, c.stdout)
	}
	if code := c.run("check"); code != 0 {
		t.Errorf("check: exit %d: %s%s", code, c.stdout, c.stderr)
	}
}

// TestRunPodAndLambdaH100SXM: issue 3's cross-source acceptance. The real
// RunPod and Lambda recordings together give six H100 SXM on-demand
// listings with median 3.04 and a per-source breakdown.
func TestRunPodAndLambdaH100SXM(t *testing.T) {
	c := newCLI(t)
	c.env["LAMBDA_API_KEY"] = "test-key-loopback"
	mux := http.NewServeMux()
	mux.Handle("/runpod", bodyHandler(fixture(t, "runpod/runpod-graphql-gputypes-full-2025-06-21.json")))
	mux.HandleFunc("/lambda", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer test-key-loopback" {
			http.Error(w, `{"error":{"code":"unauthorized","message":"bad key"}}`, 401)
			return
		}
		w.Write(fixture(t, "lambda/lambda-instance-types.json"))
	})
	srv := newSwitchable(t, mux.ServeHTTP)
	c.mustRun("collect", "--source", "runpod", "--source", "lambda",
		"--source-url", "runpod="+srv.srv.URL+"/runpod", "--source-url", "lambda="+srv.srv.URL+"/lambda",
		"--observed-at", "2026-11-30T03:00:00Z")
	rows := c.median("--gpu", "h100 sxm")
	if len(rows) != 1 {
		t.Fatalf("median --gpu \"h100 sxm\": %d rows: %+v", len(rows), rows)
	}
	r := rows[0]
	if r.GPU != "H100 SXM" || r.Listings != 6 || r.Median == nil || *r.Median != 3.04 {
		t.Errorf("H100 SXM: %s listings %d median %v; want 6 listings, median 3.04", r.GPU, r.Listings, r.Median)
	}
	bySource := map[string]int{}
	for _, s := range r.Sources {
		bySource[s.Source] = s.Listings
	}
	if bySource["runpod"] != 2 || bySource["lambda"] != 4 {
		t.Errorf("H100 SXM sources: %v; want runpod 2, lambda 4", bySource)
	}
	// The key never reaches the index.
	c.mustRun("runs", "--json")
	if strings.Contains(c.stdout, "test-key-loopback") {
		t.Error("the Lambda key appears in the run records")
	}
	// A plain collect without the key skips lambda with a note.
	delete(c.env, "LAMBDA_API_KEY")
	// Only runpod and lambda are enabled, so nothing leaves loopback.
	cfg := filepath.Join(t.TempDir(), "listings.toml")
	writeFile(t, cfg, "[source.vastai]\nenabled = false\n[source.tensordock]\nenabled = false\n"+
		"[source.cherryservers]\nenabled = false\n[source.servermania]\nenabled = false\n")
	c.env["LISTINGS_CONFIG"] = cfg
	c.run("collect", "--source-url", "runpod="+srv.srv.URL+"/runpod", "--timeout", "2s", "--observed-at", "2026-11-30T04:00:00Z")
	if !strings.Contains(c.stdout, "lambda skipped: set LAMBDA_API_KEY") || strings.Count(c.stdout, " ok ") != 1 {
		t.Errorf("plain collect without LAMBDA_API_KEY: no skip note:\n%s", c.stdout)
	}
	if code := c.run("collect", "--source", "lambda", "--source-url", "lambda="+srv.srv.URL+"/lambda"); code != 1 || !strings.Contains(c.stdout, "LAMBDA_API_KEY") {
		t.Errorf("collect --source lambda without the key: exit %d\n%s", code, c.stdout)
	}
}

// TestFXRates: Cherry Servers bills in EUR. Without a rate its listings form
// rows of their own currency; with `fx` in the config they join the USD
// rows at the configured rate, which each run records.
func TestFXRates(t *testing.T) {
	page := fixture(t, "cherryservers/gpu-servers.html")
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("User-agent: *\nAllow: /\n")) })
	mux.HandleFunc("/gpu", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	srv := newSwitchable(t, mux.ServeHTTP)
	collect := func(c *cli, at string) {
		c.mustRun("collect", "--source", "cherryservers", "--source-url", "cherryservers="+srv.srv.URL+"/gpu", "--observed-at", at)
	}
	rowsOf := func(c *cli) map[string]medianRow {
		c.run("median", "--json", "--gpu", "rtx a6000", "--kind", "monthly")
		var rows []struct {
			medianRow
			Currency string `json:"currency"`
		}
		if err := json.Unmarshal([]byte(c.stdout), &rows); err != nil {
			t.Fatalf("%v\n%s", err, c.stdout)
		}
		out := map[string]medianRow{}
		for _, r := range rows {
			out[r.Currency] = r.medianRow
		}
		return out
	}

	plain := newCLI(t)
	collect(plain, "2026-11-30T03:00:00Z")
	eur := rowsOf(plain)
	if r, ok := eur["EUR"]; !ok || r.Median == nil || *r.Median != 0.845589 {
		t.Fatalf("without a rate: rows %+v; want an EUR row at 0.845589 (1,234.56 / 730 / 2)", eur)
	}
	if _, ok := eur["USD"]; ok && eur["USD"].Live {
		t.Errorf("without a rate an EUR price entered a USD row: %+v", eur["USD"])
	}

	withFX := newCLI(t)
	cfg := filepath.Join(t.TempDir(), "listings.toml")
	writeFile(t, cfg, "fx_date = \"2026-11-01\"\n[fx]\nEUR = 1.08\n")
	withFX.env["LISTINGS_CONFIG"] = cfg
	collect(withFX, "2026-11-30T03:00:00Z")
	usd := rowsOf(withFX)
	if r, ok := usd["USD"]; !ok || r.Median == nil || *r.Median != 0.913236 {
		t.Errorf("with EUR = 1.08: rows %+v; want a USD row at 0.913236 (0.845589 × 1.08)", usd)
	}
	withFX.mustRun("runs", "--json")
	if !strings.Contains(withFX.stdout, `"EUR": 1.08`) || !strings.Contains(withFX.stdout, `"fx_date": "2026-11-01"`) {
		t.Errorf("the run does not record its rate:\n%s", withFX.stdout)
	}
}

// TestKeyFromFile: LAMBDA_API_KEY_FILE names an owner-only file holding the
// key; a file others can read is refused.
func TestKeyFromFile(t *testing.T) {
	c := newCLI(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/lambda", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer key-from-file" {
			http.Error(w, `{"error":{"code":"unauthorized","message":"bad key"}}`, 401)
			return
		}
		w.Write(fixture(t, "lambda/lambda-instance-types.json"))
	})
	srv := newSwitchable(t, mux.ServeHTTP)
	keyFile := filepath.Join(t.TempDir(), "lambda.key")
	writeFile(t, keyFile, "key-from-file\n")
	c.env["LAMBDA_API_KEY_FILE"] = keyFile
	args := []string{"collect", "--source", "lambda", "--source-url", "lambda=" + srv.srv.URL + "/lambda", "--observed-at", "2026-11-30T03:00:00Z"}
	c.mustRun(args...)
	if !strings.Contains(c.stdout, "lambda  ok") {
		t.Errorf("collect with the key in a 0600 file:\n%s", c.stdout)
	}
	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := c.run(args...); code != 1 || !strings.Contains(c.stderr, "readable by others") {
		t.Errorf("a world-readable key file: exit %d stderr %q; want 1 and a refusal", code, c.stderr)
	}
}
