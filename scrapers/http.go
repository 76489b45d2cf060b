package scrapers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// ClientOptions configures the shared HTTP layer.
type ClientOptions struct {
	UserAgent      string            // "listings/VERSION (+contact)"
	RequestTimeout time.Duration     // per request; default 30s
	MaxBodyBytes   int64             // a larger response fails the run; default 64 MiB
	Transport      http.RoundTripper // nil: http.DefaultTransport
}

// Client is the HTTP layer every source uses. One Client serves one run of
// one source, so its counters are that run's HTTP facts.
type Client struct {
	opts    ClientOptions
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
	rt := opts.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &Client{opts: opts, hc: &http.Client{Transport: rt}}
}

// ErrTooLarge is returned when a response exceeds MaxBodyBytes.
type ErrTooLarge struct{ Limit int64 }

func (e *ErrTooLarge) Error() string {
	return fmt.Sprintf("response larger than the %d-byte limit", e.Limit)
}

// Do sends req and returns the whole body of a 2xx response.
func (c *Client) Do(ctx context.Context, req *http.Request) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	req = req.WithContext(ctx)
	req.Header.Set("User-Agent", c.opts.UserAgent)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxBodyBytes+1))
	c.bytes.Add(int64(len(body)))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", req.Method, req.URL.Redacted(), err)
	}
	if int64(len(body)) > c.opts.MaxBodyBytes {
		return nil, &ErrTooLarge{c.opts.MaxBodyBytes}
	}
	c.pages.Add(1)
	if resp.StatusCode/100 != 2 {
		return body, fmt.Errorf("%s %s: HTTP %s", req.Method, req.URL.Redacted(), resp.Status)
	}
	return body, nil
}

// Get fetches url.
func (c *Client) Get(ctx context.Context, url string, header http.Header) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return c.Do(ctx, req)
}

// PostJSON posts body as JSON to url.
func (c *Client) PostJSON(ctx context.Context, url string, body any, header http.Header) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
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
