package rest

import (
	"net/http"
	"testing"

	"github.com/sluice-io/sluice/host/logging"
)

// Kafka's Loggers knows the root logger by "root" in any case, for GET and
// PUT alike; no logger named "Root" is made.
func TestRootLoggerNameIsCaseInsensitive(t *testing.T) {
	e := newEnv(t, Options{})
	e.do("GET", "/admin/loggers/ROOT", "").expect(t, http.StatusOK, `{"level":"INFO","last_modified":null}`)
	e.do("PUT", "/admin/loggers/Root", `{"level":"DEBUG"}`).expect(t, http.StatusOK, `["root"]`)
	if l, err := e.loggers.Level(logging.RootName); err != nil || l.Level != logging.LevelDebug {
		t.Fatalf("root after PUT /admin/loggers/Root: %+v, %v", l, err)
	}
	r := e.do("GET", "/admin/loggers/rOOt", "")
	var lvl logging.LoggerLevel
	r.expect(t, http.StatusOK, "")
	r.decode(t, &lvl)
	if lvl.Level != logging.LevelDebug || lvl.LastModified == nil {
		t.Fatalf("GET /admin/loggers/rOOt: %s", r.body)
	}
	e.do("PUT", "/admin/loggers/ROOT?scope=cluster", `{"level":"WARN"}`).expect(t, http.StatusNoContent, "")
	if l, _ := e.loggers.Level(logging.RootName); l.Level != logging.LevelWarn {
		t.Fatalf("root after cluster PUT /admin/loggers/ROOT: %+v", l)
	}
	e.do("GET", "/admin/loggers", "").expect(t, http.StatusOK, "")
	if _, err := e.loggers.Level("Root"); err == nil {
		t.Fatalf("a logger named Root was made")
	}
	if _, err := e.loggers.Level("ROOT"); err == nil {
		t.Fatalf("a logger named ROOT was made")
	}
}

// GET /admin/loggers leaves out the loggers whose level is OFF, root
// included, as Kafka's Loggers.allLevels does; GET of one still answers.
func TestLoggersListLeavesOutOff(t *testing.T) {
	e := newEnv(t, Options{})
	e.loggers.Logger("sluice.task.src-0")
	e.loggers.Logger("sluice.connector.src")
	e.do("PUT", "/admin/loggers/sluice.task", `{"level":"OFF"}`).expect(t, http.StatusOK, `["sluice.task","sluice.task.src-0"]`)
	var all map[string]logging.LoggerLevel
	r := e.do("GET", "/admin/loggers", "")
	r.expect(t, http.StatusOK, "")
	r.decode(t, &all)
	if len(all) != 2 || all["root"].Level != logging.LevelInfo || all["sluice.connector.src"].Level != logging.LevelInfo {
		t.Fatalf("GET /admin/loggers with sluice.task OFF: %s", r.body)
	}
	r = e.do("GET", "/admin/loggers/sluice.task.src-0", "")
	r.expect(t, http.StatusOK, "")
	var one logging.LoggerLevel
	r.decode(t, &one)
	if one.Level != logging.LevelOff {
		t.Fatalf("GET /admin/loggers/sluice.task.src-0: %s", r.body)
	}
	e.do("PUT", "/admin/loggers/root", `{"level":"off"}`).expect(t, http.StatusOK, "")
	e.do("GET", "/admin/loggers", "").expect(t, http.StatusOK, `{}`)
}
