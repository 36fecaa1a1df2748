// Package config reads the worker's configuration the way Kafka Connect does:
// Java .properties files under Kafka Connect's property names, overridden by
// environment variables in the Confluent image convention
// (CONNECT_BOOTSTRAP_SERVERS → bootstrap.servers), declared once in a
// pluginsdk/config definition and validated once, with every problem named.
//
// StandaloneDef and DistributedDef declare the worker properties (Kafka's
// StandaloneConfig and DistributedConfig); LoadWorker reads a file, applies
// the environment and validates, returning a Worker whose typed values come
// from the definition and whose Props keep every property given, unknown
// ones included: producer.*, consumer.*, admin.* and the converters'
// prefixed settings are passed on as Kafka passes them. config.providers is
// defined here; host/configprovider resolves ${provider:path:key} variables
// (its LoadWorker reads with ReadWorkerProps, resolves, then validates with
// ParseWorker).
// log.level is Sluice's own (the root log level, log4j names).
//
// It also reads connector configuration files as connect-standalone accepts
// them: a JSON object of settings, a JSON create request
// ({"name","config","initial_state"}), or a .properties file.
package config
