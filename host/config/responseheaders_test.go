package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseResponseHeaders(t *testing.T) {
	rules, err := ParseResponseHeaders(` set X-Frame-Options: DENY ,"add Cache-Control: no-cache, no-store",SETDATE Expires: 31540000000, addDate Last-Modified:0 `)
	if err != nil {
		t.Fatal(err)
	}
	want := []HeaderRule{
		{Action: "set", Name: "X-Frame-Options", Value: "DENY", Replace: true},
		{Action: "add", Name: "Cache-Control", Value: "no-cache, no-store"},
		{Action: "SETDATE", Name: "Expires", Value: "31540000000", Offset: 31540000000 * time.Millisecond, Replace: true, Date: true},
		{Action: "addDate", Name: "Last-Modified", Value: "0", Date: true},
	}
	if len(rules) != len(want) {
		t.Fatalf("rules %+v", rules)
	}
	for i := range want {
		if rules[i] != want[i] {
			t.Errorf("rule %d = %+v, want %+v", i, rules[i], want[i])
		}
	}
	if r, err := ParseResponseHeaders("  "); r != nil || err != nil {
		t.Errorf("blank: %v, %v", r, err)
	}
	// Kafka's messages (RestServerConfig.validateHttpResponseHeaderConfig).
	for in, msg := range map[string]string{
		"set":                   "Invalid format of header config 'set'. Expected: '[action] [header name]:[header value]'",
		"badaction X-Foo: bar":  "Invalid header config action: 'badaction'. Expected one of [set, add, setDate, addDate]",
		"set X-Foo bar":         "Invalid format of header name and header value pair 'X-Foo bar'. Expected: '[header name]:[header value]'",
		"set X-Foo: a: b":       "Invalid format of header name and header value pair 'X-Foo: a: b'. Expected: '[header name]:[header value]'",
		"set X Foo: bar":        "Invalid header name 'X Foo'. The '[header name]' cannot contain whitespace",
		"set : bar":             "Invalid header name ''. The '[header name]' cannot contain whitespace",
		"setDate Expires: soon": "a setDate rule's value is a number of milliseconds",
	} {
		_, err := ParseResponseHeaders(in)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want %q", in, err, msg)
		}
	}
}

func TestResponseHeadersSettingValidated(t *testing.T) {
	_, err := ParseWorker(map[string]string{
		"bootstrap.servers": "localhost:9092", "offset.storage.file.filename": "/tmp/o",
		ResponseHTTPHeaders: "set X-Foo bar",
	}, true)
	if err == nil || !strings.Contains(err.Error(), ResponseHTTPHeaders) || !strings.Contains(err.Error(), "Invalid format of header name and header value pair") {
		t.Fatalf("worker config with a bad rule: %v", err)
	}
}
