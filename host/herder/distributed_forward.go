package herder

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Forwarding (Kafka Connect's HerderRequestHandler). A follower sends
// leader-only requests to the leader's advertised REST URL, and the leader
// sends task restarts to the task's owner, with the same path and a forward
// query parameter: a request that arrives without it may be forwarded with
// forward=true, one that arrives with forward=true once more with
// forward=false, and one that arrives with forward=false and still misses
// its target answers 409. host/rest puts the parameter of the incoming
// request into its context (WithForward); the distributed herder reads it.

type forwardKey struct{}

// WithForward returns ctx carrying the forward query parameter of the REST
// request being served ("", "true" or "false").
func WithForward(ctx context.Context, forward string) context.Context {
	return context.WithValue(ctx, forwardKey{}, forward)
}

func forwardParam(ctx context.Context) string {
	v, _ := ctx.Value(forwardKey{}).(string)
	return strings.ToLower(v)
}

// nextForward is the forward parameter of a forwarded request; ok is false
// when the request was already forwarded for the last time.
func nextForward(ctx context.Context) (string, bool) {
	switch forwardParam(ctx) {
	case "":
		return "true", true
	case "true":
		return "false", true
	}
	return "", false
}

// Messages of Kafka Connect's 409 answers in distributed mode.
const (
	msgNoLeader    = "Cannot complete request momentarily due to no known leader URL, likely because a rebalance was underway."
	msgStale       = "Cannot complete request momentarily due to stale configuration (typically caused by a concurrent config change)"
	msgConflicting = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"
)

// forwarder sends requests to other workers' REST APIs.
type forwarder struct {
	client *http.Client
}

// do sends method path?query with body as JSON to the worker at base (an
// advertised URL such as http://host:8083/) and decodes a 2xx answer into
// out (when not nil). An error answer comes back as an *Error of the kind
// its status maps to, with the remote message, so the caller answers as the
// remote did.
func (f *forwarder) do(ctx context.Context, base, method, path string, query url.Values, forward string, body, out any) (int, error) {
	var raw []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("forward %s %s: encode body: %w", method, path, err)
		}
		raw = b
	}
	return f.send(ctx, base, method, path, query, forward, raw, nil, out)
}

// send is do with the body as bytes (nil: none), sent exactly as given,
// and extra headers: a signed request keeps its body and signature.
func (f *forwarder) send(ctx context.Context, base, method, path string, query url.Values, forward string, body []byte, header http.Header, out any) (int, error) {
	u, err := url.Parse(strings.TrimRight(base, "/") + path)
	if err != nil {
		return 0, fmt.Errorf("forward %s %s to %s: %w", method, path, base, err)
	}
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	q.Set("forward", forward)
	u.RawQuery = q.Encode()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return 0, fmt.Errorf("forward %s %s to %s: %w", method, path, base, err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("forward %s %s to %s: %w", method, path, base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("forward %s %s to %s: read answer: %w", method, path, base, err)
	}
	if resp.StatusCode >= 300 {
		var eb struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &eb)
		if eb.Message == "" {
			eb.Message = fmt.Sprintf("%s %s on %s answered %d", method, path, base, resp.StatusCode)
		}
		return resp.StatusCode, &Error{Kind: kindOfStatus(resp.StatusCode), Message: eb.Message}
	}
	if out != nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("forward %s %s to %s: decode answer: %w", method, path, base, err)
		}
	}
	return resp.StatusCode, nil
}

// kindOfStatus is the herder error kind host/rest maps back to status.
func kindOfStatus(status int) error {
	switch status {
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusConflict:
		return ErrConflict
	case http.StatusBadRequest:
		return ErrBadRequest
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusServiceUnavailable:
		return ErrUnavailable
	}
	return nil
}

func connectorPath(name string, rest ...string) string {
	p := "/connectors/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}
