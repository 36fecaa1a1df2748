package rest

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// POST /connectors trims the name as Java's String.trim does: every code
// point up to U+0020 at either end goes (control characters included), and
// nothing above it (no-break and other Unicode spaces stay).
func TestCreateTrimsNameAsJava(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct{ sent, want string }{
		{`\u0001ctl\u001f`, "ctl"},
		{`\t\r\n\u0000tabs \u000b`, "tabs"},
		{`\u00a0nbsp\u00a0`, "\u00a0nbsp\u00a0"},
		{`\u2003em\u3000`, "\u2003em\u3000"},
	} {
		r := e.do("POST", "/connectors", `{"name":"`+tc.sent+`","config":`+sourceConfig+`}`)
		if r.status != http.StatusCreated {
			t.Fatalf("create %q: %d %s", tc.sent, r.status, r.body)
		}
		var info struct {
			Name   string            `json:"name"`
			Config map[string]string `json:"config"`
		}
		r.decode(t, &info)
		if info.Name != tc.want || info.Config["name"] != tc.want {
			t.Fatalf("create %q: name %q, config name %q; want %q", tc.sent, info.Name, info.Config["name"], tc.want)
		}
		if loc, want := r.header.Get("Location"), e.url+"/connectors/"+url.PathEscape(tc.want); loc != want {
			t.Fatalf("create %q: Location %q, want %q", tc.sent, loc, want)
		}
		e.do("GET", "/connectors/"+url.PathEscape(tc.want)+"/config", "").expect(t, http.StatusOK, "")
	}
	// U+0085 is above U+0020, so it stays, and the name is refused for
	// holding a control character.
	r := e.do("POST", "/connectors", `{"name":"\u0085nel","config":`+sourceConfig+`}`)
	if r.status != http.StatusBadRequest || !strings.Contains(r.message(t), "control") {
		t.Fatalf("create \"\\u0085nel\": %d %s", r.status, r.body)
	}
}
