// Package logging holds the worker's named loggers and lets their levels
// change while the worker runs, as Kafka Connect's /admin/loggers endpoints
// (KIP-495) do with log4j.
//
// A Registry hands out one hclog.Logger per dotted name: "sluice",
// "sluice.herder", "sluice.connector.<name>", "sluice.task.<name>-<n>", and
// "root", the ancestor of every name. Names form a hierarchy by their dots: a
// logger without a level of its own takes the level of its nearest ancestor
// that has one, and root always has one. Setting a level on a namespace sets
// it on the namespace and on every known descendant (setting
// "sluice.task" reaches "sluice.task.orders-0"), records when the level
// actually changed (last_modified, in epoch milliseconds), and returns the
// names touched. Loggers created later inherit from the nearest ancestor.
//
// Levels use log4j's spelling, because that is what Kafka Connect clients
// send and expect back: TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF and ALL.
// hclog has no FATAL and no ALL, so FATAL logs at hclog's Error and ALL at
// Trace; the registry still reports the name that was set.
//
// Every logger is its own hclog root (hclog.New) writing to one shared
// output under one shared mutex, so a level change is one atomic store and
// never reaches loggers outside the namespace. Loggers derived with With or
// Named share the level of the logger they came from; use Registry.Logger
// for anything that needs a level of its own. Levels are not persisted: a
// restarted worker starts from its configured levels, as Kafka's does.
package logging
