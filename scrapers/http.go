package scrapers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// ClientOptions configures the shared HTTP layer (DESIGN §7). The zero value
// is usable: every field has a default.
type ClientOptions struct {
	UserAgent      string            // "listings/VERSION (+contact)", see UserAgent; default "listings"
	RequestTimeout time.Duration     // per attempt, headers and body; default 30s
	MaxBodyBytes   int64             // a larger response fails the run (ErrTooLarge); default 64 MiB
	Transport      http.RoundTripper // the wire; nil: http.DefaultTransport
	// Hosts is the per-host gate: one request at a time per host, HostDelay
	// (plus up to 50% jitter) between two requests to one host. Clients that
	// share it share the gate; nil means DefaultHosts, shared by every client
	// of the process, so runs of different sources in parallel never hammer
	// one host while different hosts proceed in parallel.
	Hosts     *Hosts
	HostDelay time.Duration // default 1s; negative: no delay
	// MaxRetries is how many times a failed attempt (429, 5xx, timeout,
	// connection error) is retried; default 3, negative: none.
	MaxRetries  int
	BaseBackoff time.Duration // default 1s
	MaxBackoff  time.Duration // default 30s
	// RetryAfterCap is the longest Retry-After honoured; a response asking for
	// more fails at once rather than wait. Default 60s.
	RetryAfterCap time.Duration
	// Sleep waits d or until ctx ends, returning ctx's error then. Tests
	// replace it to run retries in milliseconds; nil: a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// UserAgent formats the User-Agent every request carries:
// "listings/VERSION (+CONTACT)".
func UserAgent(version, contact string) string {
	if version == "" {
		version = "dev"
	}
	if contact == "" {
		return "listings/" + version
	}
	return "listings/" + version + " (+" + contact + ")"
}

// Client is the HTTP layer every source uses. One Client serves one run of
// one source, so its counters are that run's HTTP facts. Its transport
// (Transport) does the politeness: the per-host gate, per-attempt timeouts,
// retries and the size limit; Do, Get and PostJSON add reading the body and
// turning a non-2xx status into an error.
type Client struct {
	opts    ClientOptions
	rt      *transport
	hc      *http.Client
	pages   atomic.Int64
	bytes   atomic.Int64
	retries atomic.Int64
}

// NewClient returns a client with opts' defaults filled in.
func NewClient(opts ClientOptions) *Client {
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 64 << 20
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "listings"
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport
	}
	if opts.Hosts == nil {
		opts.Hosts = DefaultHosts
	}
	switch {
	case opts.HostDelay == 0:
		opts.HostDelay = time.Second
	case opts.HostDelay < 0:
		opts.HostDelay = 0
	}
	switch {
	case opts.MaxRetries == 0:
		opts.MaxRetries = 3
	case opts.MaxRetries < 0:
		opts.MaxRetries = 0
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.RetryAfterCap <= 0 {
		opts.RetryAfterCap = 60 * time.Second
	}
	if opts.Sleep == nil {
		opts.Sleep = sleepCtx
	}
	c := &Client{opts: opts}
	c.rt = &transport{c: c}
	// The http.Client follows redirects; every hop goes through the gate.
	c.hc = &http.Client{Transport: c.rt}
	return c
}

// Transport returns the client's polite transport, for libraries that take
// an http.RoundTripper (colly's Collector.WithTransport). Requests through
// it are counted in the client's Stats.
func (c *Client) Transport() http.RoundTripper { return c.rt }

// ErrTooLarge is returned when a response exceeds MaxBodyBytes.
type ErrTooLarge struct{ Limit int64 }

func (e *ErrTooLarge) Error() string {
	return fmt.Sprintf("response larger than the %d-byte limit", e.Limit)
}

// ErrRetryAfterTooLong is returned (wrapped) when a server asks to wait
// longer than RetryAfterCap: the run fails at once instead of waiting.
var ErrRetryAfterTooLong = errors.New("retry-after above the cap")

// Do sends req and returns the whole body of a 2xx response. A non-2xx
// response returns its body too, with an error naming the status.
func (c *Client) Do(ctx context.Context, req *http.Request) ([]byte, error) {
	req = req.WithContext(ctx)
	req.Header.Set("User-Agent", c.opts.UserAgent)
	where := req.Method + " " + RedactURL(req.URL)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: read body: %w", where, err)
	}
	if resp.StatusCode/100 != 2 {
		return body, fmt.Errorf("%s: HTTP %s%s", where, resp.Status, c.rt.retryNote(resp))
	}
	return body, nil
}

// Get fetches url.
func (c *Client) Get(ctx context.Context, url string, header http.Header) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return c.Do(ctx, req)
}

// PostJSON posts body as JSON to url. The request carries GetBody, so it is
// retried like an idempotent one: our POSTs are queries.
func (c *Client) PostJSON(ctx context.Context, url string, body any, header http.Header) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("post: encode body: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("post: %w", err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return c.Do(ctx, req)
}

// Stats returns the run's HTTP facts: responses read, bytes read, retries.
func (c *Client) Stats() (pages int, bytes int64, retries int) {
	return int(c.pages.Load()), c.bytes.Load(), int(c.retries.Load())
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// secretParams are query parameter names whose values never appear in an
// error or a log.
var secretParams = []string{"key", "token", "secret", "password", "passwd", "auth", "signature", "sig", "credential"}

// RedactURL formats u for errors and logs: the password and the values of
// query parameters that look like credentials (api_key, token, ...) are
// replaced by "REDACTED".
func RedactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	if u.RawQuery == "" {
		return u.Redacted()
	}
	v := *u
	q := v.Query()
	changed := false
	for name := range q {
		n := strings.ToLower(name)
		for _, s := range secretParams {
			if strings.Contains(n, s) {
				q[name] = []string{"REDACTED"}
				changed = true
				break
			}
		}
	}
	if changed {
		v.RawQuery = q.Encode()
	}
	return v.Redacted()
}

// unwrapURLError drops net/http's *url.Error wrapper, which repeats the
// whole URL (query and all); callers name the redacted URL themselves.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
