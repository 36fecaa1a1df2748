package rest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/rest/resttest"
)

// response.http.headers.config applies to every answer, errors included.
func TestResponseHeaders(t *testing.T) {
	e := newEnv(t, Options{ResponseHeaders: `set X-Frame-Options: DENY, "add Cache-Control: no-cache, no-store, must-revalidate", add X-Many: one, add X-Many: two, setDate Expires: 3600000`})
	for _, path := range []string{"/", "/connectors", "/connectors/missing"} {
		r := e.do("GET", path, "")
		if r.status == 0 {
			t.Fatalf("GET %s: no answer", path)
		}
		if got := r.header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("GET %s (%d): X-Frame-Options %q", path, r.status, got)
		}
		if got := r.header.Get("Cache-Control"); got != "no-cache, no-store, must-revalidate" {
			t.Errorf("GET %s: Cache-Control %q", path, got)
		}
		if got := r.header.Values("X-Many"); strings.Join(got, "|") != "one|two" {
			t.Errorf("GET %s: X-Many %q", path, got)
		}
		exp, err := http.ParseTime(r.header.Get("Expires"))
		if err != nil {
			t.Errorf("GET %s: Expires %q: %v", path, r.header.Get("Expires"), err)
		} else if d := time.Until(exp); d < 59*time.Minute || d > 61*time.Minute {
			t.Errorf("GET %s: Expires %s is %s from now, want an hour", path, exp, d)
		}
		// What the handler sets itself stays its own.
		if ct := r.header.Get("Content-Type"); r.status == 200 && !strings.HasPrefix(ct, "application/json") {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
	}
	if _, err := New(resttest.New(), nil, Options{ResponseHeaders: "set X-Foo bar"}); err == nil || !strings.Contains(err.Error(), "response.http.headers.config") {
		t.Errorf("a bad rule: %v, want an error naming the setting", err)
	}
}
