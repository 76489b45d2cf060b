package scrapers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Hosts is the per-host gate of the polite HTTP layer: at most one request
// in flight per host (host:port), and a delay plus jitter between the end
// of one request and the start of the next. Clients sharing a Hosts share
// its gates; DefaultHosts is what clients use unless told otherwise.
type Hosts struct {
	mu sync.Mutex
	m  map[string]*hostGate
}

// DefaultHosts is the process-wide gate shared by every client whose
// options do not name another.
var DefaultHosts = NewHosts()

// NewHosts returns an empty gate set; tests use their own so they do not
// wait on each other.
func NewHosts() *Hosts { return &Hosts{m: map[string]*hostGate{}} }

type hostGate struct {
	sem  chan struct{} // one slot: the request in flight
	mu   sync.Mutex
	next time.Time // earliest start of the next request
}

func (h *Hosts) gate(host string) *hostGate {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.m[host]
	if g == nil {
		g = &hostGate{sem: make(chan struct{}, 1)}
		h.m[host] = g
	}
	return g
}

// acquire takes the host's slot and waits until its next allowed start.
func (g *hostGate) acquire(ctx context.Context, sleep func(context.Context, time.Duration) error) error {
	select {
	case g.sem <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	g.mu.Lock()
	wait := time.Until(g.next)
	g.mu.Unlock()
	if wait > 0 {
		if err := sleep(ctx, wait); err != nil {
			<-g.sem
			return err
		}
	}
	return nil
}

// release frees the slot; the next request may start after delay plus up
// to 50% jitter, or at notBefore if that is later (a Retry-After).
func (g *hostGate) release(delay time.Duration, notBefore time.Time) {
	g.mu.Lock()
	n := time.Now().Add(delay + jitter(delay/2))
	if notBefore.After(n) {
		n = notBefore
	}
	if n.After(g.next) {
		g.next = n
	}
	g.mu.Unlock()
	<-g.sem
}

// jitter returns a uniformly random duration in [0, max].
func jitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(max) + 1))
}

// backoff is the wait before retry number attempt+1: full jitter over
// min(MaxBackoff, BaseBackoff × 2^attempt).
func backoff(attempt int, base, limit time.Duration) time.Duration {
	d := base
	for i := 0; i < attempt && d < limit; i++ {
		d *= 2
	}
	return jitter(min(d, limit))
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP
// date. ok is false when the header is absent or unreadable.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		if s > int64(365*24*time.Hour/time.Second) {
			s = int64(365 * 24 * time.Hour / time.Second)
		}
		return time.Duration(s) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// transport is the polite http.RoundTripper of one Client.
type transport struct{ c *Client }

// canRetry reports whether req may be sent again: idempotent methods
// without a body, and any request whose body can be replayed (GetBody).
func canRetry(req *http.Request) bool {
	if req.GetBody != nil {
		return true
	}
	if req.Body != nil && req.Body != http.NoBody {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// transient reports whether a transport error is worth a retry: a
// timed-out attempt, a refused, reset or cut connection.
func transient(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE):
		return true
	case errors.As(err, &ne):
		return true
	}
	return false
}

func retryStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500 && code <= 599
}

