package rest

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/sluice-io/sluice/host/herder"
)

// workerStatus is the body of GET /health (KIP-1017).
type workerStatus struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// Kafka's health messages.
const (
	healthyMsg   = "Worker has completed startup and is ready to handle requests."
	startingMsg  = "Worker is still starting up."
	unhealthyMsg = "Worker was unable to handle this request and may be unable to handle other requests."
)

func (s *Server) serverInfo(c echo.Context) error {
	info, err := call(s, c, s.h.ServerInfo)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, info)
}

// health answers 200 when the herder answers within the health timeout, 503
// while it is starting, and 500 when it does not answer in time; the last
// two carry the herder's stage when it reports one.
func (s *Server) health(c echo.Context) error {
	_, err := callWithin(s, c, s.cfg.healthTO, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.h.Health(ctx)
	})
	var te *timeoutError
	switch {
	case err == nil:
		return writeJSON(c, http.StatusOK, workerStatus{"healthy", healthyMsg})
	case errors.Is(err, herder.ErrStarting):
		return writeJSON(c, http.StatusServiceUnavailable, workerStatus{"starting", withStage(startingMsg, s.stage())})
	case errors.As(err, &te):
		return writeJSON(c, http.StatusInternalServerError, workerStatus{"unhealthy", withStage(unhealthyMsg, te.stage)})
	}
	return err
}

func (s *Server) stage() string {
	if sr, ok := s.h.(StageReporter); ok {
		return sr.Stage()
	}
	return ""
}

func withStage(msg, stage string) string {
	if stage == "" {
		return msg
	}
	return msg + " " + stage
}
