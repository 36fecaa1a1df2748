// Package wire is the protocol between the Sluice worker and its plugins, as
// seen from Go: go-plugin's handshake and plugin set (handshake.go), the
// mapping between package data and the generated proto types (one place,
// used by both sides), and the error classification of plugin.proto.
//
// The worker (host/) and the Go SDK (pluginsdk) both import it; it imports
// neither.
package wire
