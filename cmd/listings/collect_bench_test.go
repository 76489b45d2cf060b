package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/listings-dev/listings"
	"github.com/listings-dev/listings/index"
	"github.com/listings-dev/listings/scrapers"
	"github.com/listings-dev/listings/stats"
)

// BenchmarkParseAndCommitVast is issue 2's performance target end to end:
// parse the real 3.8 MB recording and commit it as one run, with the stats
// rows and floor marks derived inside the transaction, into a fresh index
// (the worst case: every listing opens a segment).
func BenchmarkParseAndCommitVast(b *testing.B) {
	body := wrappedVast(b)
	b.SetBytes(int64(len(body)))
	dir := b.TempDir()
	at := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	i := 0
	for b.Loop() {
		i++
		ls, rejects, err := scrapers.ParseVast(body, at, 0)
		if err != nil {
			b.Fatal(err)
		}
		db, err := index.Open(filepath.Join(dir, fmt.Sprintf("%d.db", i)), index.Options{})
		if err != nil {
			b.Fatal(err)
		}
		run := listings.Run{Source: "vastai", Started: at, Finished: at, Status: listings.RunOK, Listings: len(ls)}
		run.CountRejects(rejects)
		if _, err := db.WriteRun(run, ls, stats.Derive(stats.Params{}, "vastai")); err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}
