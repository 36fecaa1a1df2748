package rest

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/sluice-io/sluice/host/herder"
)

// TaskConfigWriter is implemented by a herder that takes task configs from
// other workers (the distributed herder): the internal
// POST /connectors/{c}/tasks, whose body is the list of task configs a
// follower's connector generated. Without it the route answers 404.
type TaskConfigWriter interface {
	PutTaskConfigs(ctx context.Context, connector string, configs []map[string]string) error
}

// withForward hands the forward query parameter of a request (set by a
// worker forwarding it) to the herder through the request's context.
func withForward(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if v := c.QueryParam("forward"); v != "" {
			r := c.Request()
			c.SetRequest(r.WithContext(herder.WithForward(r.Context(), v)))
		}
		return next(c)
	}
}

func (s *Server) putTaskConfigs(c echo.Context) error {
	w, ok := s.h.(TaskConfigWriter)
	if !ok {
		return errRouteNotFound
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var cfgs []map[string]string
	if err := json.Unmarshal(body, &cfgs); err != nil {
		return badRequest("Invalid task configurations: %v", err)
	}
	name := c.Param("connector")
	if err := call0(s, c, func(ctx context.Context) error { return w.PutTaskConfigs(ctx, name, cfgs) }); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
