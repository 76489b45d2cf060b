package scrapers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/listings-dev/listings"
)

// DefaultTimeout is the per-source deadline when RunOptions.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// RunOptions configures one run of one source (Collect).
type RunOptions struct {
	URL      string                    // endpoint override; "" → src.DefaultURL()
	Now      time.Time                 // observed-at: the run's Started; zero → time.Now().UTC()
	Timeout  time.Duration             // per-source deadline; zero → DefaultTimeout
	Client   ClientOptions             // the run's HTTP client (its Hosts gate is shared)
	PriceCap listings.Price            // zero → DefaultPriceCap
	Getenv   func(string) string       // nil → os.Getenv
	Log      *slog.Logger              // nil → discarded
	Options  map[string]any            // the source's config table
	FX       map[string]listings.Price // recorded on the run
}

// Msg0Listings is the error of an ok collection that produced no listing:
// a source that normally lists offers has changed, it is not an empty
// market (DESIGN §2).
const Msg0Listings = "0 listings: markup or API changed?"

// errTimeout is the cause of a run's context when its deadline passes.
var errTimeout = errors.New("source deadline passed")

// Collect runs one source with its own deadline, client and logger and
// returns its run record and listings. It never panics (a panicking source
// is a failed run). The run is failed when the source returns an error, when
// the deadline passes ("timeout after 2m0s: ..."; Collect returns at the
// deadline even if the source does not) or when an ok collection yields no
// listing (Msg0Listings); a failed run returns no listings. Rejects are
// counted per reason (Run.Rejects), unknown GPU names in Run.Unknown (name →
// listings kept), Pages/Bytes/Retries come from the client and Listings is
// len(listings). Started is Now (UTC); Finished is Started plus the wall
// time the run took. Error texts never contain the values of secret
// environment variables read through Getenv or credentials in the URL.
func Collect(ctx context.Context, src Source, o RunOptions) (listings.Run, []listings.Listing) {
	wallStart := time.Now()
	started := o.Now
	if started.IsZero() {
		started = wallStart
	}
	started = started.UTC()
	run := listings.Run{Source: src.Name(), Started: started, Status: listings.RunOK, FX: o.FX}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.URL == "" {
		o.URL = src.DefaultURL()
	}
	if o.PriceCap <= 0 {
		o.PriceCap = DefaultPriceCap
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	secrets := &secretSet{}
	client := NewClient(o.Client)
	env := &Env{
		URL:      o.URL,
		Client:   client,
		Now:      started,
		Getenv:   secrets.watch(o.Getenv),
		PriceCap: o.PriceCap,
		Log:      log,
		Options:  o.Options,
	}

	rctx, cancel := context.WithTimeoutCause(ctx, o.Timeout, errTimeout)
	defer cancel()
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				log.Error("source panicked", "panic", p, "stack", string(debug.Stack()))
				done <- outcome{err: fmt.Errorf("%s: panic: %v", src.Name(), p)}
			}
		}()
		res, err := src.Collect(rctx, env)
		done <- outcome{res, err}
	}()
	var out outcome
	timedOut := false
	select {
	case out = <-done:
		timedOut = out.err != nil && context.Cause(rctx) == errTimeout
	case <-rctx.Done():
		timedOut = context.Cause(rctx) == errTimeout
		// Give the source a moment to return its own error (it usually
		// names the request that was cut short), but never hang on it.
		grace := time.NewTimer(50 * time.Millisecond)
		select {
		case out = <-done:
		case <-grace.C:
			out.err = context.Cause(rctx)
		}
		grace.Stop()
	}

	var ls []listings.Listing
	if out.res != nil {
		run.CountRejects(out.res.Rejects)
		run.Notes = append(run.Notes, out.res.Notes...)
		ls = out.res.Listings
	}
	switch {
	case timedOut:
		msg := "timeout after " + o.Timeout.String()
		if out.err != nil && out.err != errTimeout {
			// The source's own error names the request cut short, or what
			// the retries were failing with ("connection refused").
			if text := strings.TrimRight(strings.TrimSuffix(out.err.Error(), errTimeout.Error()), ": "); text != "" {
				msg += ": " + text
			}
		}
		run.Error = msg
	case out.err != nil:
		run.Error = out.err.Error()
	case ctx.Err() != nil:
		run.Error = "canceled: " + context.Cause(ctx).Error()
	case len(ls) == 0:
		run.Error = Msg0Listings
	}
	if run.Error != "" {
		run.Status = listings.RunFailed
		run.Error = secrets.scrub(run.Error, o.URL)
		ls = nil
	}
	for _, l := range ls {
		if !l.Known {
			if run.Unknown == nil {
				run.Unknown = map[string]int{}
			}
			run.Unknown[l.GPU]++
		}
	}
	run.Listings = len(ls)
	run.Pages, run.Bytes, run.Retries = client.Stats()
	run.Finished = started.Add(time.Since(wallStart))
	if run.Status == listings.RunOK {
		log.Info("run ok", "listings", run.Listings, "rejected", run.Rejected(), "pages", run.Pages, "bytes", run.Bytes, "retries", run.Retries)
	} else {
		log.Warn("run failed", "error", run.Error, "rejected", run.Rejected(), "retries", run.Retries)
	}
	return run, ls
}

// secretSet remembers the values of secret-looking environment variables
// a source read, so they can be scrubbed from error texts.
type secretSet struct {
	mu     sync.Mutex
	values []string
}

// secretNames are the parts of an environment variable name that mark its
// value as a credential.
var secretNames = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"}

func (s *secretSet) watch(getenv func(string) string) func(string) string {
	return func(name string) string {
		v := getenv(name)
		up := strings.ToUpper(name)
		for _, m := range secretNames {
			if strings.Contains(up, m) && strings.TrimSpace(v) != "" {
				s.mu.Lock()
				s.values = append(s.values, v, strings.TrimSpace(v))
				s.mu.Unlock()
				break
			}
		}
		return v
	}
}

// scrub replaces secrets in msg: the recorded environment values and the
// credential-looking query values and password of rawURL.
func (s *secretSet) scrub(msg, rawURL string) string {
	s.mu.Lock()
	secrets := append([]string(nil), s.values...)
	s.mu.Unlock()
	if u, err := url.Parse(rawURL); err == nil {
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
		for name, vs := range u.Query() {
			n := strings.ToLower(name)
			for _, m := range secretParams {
				if strings.Contains(n, m) {
					secrets = append(secrets, vs...)
					break
				}
			}
		}
	}
	for _, v := range secrets {
		if len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "REDACTED")
			if e := url.QueryEscape(v); e != v {
				msg = strings.ReplaceAll(msg, e, "REDACTED")
			}
		}
	}
	return msg
}
