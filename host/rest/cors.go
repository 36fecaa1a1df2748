package rest

import (
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// cors answers cross-origin requests as Jetty's CrossOriginFilter does for
// Kafka Connect when access.control.allow.origin is set: an allowed origin
// is echoed back with credentials allowed; a preflight (OPTIONS with
// Access-Control-Request-Method) for an allowed method is answered here,
// 204, with the allowed methods and headers; requests from other origins
// get no CORS headers and are served as usual.
type cors struct {
	any      bool
	patterns []*regexp.Regexp
	methods  []string
	allowed  string // methods, comma-separated
	headers  string
}

func newCORS(origins, methods []string) *cors {
	c := &cors{methods: methods, allowed: strings.Join(methods, ","), headers: defaultCORSHeaders}
	for _, o := range origins {
		if o == "*" {
			c.any = true
			continue
		}
		// "*" inside an origin is a wildcard, as in Jetty.
		pat := "^" + strings.ReplaceAll(regexp.QuoteMeta(o), `\*`, ".*") + "$"
		c.patterns = append(c.patterns, regexp.MustCompile(pat))
	}
	return c
}

func (c *cors) allows(origin string) bool {
	if c.any {
		return true
	}
	for _, p := range c.patterns {
		if p.MatchString(origin) {
			return true
		}
	}
	return false
}

func (c *cors) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ctx echo.Context) error {
		req, h := ctx.Request(), ctx.Response().Header()
		origin := req.Header.Get(echo.HeaderOrigin)
		if origin == "" {
			return next(ctx)
		}
		h.Add(echo.HeaderVary, echo.HeaderOrigin)
		if !c.allows(origin) {
			return next(ctx)
		}
		h.Set(echo.HeaderAccessControlAllowOrigin, origin)
		h.Set(echo.HeaderAccessControlAllowCredentials, "true")
		want := req.Header.Get(echo.HeaderAccessControlRequestMethod)
		if req.Method != http.MethodOptions || want == "" {
			return next(ctx)
		}
		if slices.Contains(c.methods, strings.ToUpper(want)) {
			h.Set(echo.HeaderAccessControlAllowMethods, c.allowed)
			h.Set(echo.HeaderAccessControlAllowHeaders, c.headers)
			h.Set(echo.HeaderAccessControlMaxAge, "1800")
		}
		return ctx.NoContent(http.StatusNoContent)
	}
}

// trimTrailingSlash serves "/connectors/" as "/connectors", as Jersey does.
func trimTrailingSlash(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := c.Request().URL
		if len(u.Path) > 1 && strings.HasSuffix(u.Path, "/") {
			u.Path = strings.TrimSuffix(u.Path, "/")
			if u.RawPath != "" {
				u.RawPath = strings.TrimSuffix(u.RawPath, "/")
			}
		}
		return next(c)
	}
}