// RoundTrip sends req through the host's gate with a per-attempt timeout,
// retrying 429, 5xx and transient errors with capped exponential backoff
// and full jitter (or the server's Retry-After, up to RetryAfterCap). The
// returned body fails with *ErrTooLarge past MaxBodyBytes; closing it (or
// reading it to the end) frees the host for the next request.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	o := &t.c.opts
	ctx := req.Context()
	retryable := canRetry(req)
	g := o.Hosts.gate(req.URL.Host)
	var last error // what the latest attempt failed with, for a deadline that falls while backing off
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("replay request body: %w", err)
			}
			r = req.Clone(ctx)
			r.Body = body
		}
		if r.Header.Get("User-Agent") == "" {
			if r == req {
				r = req.Clone(ctx)
			}
			r.Header.Set("User-Agent", o.UserAgent)
		}
		if err := g.acquire(ctx, o.Sleep); err != nil {
			if last != nil {
				return nil, fmt.Errorf("%w (while retrying after: %v)", err, last)
			}
			return nil, err
		}
		actx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
		resp, err := o.Transport.RoundTrip(r.WithContext(actx))
		var wait time.Duration
		var notBefore time.Time
		if err != nil {
			cancel()
			g.release(o.HostDelay, time.Time{})
			if ctx.Err() != nil {
				if last != nil {
					return nil, fmt.Errorf("%w (while retrying after: %v)", context.Cause(ctx), last)
				}
				return nil, context.Cause(ctx)
			}
			last = err
			if !retryable || attempt >= o.MaxRetries || !transient(err) {
				if errors.Is(err, context.DeadlineExceeded) {
					return nil, fmt.Errorf("no response within the %s request timeout: %w", o.RequestTimeout, err)
				}
				return nil, err
			}
			wait = backoff(attempt, o.BaseBackoff, o.MaxBackoff)
		} else {
			if !retryStatus(resp.StatusCode) {
				return t.deliver(resp, g, cancel)
			}
			ra, hasRA := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
			if hasRA && ra > o.RetryAfterCap {
				discard(resp)
				cancel()
				g.release(o.HostDelay, time.Time{})
				return nil, fmt.Errorf("HTTP %s: server asks to wait %s: %w of %s", resp.Status, ra, ErrRetryAfterTooLong, o.RetryAfterCap)
			}
			last = fmt.Errorf("HTTP %s", resp.Status)
			if !retryable || attempt >= o.MaxRetries {
				return t.deliver(resp, g, cancel)
			}
			discard(resp)
			cancel()
			if hasRA {
				// The host gate holds every request to this host, ours
				// included, until then.
				notBefore = time.Now().Add(ra)
			} else {
				wait = backoff(attempt, o.BaseBackoff, o.MaxBackoff)
			}
			g.release(o.HostDelay, notBefore)
		}
		t.c.retries.Add(1)
		if wait > 0 {
			if err := o.Sleep(ctx, wait); err != nil {
				// The run's deadline fell during the backoff: say what the
				// attempts were failing with, or cron users see only "timeout".
				return nil, fmt.Errorf("%w (while retrying after: %v)", err, last)
			}
		}
	}
}

// deliver hands resp to the caller with its body metered and limited.
func (t *transport) deliver(resp *http.Response, g *hostGate, cancel context.CancelFunc) (*http.Response, error) {
	o := &t.c.opts
	if resp.ContentLength > o.MaxBodyBytes {
		discard(resp)
		cancel()
		g.release(o.HostDelay, time.Time{})
		return nil, &ErrTooLarge{o.MaxBodyBytes}
	}
	t.c.pages.Add(1)
	resp.Body = &meteredBody{rc: resp.Body, limit: o.MaxBodyBytes, c: t.c, done: func() {
		cancel()
		g.release(o.HostDelay, time.Time{})
	}}
	return resp, nil
}

// retryNote says how many retries the client has made, for error texts.
func (t *transport) retryNote(*http.Response) string {
	if n := t.c.retries.Load(); n > 0 {
		return fmt.Sprintf(" (after %d retries)", n)
	}
	return ""
}

// discard drains a little of a body we will not use, so the connection can
// be reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// meteredBody counts the bytes read into the client's stats, fails past the
// limit, and frees the host gate at EOF, error or Close, whichever is first.
type meteredBody struct {
	rc    io.ReadCloser
	n     int64
	limit int64
	c     *Client
	once  sync.Once
	done  func()
}

func (b *meteredBody) Read(p []byte) (int, error) {
	if b.n > b.limit {
		return 0, &ErrTooLarge{b.limit}
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	b.c.bytes.Add(int64(n))
	if b.n > b.limit {
		b.once.Do(b.done)
		return n, &ErrTooLarge{b.limit}
	}
	if err != nil {
		b.once.Do(b.done)
	}
	return n, err
}

func (b *meteredBody) Close() error {
	err := b.rc.Close()
	b.once.Do(b.done)
	return err
}
