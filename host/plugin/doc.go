// Package plugin is the worker's plugin manager: it finds connector plugins
// in plugin.path, launches one process per connector instance or task, talks
// to it over gRPC with deadlines, and ends it.
package plugin
