package rest

import (
	"net/http"
	"net/http/httptest"
	"strings"
)

// serve runs one request through a handler in-process.
func serve(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
