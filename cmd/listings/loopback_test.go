package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// TestMain makes every HTTP request of this package's tests refuse any
// address outside loopback, so a test that forgets a --source-url (or a
// new source enabled by default) fails instead of reaching the internet.
func TestMain(m *testing.M) {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("test dialled %s: only loopback is allowed in tests", addr)
		}
		return dialer.DialContext(ctx, network, addr)
	}
	http.DefaultTransport = t
	os.Exit(m.Run())
}

func TestLoopbackGuard(t *testing.T) {
	_, err := http.Get("http://192.0.2.1/") // TEST-NET-1: never dialled
	if err == nil {
		t.Fatal("a request to a non-loopback address went through")
	}
}
