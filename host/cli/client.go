package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// client speaks to one worker's REST API.
type client struct {
	base    *url.URL
	http    *http.Client
	rawErrs bool // keep error bodies as they came (-o json)
}

func newClient(raw string, timeout time.Duration, rawErrs bool) (*client, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--url %q: want http(s)://host:port", raw)
	}
	return &client{base: u, http: &http.Client{Timeout: timeout}, rawErrs: rawErrs}, nil
}

// apiError is an error answer of the worker.
type apiError struct {
	status  int
	message string
	raw     []byte // the body, kept for -o json
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.message, e.status)
}

// path joins escaped segments: path("connectors", name, "config").
func path(segments ...string) string {
	for i, s := range segments {
		segments[i] = url.PathEscape(s)
	}
	return "/" + strings.Join(segments, "/")
}

// do sends one request and returns the status and body of a 2xx answer;
// any other answer is an *apiError with Kafka's message.
func (c *client) do(ctx context.Context, method, p string, query url.Values, body any) (int, []byte, error) {
	target := strings.TrimRight(c.base.String(), "/") + p
	if q := query.Encode(); q != "" {
		target += "?" + q
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("cannot reach the worker: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: read answer: %w", method, req.URL.Redacted(), err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, b, nil
	}
	ae := &apiError{status: resp.StatusCode, message: strings.TrimSpace(string(b))}
	var eb struct {
		Message *string `json:"message"`
	}
	if json.Unmarshal(b, &eb) == nil && eb.Message != nil {
		ae.message = *eb.Message
	}
	if ae.message == "" {
		ae.message = http.StatusText(resp.StatusCode)
	}
	if c.rawErrs && json.Valid(b) {
		ae.raw = b
	}
	return resp.StatusCode, nil, ae
}

// get decodes a 2xx answer into v and returns the body too.
func (c *client) get(ctx context.Context, p string, query url.Values, v any) ([]byte, error) {
	_, b, err := c.do(ctx, http.MethodGet, p, query, nil)
	if err != nil {
		return nil, err
	}
	if v != nil {
		if err := decode(b, v); err != nil {
			return nil, fmt.Errorf("GET %s: %w", p, err)
		}
	}
	return b, nil
}

func decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("unexpected answer %q: %w", truncate(string(b), 200), err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
