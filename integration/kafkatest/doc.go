// Package kafkatest runs real Apache Kafka (KRaft, combined broker and
// controller nodes) for Sluice's integration tests and benchmarks.
//
// # Provisioning
//
// EnsureKafka fetches org.apache.kafka:kafka_2.13 (KafkaVersion) and its
// runtime dependencies with Maven into <cache>/kafka-<version>/libs, where
// <cache> is $SLUICE_CACHE or ~/.cache/sluice. It writes a one-dependency
// pom there and runs `mvn dependency:copy-dependencies`; a file lock keeps
// concurrent test binaries from downloading at the same time, and a marker
// file makes an interrupted download start over. Needs java (17+, from
// $JAVA_HOME or PATH) and mvn; nothing is written into the repository.
//
// # Clusters
//
//	c, err := kafkatest.Start(ctx, kafkatest.Options{Nodes: 3})
//	defer c.Close()
//	cl, _ := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
//
// Start formats KRaft storage with kafka.tools.StorageTool (static quorum:
// controller.quorum.voters lists every node) and starts kafka.Kafka per node
// on free 127.0.0.1 ports, then waits until every node answers a Metadata
// request that lists it as a registered broker. Each node has its own
// directory (server.properties, data/, kafka.log holding the JVM's output);
// start-up errors include the tail of kafka.log. DefaultBrokerConfig holds
// the test settings (replication factors of internal topics = node count,
// no initial rebalance delay, short broker session timeout);
// Options.BrokerConfig overrides them.
//
// Lifecycle: Stop (SIGTERM, controlled shutdown; SIGKILL when the context
// ends), Kill (SIGKILL, a crash), Start (restart every stopped node on the
// same data and ports), KillNode, StopNode and StartNode for one node, and
// Close (kill and, for a cluster in its own temp dir, delete). Every JVM is
// started with Pdeathsig=SIGKILL, so brokers die with the test process even
// if it is killed.
//
// # In tests
//
// ForTest(t, opts) starts a cluster in t.TempDir() and kills it at cleanup,
// logging node logs if the test failed. Use it when a test stops or kills
// brokers. Tests that only need a broker share one per package:
//
//	func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m, kafkatest.Options{})) }
//
//	func TestX(t *testing.T) { c := kafkatest.Shared(t); ... }
//
// Shared starts the cluster on first use; with SLUICE_KAFKA_BOOTSTRAP set it
// returns that external cluster instead (its lifecycle methods then return
// ErrExternal). Test files that start Kafka carry the `integration` build
// tag; this package itself builds without Java.
package kafkatest
