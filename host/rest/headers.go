package rest

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	workerconfig "github.com/sluice-io/sluice/host/config"
)

// responseHeaders applies response.http.headers.config to every response,
// as Jetty's HeaderFilter does in Kafka Connect: before the handler runs,
// so what a handler sets itself (Content-Type) wins over a "set" rule.
// The date actions write the HTTP date their value's milliseconds from now.
func responseHeaders(rules []workerconfig.HeaderRule) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			for _, r := range rules {
				v := r.Value
				if r.Date {
					v = time.Now().Add(r.Offset).UTC().Format(http.TimeFormat)
				}
				if r.Replace {
					h.Set(r.Name, v)
				} else {
					h.Add(r.Name, v)
				}
			}
			return next(c)
		}
	}
}
