package rest

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/sluice-io/sluice/host/logging"
)

// The /admin/loggers endpoints (KIP-495) change levels on this worker's
// logging.Registry; they involve no herder call, so no timeout.

// listLoggers leaves out the loggers whose level is OFF, root included, as
// Kafka's Loggers.allLevels does; GET /admin/loggers/{name} still shows them.
func (s *Server) listLoggers(c echo.Context) error {
	levels := s.loggers.Levels()
	maps.DeleteFunc(levels, func(_ string, l logging.LoggerLevel) bool { return l.Level == logging.LevelOff })
	return writeJSON(c, http.StatusOK, levels)
}

func (s *Server) getLogger(c echo.Context) error {
	name, err := loggerName(c)
	if err != nil {
		return err
	}
	lvl, err := s.loggers.Level(name)
	if errors.Is(err, logging.ErrNotFound) {
		return notFound("Logger %s not found.", name)
	}
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, lvl)
}

// loggerName reads {logger}: Kafka knows the root logger by "root" in any
// case (ROOT, Root), so those name it rather than a logger of their own.
func loggerName(c echo.Context) (string, error) {
	name, err := param(c, "logger")
	if err != nil {
		return "", err
	}
	if strings.EqualFold(name, logging.RootName) {
		return logging.RootName, nil
	}
	return name, nil
}

// setLogger answers PUT /admin/loggers/{name}: scope=worker (the default,
// and what Kafka falls back to for an unknown scope) answers 200 with the
// loggers set; scope=cluster (KIP-976) answers 204.
func (s *Server) setLogger(c echo.Context) error {
	name, err := loggerName(c)
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	level, err := decodeLoggerLevel(body)
	if err != nil {
		return err
	}
	if _, err := logging.ParseLevel(level); err != nil {
		return notFound("invalid log level '%s'.", level)
	}
	if strings.EqualFold(c.QueryParam("scope"), "cluster") {
		if cl, ok := s.h.(ClusterLoggers); ok {
			err = call0(s, c, func(ctx context.Context) error { return cl.SetClusterLoggerLevel(ctx, name, level) })
		} else {
			_, err = s.loggers.SetLevel(name, level)
		}
		if err != nil {
			return err
		}
		return c.NoContent(http.StatusNoContent)
	}
	affected, err := s.loggers.SetLevel(name, level)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, affected)
}
