package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Environment overrides apply before validation: they may supply a
// required setting the file lacks, and a bad value from them is named.
func TestEnvOverridesApplyBeforeValidation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.properties")
	if err := os.WriteFile(path, []byte("bootstrap.servers=k:9092\noffset.storage.file.filename=/tmp/o\nkey.converter=bad\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"CONNECT_KEY_CONVERTER=org.apache.kafka.connect.storage.StringConverter",
		"CONNECT_VALUE_CONVERTER=org.apache.kafka.connect.json.JsonConverter",
		"CONNECT_VALUE_CONVERTER_SCHEMAS_ENABLE=false",
		"CONNECT_PRODUCER_MAX_REQUEST_SIZE=1048576",
		"CONNECT_SASL_JAAS_CONFIG=x required a=\"b=c\";",
	}
	w, err := LoadWorker(path, env, true)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"key.converter":                  "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "false",
		"producer.max.request.size":      "1048576",
		"sasl.jaas.config":               "x required a=\"b=c\";",
		"bootstrap.servers":              "k:9092",
	} {
		if w.Props[k] != v {
			t.Errorf("%s = %q, want %q", k, w.Props[k], v)
		}
	}
	_, err = LoadWorker(path, append(env, "CONNECT_OFFSET_FLUSH_INTERVAL_MS=soon"), true)
	if err == nil || !strings.Contains(err.Error(), "offset.flush.interval.ms") || !strings.Contains(err.Error(), "soon") {
		t.Fatalf("want an error naming offset.flush.interval.ms, got %v", err)
	}
}
