// Package rest serves Apache Kafka Connect's REST API over a herder.Herder,
// endpoint for endpoint: the same paths, query parameters, JSON field names,
// status codes and error body {"error_code":N,"message":"..."}, so existing
// Kafka Connect clients, UIs and operators work unchanged. docs/rest.md lists
// every endpoint and the few places Sluice deliberately answers differently.
//
// The package translates, it does not decide: it decodes request bodies
// (decode.go, strictly), calls the herder, and maps the herder's errors to
// HTTP in one place (errors.go): herder.ErrNotFound → 404,
// ErrAlreadyExists and ErrConflict → 409, ErrBadRequest → 400, ErrForbidden
// → 403, ErrStarting and ErrUnavailable → 503, anything else → 500, with
// the herder's message.
// Config values pass through untouched: placeholders such as
// ${file:/path:key} and PASSWORD values are stored and answered as the
// herder has them; nothing here resolves or masks them.
//
// Every herder call runs under the request timeout (90 s by default) with
// the deadline on its context. At the deadline the request is answered 500
// "Request timed out", followed by the herder's stage when the herder is a
// StageReporter, whether or not the herder has returned: a plugin hung in
// validate never wedges the API, and no lock in this package serialises
// requests. Calls left running are cancelled and awaited by Shutdown.
//
// The admin endpoints (/admin/loggers, KIP-495 and KIP-976) change levels
// on a logging.Registry; they are served on the regular listeners unless
// admin listeners of their own are configured, or none (disabled).
//
// Listeners are http or https (PEM certificate and key); CORS follows
// access.control.allow.origin and access.control.allow.methods as Jetty's
// CrossOriginFilter does for Kafka. Tests can drive the API in-process
// through Server.Handler, or bind port 0 and read Server.Addrs;
// package resttest has an in-memory herder for that.
package rest
