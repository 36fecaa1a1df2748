package configprovider

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// expiring answers from data with a TTL per path (absent: none).
type expiring struct {
	fake
	ttls map[string]time.Duration
}

func (e *expiring) GetWithTTL(ctx context.Context, path string, keys []string) (Data, error) {
	vals, err := e.Get(ctx, path, keys)
	if err != nil {
		return Data{}, err
	}
	return Data{Values: vals, TTL: e.ttls[path]}, nil
}

func TestResolveTTLSmallestOfPaths(t *testing.T) {
	v := &expiring{
		fake: fake{data: map[string]map[string]string{"/a": {"k": "A"}, "/b": {"k": "B"}, "/c": {"k": "C"}, "/z": {"k": "Z"}, "/n": {"k": "N"}}},
		ttls: map[string]time.Duration{"/a": 5 * time.Second, "/b": 2 * time.Second, "/z": 0, "/n": -time.Second},
	}
	plain := &fake{data: map[string]map[string]string{"/p": {"k": "P"}}}
	r := (*Resolver)(nil).With("v", v).With("f", plain)
	cfg := map[string]string{"a": "${v:/a:k}", "b": "x${v:/b:k}", "c": "${v:/c:k}", "p": "${f:/p:k}", "z": "${v:/z:k}", "n": "${v:/n:k}"}
	out, ttl, err := r.ResolveTTL(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ttl != 2*time.Second {
		t.Fatalf("ttl %v, want 2s", ttl)
	}
	if out["a"] != "A" || out["b"] != "xB" || out["c"] != "C" || out["p"] != "P" || out["z"] != "Z" || out["n"] != "N" {
		t.Fatalf("resolved %v", out)
	}
	// Each path asked once, through GetWithTTL (which records via Get).
	if len(v.calls) != 5 || len(plain.calls) != 1 {
		t.Fatalf("calls %v %v", v.calls, plain.calls)
	}

	// Zero and negative TTLs, and providers without TTLs, expire nothing.
	_, ttl, err = r.ResolveTTL(context.Background(), map[string]string{"z": "${v:/z:k}", "n": "${v:/n:k}", "p": "${f:/p:k}", "c": "${v:/c:k}"})
	if err != nil || ttl != 0 {
		t.Fatalf("ttl %v err %v, want none", ttl, err)
	}
}

func TestResolveReportsTTLToContext(t *testing.T) {
	v := &expiring{
		fake: fake{data: map[string]map[string]string{"/a": {"k": "A"}, "/c": {"k": "C"}}},
		ttls: map[string]time.Duration{"/a": 3 * time.Second},
	}
	r := (*Resolver)(nil).With("v", v)
	type report struct {
		cfg map[string]string
		ttl time.Duration
	}
	var got []report
	ctx := WithTTLReporter(context.Background(), func(cfg map[string]string, ttl time.Duration) {
		got = append(got, report{cfg, ttl})
	})
	cfg := map[string]string{"name": "c1", "a": "${v:/a:k}"}
	out, err := r.Resolve(ctx, cfg)
	if err != nil || out["a"] != "A" {
		t.Fatalf("resolve: %v %v", out, err)
	}
	if len(got) != 1 || got[0].ttl != 3*time.Second || got[0].cfg["a"] != "${v:/a:k}" || got[0].cfg["name"] != "c1" {
		t.Fatalf("reports %+v", got)
	}
	// No TTL: no report.
	if _, err := r.Resolve(ctx, map[string]string{"c": "${v:/c:k}"}); err != nil || len(got) != 1 {
		t.Fatalf("reported without a TTL: %+v %v", got, err)
	}
	// A failed resolution reports nothing.
	v.err = errors.New("lease refused")
	if _, err := r.Resolve(ctx, cfg); err == nil || !strings.Contains(err.Error(), "lease refused") || len(got) != 1 {
		t.Fatalf("failed resolution: %v, reports %+v", err, got)
	}
	v.err = nil
	// Without a reporter in the context, Resolve just resolves.
	if out, err := r.Resolve(context.Background(), cfg); err != nil || out["a"] != "A" || len(got) != 1 {
		t.Fatalf("no reporter: %v %v %+v", out, err, got)
	}
}
