// Package configprovider resolves ${provider:path:key} variables in worker
// properties and connector configs the way Kafka's config providers and
// ConfigTransformer do, so that secrets live in files, directories or the
// environment and never in the config topic, the offsets file or the REST
// API's answers.
//
// A worker names its providers in config.providers (comma-separated
// aliases); config.providers.<alias>.class names the class, and
// config.providers.<alias>.param.<name>=<value> are its parameters. The
// three classes of Apache Kafka are built in, under their Java names or
// their simple names:
//
//	FileConfigProvider       path: a .properties file; keys: its property names
//	DirectoryConfigProvider  path: a directory; keys: names of regular files
//	                         directly in it; values: their whole content
//	EnvVarConfigProvider     no path; keys: environment variables, limited by
//	                         the allowlist.pattern parameter (a full-match regex)
//
// File and Directory take KIP-993's allowed.paths parameter: absolute paths,
// comma-separated, that must exist when the worker starts; a requested path
// is cleaned (".." removed) and must then lie at or under one of them,
// component by component, both as written and with its symbolic links
// resolved (the allowed paths' links are resolved at start), so a link
// inside an allowed directory cannot lead out of it; the resolved path is
// the one read. Kafka logs a warning and
// resolves nothing for a path outside them; Sluice refuses it with an error
// naming the path, so a connector never starts with a placeholder where a
// secret was meant to be.
//
// Both read regular files only, of at most MaxFileBytes (1 MiB): a FIFO,
// a device or a larger file is refused with an error naming the path (the
// Directory provider skips a key naming something not a regular file, as
// Kafka does), so a read neither blocks nor grows without bound.
//
// Resolution follows ConfigTransformer: a variable is ${provider:path:key}
// or ${provider:key} (the path then empty), matched by Kafka's pattern; each
// provider is asked once per path for all the keys used with it; a variable
// naming a provider that is not configured, or a key the provider does not
// have, is left exactly as written. There is no recursion: a resolved value
// that itself looks like a variable stays as it is. A provider error (an
// unreadable file, a refused path) fails the whole resolution with an error
// naming the config key, the provider and the path, never a value.
//
// An unknown class, or an alias without a class, is an error naming
// config.providers.<alias>.class (Kafka skips an alias without a class; a
// worker whose secrets cannot be resolved should not start).
//
// TTLs (KIP-297, KIP-421): a provider that also implements TTLProvider
// may say, per path, how long its values stay valid. ResolveTTL returns the
// smallest TTL of the paths a config used (Kafka's ConfigTransformer keeps
// one per path; a restart reads them all again, so only the earliest
// matters). Resolve hands it, with the config as submitted, to the
// TTLReporter of its context, if any: a herder puts one in the context of
// its own work and, under config.action.reload=restart (the default),
// restarts the connector when the TTL runs out, so it starts again with
// fresh values; none turns that off. Validation and worker properties are
// resolved without a reporter, so their TTLs are ignored, as in Kafka. The
// built-in providers return no TTL, as Kafka's do not: a changed file or
// variable is read on the connector's next start, nothing watches it.
package configprovider
