package rest

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/sluice-io/sluice/host/logging"
	"github.com/sluice-io/sluice/host/rest/resttest"
)

// The fuzz targets send arbitrary bodies to every endpoint that takes one,
// through the whole handler stack with the fake herder behind it: no input
// may yield a 5xx or a panic, and every error is Kafka's error body. Seed
// corpora are under testdata/fuzz. Run one with, e.g.,
//
//	go test -run '^$' -fuzz FuzzCreateConnector -fuzztime 30s ./host/rest/

// fuzzServer is a server with a running connector "fz", stopped connectors
// "fz-src" (source) and "fz-sink" (sink), and a logger registry.
func fuzzServer(f *testing.F) http.Handler {
	f.Helper()
	reg, err := logging.New(logging.Options{Output: io.Discard})
	if err != nil {
		f.Fatal(err)
	}
	srv, err := New(resttest.New(), reg, Options{})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	for _, req := range []struct{ method, path, body string }{
		{"PUT", "/connectors/fz/config", sourceConfig},
		{"PUT", "/connectors/fz-src/config", sourceConfig},
		{"PUT", "/connectors/fz-src/stop", ""},
		{"PUT", "/connectors/fz-sink/config", sinkConfig},
		{"PUT", "/connectors/fz-sink/stop", ""},
	} {
		if rec := serve(h, req.method, req.path, req.body); rec.Code >= 300 {
			f.Fatalf("%s %s: %d %s", req.method, req.path, rec.Code, rec.Body)
		}
	}
	return h
}

// checkAnswer fails on a 5xx and on an error answer that is not Kafka's.
func checkAnswer(t *testing.T, method, path string, body []byte, h http.Handler) {
	rec := serve(h, method, path, string(body))
	if rec.Code >= 500 {
		t.Fatalf("%s %s with %q: %d %s", method, path, body, rec.Code, rec.Body)
	}
	if rec.Code < 400 {
		return
	}
	var eb map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb["error_code"] != float64(rec.Code) || eb["message"] == nil {
		t.Fatalf("%s %s with %q: error body %s", method, path, body, rec.Body)
	}
}

func FuzzCreateConnector(f *testing.F) {
	h := fuzzServer(f)
	f.Add([]byte(`{"name":"a","config":` + sourceConfig + `,"initial_state":"paused"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnswer(t, "POST", "/connectors", body, h)
	})
}

func FuzzPutConfig(f *testing.F) {
	h := fuzzServer(f)
	f.Add([]byte(sinkConfig))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnswer(t, "PUT", "/connectors/fz-put/config", body, h)
	})
}

func FuzzPatchConfig(f *testing.F) {
	h := fuzzServer(f)
	f.Add([]byte(`{"file":null,"tasks.max":"2"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnswer(t, "PATCH", "/connectors/fz/config", body, h)
	})
}

func FuzzPatchOffsets(f *testing.F) {
	h := fuzzServer(f)
	f.Add([]byte(`{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":{"kafka_offset":1}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnswer(t, "PATCH", "/connectors/fz-src/offsets", body, h)
		checkAnswer(t, "PATCH", "/connectors/fz-sink/offsets", body, h)
		checkAnswer(t, "PATCH", "/connectors/fz/offsets", body, h)
	})
}

func FuzzValidate(f *testing.F) {
	h := fuzzServer(f)
	f.Add([]byte(sourceConfig))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnswer(t, "PUT", "/connector-plugins/FileStreamSource/config/validate", body, h)
	})
}

func FuzzPutLogger(f *testing.F) {
	h := fuzzServer(f)
	f.Add([]byte(`{"level":"DEBUG"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnswer(t, "PUT", "/admin/loggers/sluice.fuzz", body, h)
		checkAnswer(t, "PUT", "/admin/loggers/sluice.fuzz?scope=cluster", body, h)
	})
}
