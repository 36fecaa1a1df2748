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
// follower's connector generated. req carries the body exactly as received
// and the KIP-507 signature headers: the herder checks them (and answers
// 400, 403 or 503 through its error kinds) and forwards them unchanged.
// Without it the route answers 404.
type TaskConfigWriter interface {
	PutTaskConfigs(ctx context.Context, connector string, configs []map[string]string, req herder.InternalRequest) error
}

// The distributed herder must keep serving the route: a change of either
// signature would otherwise turn it into a silent 404.
var _ TaskConfigWriter = (*herder.Distributed)(nil)

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
	h := c.Request().Header
	req := herder.InternalRequest{Body: body, Signature: h.Get(herder.HeaderSignature), Algorithm: h.Get(herder.HeaderSignatureAlgorithm)}
	if err := call0(s, c, func(ctx context.Context) error { return w.PutTaskConfigs(ctx, name, cfgs, req) }); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
