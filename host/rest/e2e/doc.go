// Package e2e proves the REST API of issue 5 against a real standalone
// worker: host/worker started in-process on franz-go's in-process kfake
// broker, with real plugin processes built from plugins/file,
// plugins/datagen, examples/go/counter-source and testplugin (a plugin made
// for these tests: a connector whose validation hangs, and one with
// PASSWORD settings).
//
// The package holds no code of its own besides that test plugin; the tests
// are an HTTP test per endpoint and status code, a replay of what Kafka's
// connect_rest_test.py expects of the file connectors, the hung-validation
// timeout, and the sluice CLI (host/cli) against the same worker. Where
// data moves, the tests read it back from Kafka or from the sink's file.
package e2e
