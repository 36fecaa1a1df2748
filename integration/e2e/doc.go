// Package e2e holds the end-to-end tests of the standalone worker: the real
// bin/sluice binary with its real plugin processes (bin/plugins) against a
// real Apache Kafka broker (package kafkatest), driven as an operator would,
// through files, properties, signals and the REST API.
//
// Each test compares the data end to end, counts and contents: what the
// FileStreamSource read against what reached the topic and what the
// FileStreamSink wrote. The scenarios follow Kafka's own connect_test.py and
// the acceptance list of issue 4: a 100 000-line pipeline; a clean stop and
// restart delivering appended lines exactly once; a SIGKILLed worker losing
// nothing; a SIGKILLed task plugin turning its task FAILED while the others
// move on, and a REST restart bringing it back; pause and resume; the
// converters' bytes on the topic; and bad input, refused with a message that
// names the key or line.
//
// The package shares one Kafka cluster across its tests (TestMain), and every
// test uses topics, files and connector names of its own. Set SLUICE_BIN to
// test another build of the worker; its plugins are looked up next to it.
// The tests carry the `integration` build tag: make test-integration.
package e2e
