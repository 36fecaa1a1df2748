// Package version holds the version string the bundled connectors report
// (GET /connector-plugins shows it). Kafka's bundled connectors report the
// Kafka release they ship with; Sluice's report the Sluice release. Release
// builds set it with
//
//	go build -ldflags "-X github.com/sluice-io/sluice/plugins/internal/version.Version=1.2.3"
package version

// Version is the Sluice release the bundled connectors belong to.
var Version = "0.1.0"
