// Package distributed tests Sluice's distributed mode end to end: several
// `sluice distributed` worker processes in one group on a real Kafka broker
// (one broker shared by the package, kafkatest.Main), driven through their
// REST APIs: work spread and balanced over the workers, requests answered
// alike by every worker and forwarded to the leader, a worker SIGKILLed
// with its tasks moving to the others and a file sink losing nothing, the
// target state surviving a restart of the whole cluster, the internal
// topics holding Kafka Connect's records, a 4th worker joining with only the
// moved tasks stopping and no gap in any task's sequence, and three rounds
// of rolling bounces (clean, then hard) as Kafka's test_bounce, and the
// internal task-configs endpoint refusing unsigned and badly signed
// requests under the sessioned protocol (KIP-507). Two tests stop the
// broker itself, each on a broker of its own (kafkatest.ForTest): the
// workers give their membership up and stop their connector and tasks while
// REST keeps answering, and after the broker's return everything runs again
// with no gap in any task's sequence (Kafka's testBrokerCoordinator); a
// request the worker cannot complete with the broker down answers 500 at
// the request timeout naming what the worker is stuck in, and succeeds once
// the broker is back (the broker-down half of testRequestTimeouts).
//
// Run with `go test -tags integration ./integration/distributed/`; the
// sluice binary is bin/sluice (make build) or $SLUICE_BIN, the bundled
// plugins bin/plugins.
package distributed
