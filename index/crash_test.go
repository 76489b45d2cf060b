package index

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestKillDuringWrites is invariant 1 with a real kill -9: a child process
// writes runs of the real Vast.ai recording (with churn) as fast as it can;
// the parent kills it at several instants. Each time the index opens, its
// checks pass, and every run it holds is whole: the listings it records
// for the run are all present at that run.
func TestKillDuringWrites(t *testing.T) {
	if os.Getenv("LISTINGS_CRASH_CHILD") != "" {
		crashChild(t)
		return
	}
	path := filepath.Join(t.TempDir(), "listings.db")
	killed := 0
	for i, after := range []time.Duration{150 * time.Millisecond, 400 * time.Millisecond, 700 * time.Millisecond, time.Second} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillDuringWrites$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LISTINGS_CRASH_CHILD="+path, "LISTINGS_CRASH_FROM="+strconv.Itoa(i*1000))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(after)
		if err := cmd.Process.Signal(syscall.SIGKILL); err == nil {
			killed++
		}
		cmd.Wait()

		db, err := OpenReadOnly(path, Options{})
		if err != nil {
			t.Fatalf("after kill %d: open: %v", i, err)
		}
		faults, err := db.Check()
		if err != nil || len(faults) > 0 {
			t.Fatalf("after kill %d: check: %v %v", i, faults, err)
		}
		runs, err := db.Runs("vastai", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			snap, err := db.Snapshot(SnapshotQuery{AsOf: r.Started, MaxAge: -1})
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Present) != r.Listings {
				t.Fatalf("after kill %d: run %s records %d listings, the index holds %d at it: a torn write",
					i, r.Started.Format(time.RFC3339), r.Listings, len(snap.Present))
			}
		}
		db.Close()
		t.Logf("kill %d after %s: %d whole runs", i, after, len(runs))
	}
	if killed == 0 {
		t.Fatal("the writer finished before every kill: nothing was tested")
	}
}

// crashChild writes runs until it is killed.
func crashChild(t *testing.T) {
	path := os.Getenv("LISTINGS_CRASH_CHILD")
	from, _ := strconv.Atoi(os.Getenv("LISTINGS_CRASH_FROM"))
	ls := vastListings(t)
	db, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	for r := from; r < from+1000; r++ {
		run := okRun("vastai", t0.Add(time.Duration(r)*time.Hour))
		batch := churn(ls, r)
		run.Listings = len(batch)
		if _, err := db.WriteRun(run, batch, floorDeriver); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
	db.Close()
}
