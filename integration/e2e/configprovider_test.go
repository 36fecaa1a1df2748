//go:build integration

package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/integration/itest"
)

// TestConfigProviderFileVariable: a FileStreamSource whose file setting is
// ${file:<secrets>:path} reads the file the variable names and moves its
// lines to the topic, while the REST API shows the placeholder, not the
// path, in the connector's config and in its task configs.
func TestConfigProviderFileVariable(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("cp")
	in := e.path("in.txt")
	secrets := e.writeProps("secrets.properties", map[string]string{"path": in})
	placeholder := "${file:" + secrets + ":path}"
	lines := makeLines("cp", 0, 500)
	appendLines(t, in, lines)

	name := e.name("src")
	cfg := sourceConfig(name, placeholder, topic)
	w := e.startWorker(e.workerProps(map[string]string{
		"config.providers":                          "file",
		"config.providers.file.class":               "org.apache.kafka.common.config.provider.FileConfigProvider",
		"config.providers.file.param.allowed.paths": e.dir,
	}), e.connector(cfg))
	w.waitState(name, "RUNNING", 1)
	requireLines(t, "topic", lines, itest.Values(e.readTopic(topic, len(lines))))

	var got map[string]string
	if err := json.Unmarshal(w.do(http.MethodGet, "/connectors/"+name+"/config", nil, http.StatusOK), &got); err != nil {
		t.Fatal(err)
	}
	if got["file"] != placeholder {
		t.Fatalf("GET config: file=%q, want the placeholder %q", got["file"], placeholder)
	}
	body := string(w.do(http.MethodGet, "/connectors/"+name+"/tasks", nil, http.StatusOK))
	if !strings.Contains(body, `"file":"`+placeholder+`"`) || strings.Contains(body, in) {
		t.Fatalf("GET tasks shows the resolved value or no placeholder: %s", body)
	}
	body = string(w.do(http.MethodGet, "/connectors/"+name, nil, http.StatusOK))
	if strings.Contains(body, in) {
		t.Fatalf("GET connector shows the resolved value: %s", body)
	}
	w.stop()
}
