// Command sluice is the Sluice worker and a client of its REST API.
//
//	sluice standalone worker.properties [connector.properties|connector.json ...]
//
// runs a standalone worker as Kafka's connect-standalone does: worker
// properties under Kafka Connect's names, overridden by CONNECT_*
// environment variables (CONNECT_BOOTSTRAP_SERVERS sets bootstrap.servers);
// each connector file is a JSON object of settings, a JSON create request
// ({"name","config","initial_state"}) or a .properties file. The connectors
// are created one after the other before the worker reports ready (GET
// /health). Bad input ends the process with a message naming the file,
// line or setting and connect-standalone's status: 2 for the worker (its
// file, a bad or missing setting, an unreachable Kafka), 3 for a connector
// (its file, an unknown class, a missing setting); without a worker file
// the usage, status 1. Once running, bad
// requests are answered over REST and the worker keeps running. SIGINT or
// SIGTERM stops it: tasks drain for task.shutdown.graceful.timeout.ms, then
// every plugin process is killed.
//
//	sluice dev [--demo=false] [--rest 127.0.0.1:8083] [--plugin-path DIR]
//
// starts an embedded Kafka broker (franz-go's kfake, in the same process), a
// standalone worker on it with its REST API on 127.0.0.1:8083 and, unless
// --demo=false, a demo pipeline: the bundled datagen connector writes
// made-up orders to a topic and Kafka's FileStreamSink copies them to a
// file. It prints where to look. No Kafka, Java or config file is needed;
// the bundled plugins are found in bin/plugins next to the binary (make
// build puts them there) or with --plugin-path.
//
// sluice connectors|plugins|validate|loggers ... talk to any worker's REST
// API (host/cli); sluice version prints the version.
package main
