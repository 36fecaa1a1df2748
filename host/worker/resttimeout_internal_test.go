package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/config"
)

func TestRESTTimeout(t *testing.T) {
	parse := func(extra map[string]string) *config.Worker {
		t.Helper()
		props := map[string]string{
			"bootstrap.servers": "127.0.0.1:9092", "offset.storage.file.filename": t.TempDir() + "/o",
			"key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter": "org.apache.kafka.connect.storage.StringConverter",
		}
		for k, v := range extra {
			props[k] = v
		}
		cfg, err := config.ParseWorker(props, true)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	for _, c := range []struct {
		prop string
		opt  time.Duration
		want time.Duration
	}{
		{"", 0, 0},                                 // host/rest's default
		{"1500", 0, 1500 * time.Millisecond},       // the property
		{" 2000 ", 0, 2 * time.Second},             // trimmed, as properties are
		{"1500", 3 * time.Second, 3 * time.Second}, // the option wins
	} {
		extra := map[string]string{}
		if c.prop != "" {
			extra[RESTRequestTimeoutProp] = c.prop
		}
		got, err := restTimeout(parse(extra), c.opt)
		if err != nil || got != c.want {
			t.Errorf("property %q, option %v: %v, %v; want %v", c.prop, c.opt, got, err, c.want)
		}
	}
	for _, bad := range []string{"0", "-5", "1s", "x"} {
		_, err := restTimeout(parse(map[string]string{RESTRequestTimeoutProp: bad}), 0)
		if err == nil || !strings.Contains(err.Error(), RESTRequestTimeoutProp) {
			t.Errorf("property %q: error %v, want one naming the property", bad, err)
		}
	}
	// A worker refuses a bad value at construction.
	if _, err := NewStandalone(parse(map[string]string{RESTRequestTimeoutProp: "0"}), Options{BundledPlugins: "-"}); err == nil || !strings.Contains(err.Error(), RESTRequestTimeoutProp) {
		t.Errorf("NewStandalone with a REST timeout of 0: error %v, want one naming the property", err)
	}
}
