// Package config reads the worker's configuration the way Kafka Connect does:
// Java .properties files under Kafka Connect's property names, overridden by
// environment variables in the Confluent image convention
// (CONNECT_BOOTSTRAP_SERVERS → bootstrap.servers), declared once in a
// pluginsdk/config definition and validated once, with every problem named.
//
// It also reads connector configuration files as connect-standalone accepts
// them: a JSON object of settings, a JSON create request
// ({"name","config","initial_state"}), or a .properties file.
package config
