package lapisproc

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"time"
)

// Ready polls /readyz until it answers 200 (true) or ctx ends (false).
func (p *Proc) Ready(ctx context.Context) bool {
	c := p.Client(5 * time.Second)
	defer c.CloseIdleConnections()
	for {
		if req, err := http.NewRequestWithContext(ctx, "GET", p.Server()+"/readyz", nil); err == nil {
			if resp, err := c.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return true
				}
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Client returns an HTTP/2 client trusting lapis's CA, as kubectl and client-go talk to it.
func (p *Proc) Client(timeout time.Duration) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CAData())
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
		MaxIdleConns:      64, MaxIdleConnsPerHost: 64,
	}}
}

// NewRequest builds a request to lapis carrying the admin token.
func (p *Proc) NewRequest(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.Server()+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.Token())
	return req, nil
}
