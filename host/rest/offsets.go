package rest

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/sluice-io/sluice/host/herder"
)

// message is Kafka Connect's Message entity.
type message struct {
	Message string `json:"message"`
}

func (s *Server) getOffsets(c echo.Context) error {
	name, err := param(c, "connector")
	if err != nil {
		return err
	}
	offs, err := call(s, c, func(ctx context.Context) (*herder.ConnectorOffsets, error) {
		return s.h.ConnectorOffsets(ctx, name)
	})
	if err != nil {
		return err
	}
	if offs == nil {
		return errors.New("the herder returned no offsets")
	}
	if offs.Offsets == nil {
		offs = &herder.ConnectorOffsets{Offsets: []herder.ConnectorOffset{}}
	}
	return writeJSON(c, http.StatusOK, offs)
}

// alterOffsets is KIP-875's PATCH. This side checks that the body has
// offsets at all; the herder checks the connector is STOPPED and, for a
// sink, the partition and offset shape (herder.ParseSinkOffsets).
func (s *Server) alterOffsets(c echo.Context) error {
	name, err := param(c, "connector")
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	offs, err := decodeOffsets(body)
	if err != nil {
		return err
	}
	msg, err := call(s, c, func(ctx context.Context) (string, error) {
		return s.h.AlterConnectorOffsets(ctx, name, offs)
	})
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, message{msg})
}

func (s *Server) resetOffsets(c echo.Context) error {
	name, err := param(c, "connector")
	if err != nil {
		return err
	}
	msg, err := call(s, c, func(ctx context.Context) (string, error) {
		return s.h.ResetConnectorOffsets(ctx, name)
	})
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, message{msg})
}
