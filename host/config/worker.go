package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/host/convert"
	def "github.com/sluice-io/sluice/pluginsdk/config"
)

// Worker property names, as Kafka Connect spells them.
const (
	BootstrapServers             = "bootstrap.servers"
	ClientID                     = "client.id"
	PluginPath                   = "plugin.path"
	PluginDiscovery              = "plugin.discovery"
	Listeners                    = "listeners"
	AdminListeners               = "admin.listeners"
	RestAdvertisedHostName       = "rest.advertised.host.name"
	RestAdvertisedPort           = "rest.advertised.port"
	RestAdvertisedListener       = "rest.advertised.listener"
	AccessControlAllowOrigin     = "access.control.allow.origin"
	AccessControlAllowMethods    = "access.control.allow.methods"
	ResponseHTTPHeaders          = "response.http.headers.config"
	RestExtensionClasses         = "rest.extension.classes"
	KeyConverter                 = "key.converter"
	ValueConverter               = "value.converter"
	HeaderConverter              = "header.converter"
	OffsetStorageFileFilename    = "offset.storage.file.filename"
	OffsetFlushIntervalMs        = "offset.flush.interval.ms"
	OffsetFlushTimeoutMs         = "offset.flush.timeout.ms"
	TaskShutdownGracefulTimeout  = "task.shutdown.graceful.timeout.ms"
	ClientConfigOverridePolicy   = "connector.client.config.override.policy"
	ConfigProviders              = "config.providers"
	TopicCreationEnable          = "topic.creation.enable"
	TopicTrackingEnable          = "topic.tracking.enable"
	TopicTrackingAllowReset      = "topic.tracking.allow.reset"
	LogLevel                     = "log.level"
	GroupID                      = "group.id"
	ConfigStorageTopic           = "config.storage.topic"
	ConfigStorageReplication     = "config.storage.replication.factor"
	OffsetStorageTopic           = "offset.storage.topic"
	OffsetStoragePartitions      = "offset.storage.partitions"
	OffsetStorageReplication     = "offset.storage.replication.factor"
	StatusStorageTopic           = "status.storage.topic"
	StatusStoragePartitions      = "status.storage.partitions"
	StatusStorageReplication     = "status.storage.replication.factor"
	ScheduledRebalanceMaxDelayMs = "scheduled.rebalance.max.delay.ms"
	SessionTimeoutMs             = "session.timeout.ms"
	HeartbeatIntervalMs          = "heartbeat.interval.ms"
	RebalanceTimeoutMs           = "rebalance.timeout.ms"
	WorkerSyncTimeoutMs          = "worker.sync.timeout.ms"
	WorkerUnsyncBackoffMs        = "worker.unsync.backoff.ms"
	ConnectProtocol              = "connect.protocol"
	ExactlyOnceSourceSupport     = "exactly.once.source.support"
	// TaskSharedMemoryBytes is Sluice's own: the size of the memory region
	// each task shares with its plugin process for record batches.
	TaskSharedMemoryBytes = "sluice.task.shared.memory.bytes"
	// PluginMemoryMaxBytes is Sluice's own: the most private resident
	// memory a plugin process may hold before the worker kills it.
	PluginMemoryMaxBytes = "sluice.plugin.memory.max.bytes"
	// RestRequestTimeoutMs is Sluice's own: how long a REST request may
	// wait for the herder before it answers 500 naming what the worker is
	// busy with. Kafka Connect has the same timeout (90 s) without a
	// property (its tests change it in process).
	RestRequestTimeoutMs = "sluice.rest.request.timeout.ms"
)

// Prefixes of settings passed through to Kafka clients and converters.
const (
	ProducerPrefix = "producer."
	ConsumerPrefix = "consumer."
	AdminPrefix    = "admin."
)

// Groups of the worker definition.
const (
	groupCommon      = "Common"
	groupREST        = "REST"
	groupConverters  = "Converters"
	groupOffsets     = "Offsets"
	groupPlugins     = "Plugins"
	groupDistributed = "Distributed"
)

// logLevels are log4j's level names (host/logging accepts them).
var logLevels = []string{"ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"}

// converterClass refuses a worker's default converter class that does not
// exist when the worker starts, as Kafka's CLASS settings are resolved when
// the worker config is parsed (its message too); a connector that sets its
// own converter would otherwise still start, and every other task fail.
func converterClass(typ string) def.Validator {
	return def.Lambda(func(name string, v any) error {
		s, _ := v.(string)
		if s == "" || convert.Exists(s, typ) {
			return nil // missing: the required check says so
		}
		return def.Invalid(name, v, "Class "+strings.TrimSpace(s)+" could not be found.")
	}, "a "+strings.ReplaceAll(typ, "_", " ")+" class")
}

// baseDef is what every worker reads (Kafka's WorkerConfig).
func baseDef() *def.Def {
	d := def.NewDef()
	d.Define(def.Key{Name: BootstrapServers, Type: def.List, Default: "localhost:9092", Validator: def.NonNullOrEmpty(),
		Importance: def.High, Group: groupCommon, Doc: "Kafka brokers to connect to first, host:port, comma-separated."})
	d.Define(def.Key{Name: ClientID, Type: def.String, Default: "",
		Importance: def.Low, Group: groupCommon, Doc: "Added to the client ids of the worker's Kafka clients."})
	d.Define(def.Key{Name: KeyConverter, Type: def.Class, Required: true, Validator: converterClass(convert.TypeConverter),
		Importance: def.High, Group: groupConverters, Doc: "Default converter of record keys; connectors may set their own. Settings prefixed \"key.converter.\" configure it."})
	d.Define(def.Key{Name: ValueConverter, Type: def.Class, Required: true, Validator: converterClass(convert.TypeConverter),
		Importance: def.High, Group: groupConverters, Doc: "Default converter of record values; connectors may set their own. Settings prefixed \"value.converter.\" configure it."})
	d.Define(def.Key{Name: HeaderConverter, Type: def.Class, Default: "org.apache.kafka.connect.storage.SimpleHeaderConverter", Validator: converterClass(convert.TypeHeaderConverter),
		Importance: def.Low, Group: groupConverters, Doc: "Default converter of header values. Settings prefixed \"header.converter.\" configure it."})
	d.Define(def.Key{Name: OffsetFlushIntervalMs, Type: def.Long, Default: int64(60000), Validator: def.AtLeast(0),
		Importance: def.Low, Group: groupOffsets, Doc: "How often source offsets are committed, and sink offsets too, in milliseconds."})
	d.Define(def.Key{Name: OffsetFlushTimeoutMs, Type: def.Long, Default: int64(5000), Validator: def.AtLeast(0),
		Importance: def.Low, Group: groupOffsets, Doc: "How long an offset commit may take, in milliseconds, before it is abandoned until the next one."})
	d.Define(def.Key{Name: TaskShutdownGracefulTimeout, Type: def.Long, Default: int64(5000), Validator: def.AtLeast(0),
		Importance: def.Low, Group: groupCommon, Doc: "How long the tasks being stopped together may drain, in milliseconds, before their plugins are killed."})
	d.Define(def.Key{Name: TaskSharedMemoryBytes, Type: def.Long, Default: int64(32 << 20), Validator: def.AtLeast(0),
		Importance: def.Low, Group: groupCommon, Doc: "Size in bytes of the memory each task shares with its plugin process: record batches up to this size pass through it rather than through the gRPC connection (only pages a batch touches are used). 0: every batch goes through gRPC. Plugins that do not support it get batches through gRPC anyway."})
	d.Define(def.Key{Name: PluginMemoryMaxBytes, Type: def.Long, Default: int64(0), Validator: def.AtLeast(0),
		Importance: def.Medium, Group: groupPlugins, Doc: "The most private resident memory (heap and stacks, in bytes) a plugin process may hold: the worker checks every second and kills a plugin above it, and its connector or task fails with a message naming this setting, so a leaking connector cannot exhaust the machine's memory. Go plugins also get GOMEMLIMIT at nine tenths of it. 0: no limit. Whatever the setting, plugin processes are the kernel OOM killer's preferred victims (oom_score_adj 500), ahead of the worker."})
	d.Define(def.Key{Name: PluginPath, Type: def.List,
		Importance: def.Low, Group: groupPlugins, Doc: "Directories holding plugin binaries, comma-separated. A plugins directory next to the sluice binary (bin/plugins) is searched too when it exists."})
	d.Define(def.Key{Name: PluginDiscovery, Type: def.String, Default: "hybrid_warn", Validator: def.CaseInsensitiveValidString("only_scan", "hybrid_warn", "hybrid_fail", "service_load"),
		Importance: def.Low, Group: groupPlugins, Doc: "Accepted for compatibility and ignored: Sluice always scans plugin.path."})
	d.Define(def.Key{Name: Listeners, Type: def.List, Default: "http://:8083", Validator: def.NonNullOrEmpty(),
		Importance: def.Low, Group: groupREST, Doc: "REST API listeners, protocol://host:port with protocol http or https, comma-separated."})
	d.Define(def.Key{Name: AdminListeners, Type: def.List,
		Importance: def.Low, Group: groupREST, Doc: "Listeners of the admin endpoints (/admin/loggers). Unset: the regular listeners; empty: the endpoints are off."})
	d.Define(def.Key{Name: RestAdvertisedHostName, Type: def.String,
		Importance: def.Low, Group: groupREST, Doc: "Host name other workers and statuses use for this worker; unset: the listener's host, else this machine's name."})
	d.Define(def.Key{Name: RestAdvertisedPort, Type: def.Int, Validator: def.Lambda(func(name string, v any) error {
		if n, ok := v.(int32); ok && (n < 0 || n > 65535) {
			return def.Invalid(name, v, "Value must be a port number")
		}
		return nil
	}, "[0,...,65535]"),
		Importance: def.Low, Group: groupREST, Doc: "Port other workers and statuses use for this worker; unset: the listener's port."})
	d.Define(def.Key{Name: RestRequestTimeoutMs, Type: def.Long, Default: int64(90000), Validator: def.AtLeast(1),
		Importance: def.Low, Group: groupREST, Doc: "How long a REST request may wait for the worker, in milliseconds, before it answers 500 with what the worker is busy with (Kafka Connect's fixed 90 s)."})
	d.Define(def.Key{Name: RestAdvertisedListener, Type: def.String, Validator: def.Lambda(func(name string, v any) error {
		if s, ok := v.(string); ok && s != "" && !strings.EqualFold(s, "http") && !strings.EqualFold(s, "https") {
			return def.Invalid(name, v, "String must be one of: http, https")
		}
		return nil
	}, "[http, https]"),
		Importance: def.Low, Group: groupREST, Doc: "Which listener's protocol is advertised: http or https."})
	d.Define(def.Key{Name: AccessControlAllowOrigin, Type: def.String, Default: "",
		Importance: def.Low, Group: groupREST, Doc: "Origins allowed to call the REST API from a browser (CORS), comma-separated; \"*\" for any; empty disables CORS."})
	d.Define(def.Key{Name: AccessControlAllowMethods, Type: def.String, Default: "",
		Importance: def.Low, Group: groupREST, Doc: "Methods allowed for cross-origin requests, comma-separated; empty: GET, POST, HEAD."})
	d.Define(def.Key{Name: ResponseHTTPHeaders, Type: def.String, Default: "", Validator: def.Lambda(func(name string, v any) error {
		s, _ := v.(string)
		if _, err := ParseResponseHeaders(s); err != nil {
			return def.Invalid(name, s, err.Error())
		}
		return nil
	}, "Comma-separated header rules, where each header rule is of the form '[action] [header name]:[header value]' and optionally surrounded by double quotes if any part of a header rule contains a comma"),
		Importance: def.Low, Group: groupREST, Doc: "Headers added to every REST response (KIP-577): comma-separated rules '[action] [header name]:[header value]', action set, add, setDate or addDate (the value of the date actions: milliseconds from now), a rule in double quotes when it holds a comma; e.g. 'set X-Frame-Options: DENY, \"add Cache-Control: no-cache, no-store, must-revalidate\"'."})
	d.Define(def.Key{Name: RestExtensionClasses, Type: def.List, Default: "",
		Importance: def.Low, Group: groupREST, Doc: "Java REST extensions cannot run in Sluice; accepted so existing files load, ignored with a warning."})
	d.Define(def.Key{Name: ClientConfigOverridePolicy, Type: def.String, Default: "All", Validator: def.ValidString("All", "None", "Principal"),
		Importance: def.Medium, Group: groupCommon, Doc: "Which producer.override.*, consumer.override.* and admin.override.* settings connectors may use: All, None, or Principal (only sasl.jaas.config, sasl.mechanism, security.protocol); Kafka's class names of these policies are accepted too."})
	d.Define(def.Key{Name: ConfigProviders, Type: def.List, Default: "",
		Importance: def.Low, Group: groupCommon, Doc: "Aliases of config providers, comma-separated; config.providers.<alias>.class names each (FileConfigProvider, DirectoryConfigProvider, EnvVarConfigProvider) and config.providers.<alias>.param.<name> sets its parameters. ${alias:path:key} and ${alias:key} in worker properties are resolved at start, in connector configs when connectors and tasks start and when configs are validated; stored configs and REST answers keep them as written."})
	d.Define(def.Key{Name: TopicCreationEnable, Type: def.Boolean, Default: true,
		Importance: def.Low, Group: groupCommon, Doc: "Let source connectors create their topics with topic.creation.* settings."})
	d.Define(def.Key{Name: TopicTrackingEnable, Type: def.Boolean, Default: true,
		Importance: def.Low, Group: groupCommon, Doc: "Track the topics each connector uses (GET /connectors/{name}/topics)."})
	d.Define(def.Key{Name: TopicTrackingAllowReset, Type: def.Boolean, Default: true,
		Importance: def.Low, Group: groupCommon, Doc: "Allow PUT /connectors/{name}/topics/reset."})
	d.Define(def.Key{Name: LogLevel, Type: def.String, Default: "INFO", Validator: def.CaseInsensitiveValidString(logLevels...),
		Importance: def.Low, Group: groupCommon, Doc: "Sluice's own: the worker's root log level (log4j names); plugins log at the matching level."})
	return d
}

// StandaloneDef is the definition of a standalone worker's properties
// (Kafka's StandaloneConfig).
func StandaloneDef() *def.Def {
	d := baseDef()
	d.Define(def.Key{Name: OffsetStorageFileFilename, Type: def.String, Required: true, Validator: def.NonEmptyString(),
		Importance: def.High, Group: groupOffsets, Doc: "File holding source connectors' offsets; rewritten atomically at every flush."})
	return d
}

// DistributedDef is the definition of a distributed worker's properties
// (Kafka's DistributedConfig).
func DistributedDef() *def.Def {
	d := baseDef()
	d.Define(def.Key{Name: GroupID, Type: def.String, Required: true, Validator: def.NonEmptyString(),
		Importance: def.High, Group: groupDistributed, Doc: "Id of the Connect cluster this worker belongs to: its group on Kafka's group coordinator."})
	for _, t := range []struct {
		topic, parts, rf string
		partsDefault     int
		what             string
	}{
		{ConfigStorageTopic, "", ConfigStorageReplication, 0, "connector configurations"},
		{OffsetStorageTopic, OffsetStoragePartitions, OffsetStorageReplication, 25, "source offsets"},
		{StatusStorageTopic, StatusStoragePartitions, StatusStorageReplication, 5, "connector and task statuses"},
	} {
		d.Define(def.Key{Name: t.topic, Type: def.String, Required: true, Validator: def.NonEmptyString(),
			Importance: def.High, Group: groupDistributed, Doc: "Compacted topic holding " + t.what + "."})
		if t.parts != "" {
			d.Define(def.Key{Name: t.parts, Type: def.Int, Default: t.partsDefault, Validator: positiveOrMinusOne(),
				Importance: def.Low, Group: groupDistributed, Doc: "Partitions of " + t.topic + " when the worker creates it; -1: the broker's default."})
		}
		d.Define(def.Key{Name: t.rf, Type: def.Short, Default: 3, Validator: positiveOrMinusOne(),
			Importance: def.Low, Group: groupDistributed, Doc: "Replication factor of " + t.topic + " when the worker creates it; -1: the broker's default."})
	}
	d.Define(def.Key{Name: ScheduledRebalanceMaxDelayMs, Type: def.Int, Default: 300000, Validator: def.AtLeast(0),
		Importance: def.Low, Group: groupDistributed, Doc: "How long the leader waits for a departed worker to return before moving its work, in milliseconds."})
	d.Define(def.Key{Name: SessionTimeoutMs, Type: def.Int, Default: 10000,
		Importance: def.High, Group: groupDistributed, Doc: "Group session timeout in milliseconds."})
	d.Define(def.Key{Name: HeartbeatIntervalMs, Type: def.Int, Default: 3000,
		Importance: def.High, Group: groupDistributed, Doc: "Group heartbeat interval in milliseconds."})
	d.Define(def.Key{Name: RebalanceTimeoutMs, Type: def.Int, Default: 60000,
		Importance: def.High, Group: groupDistributed, Doc: "How long a worker may take to rejoin the group during a rebalance, in milliseconds."})
	d.Define(def.Key{Name: WorkerSyncTimeoutMs, Type: def.Int, Default: 3000,
		Importance: def.Medium, Group: groupDistributed, Doc: "How long a worker out of sync with the config topic waits to catch up, in milliseconds."})
	d.Define(def.Key{Name: WorkerUnsyncBackoffMs, Type: def.Int, Default: 300000,
		Importance: def.Medium, Group: groupDistributed, Doc: "The longest a worker that could not catch up with the config topic several rounds in a row waits before rejoining (one second after the second such round, doubling up to this), in milliseconds."})
	d.Define(def.Key{Name: ConnectProtocol, Type: def.String, Default: "sessioned", Validator: def.CaseInsensitiveValidString("eager", "compatible", "sessioned"),
		Importance: def.Low, Group: groupDistributed, Doc: "Group sub-protocol: eager, compatible or sessioned."})
	d.Define(def.Key{Name: ExactlyOnceSourceSupport, Type: def.String, Default: "disabled", Validator: def.CaseInsensitiveValidString("disabled", "preparing", "enabled"),
		Importance: def.High, Group: groupDistributed, Doc: "Exactly-once support for source connectors (KIP-618): disabled, preparing or enabled."})
	defineInterWorker(d)
	return d
}

func positiveOrMinusOne() def.Validator {
	return def.Lambda(func(name string, v any) error {
		var n int64
		switch x := v.(type) {
		case int32:
			n = int64(x)
		case int16:
			n = int64(x)
		default:
			return nil
		}
		if n < 1 && n != -1 {
			return def.Invalid(name, v, "Value must be a positive number, or -1 for the broker's default")
		}
		return nil
	}, "[1,...] or -1")
}

// Worker is a worker's configuration, validated once.
type Worker struct {
	// Values holds the typed value of every defined property.
	*def.Values
	// Props are every property given (file, then environment), unknown
	// ones included: Kafka passes unknown properties on to clients.
	Props map[string]string
	// Standalone is true for a standalone worker's configuration.
	Standalone bool
}

// LoadWorker reads a worker properties file, applies the environment
// overrides (CONNECT_* in environ, Confluent's convention) on top and
// validates the result. Every problem is reported at once, each naming
// its property.
//
// It does not resolve ${provider:path:key} variables: host/configprovider's
// LoadWorker does, between reading and validating (this package cannot
// import it, since the file provider reads properties with this package).
func LoadWorker(path string, environ []string, standalone bool) (*Worker, error) {
	props, err := ReadWorkerProps(path, environ)
	if err != nil {
		return nil, err
	}
	w, err := ParseWorker(props, standalone)
	if err != nil {
		return nil, fmt.Errorf("worker config %s: %w", path, err)
	}
	return w, nil
}

// ReadWorkerProps reads a worker properties file and applies the
// environment overrides on top, without validating.
func ReadWorkerProps(path string, environ []string) (map[string]string, error) {
	props, err := ReadPropertiesFile(path)
	if err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	maps.Copy(props, EnvOverrides(environ, EnvPrefix))
	return props, nil
}

// ParseWorker validates worker properties.
func ParseWorker(props map[string]string, standalone bool) (*Worker, error) {
	d := DistributedDef()
	if standalone {
		d = StandaloneDef()
	}
	vals, err := d.Parse(policyByAlias(props))
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if vals != nil {
		for _, l := range vals.List(Listeners) {
			if err := checkListener(l); err != nil {
				errs = append(errs, fmt.Errorf("Invalid value %s for configuration %s: %w", l, Listeners, err))
			}
		}
		for _, l := range vals.List(AdminListeners) {
			if err := checkListener(l); err != nil {
				errs = append(errs, fmt.Errorf("Invalid value %s for configuration %s: %w", l, AdminListeners, err))
			}
		}
		if !standalone {
			// vals is set only when every property is valid on its own,
			// so no problem is reported twice.
			errs = append(errs, (&Worker{Values: vals}).InterWorker().crossCheck())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Worker{Values: vals, Props: maps.Clone(props), Standalone: standalone}, nil
}

// policyPackage holds Kafka's override policy classes, named
// <Alias>ConnectorClientConfigOverridePolicy.
const (
	policyPackage = "org.apache.kafka.connect.connector.policy."
	policySuffix  = "ConnectorClientConfigOverridePolicy"
)

// policyByAlias returns props with connector.client.config.override.policy
// given as a class (full or simple name), as Kafka allows, replaced by its
// alias (All, None, Principal), the form the worker reads.
func policyByAlias(props map[string]string) map[string]string {
	v, ok := props[ClientConfigOverridePolicy]
	if !ok {
		return props
	}
	name := strings.TrimSpace(v)
	name = strings.TrimPrefix(name, policyPackage)
	alias, ok := strings.CutSuffix(name, policySuffix)
	if !ok || strings.Contains(alias, ".") {
		return props
	}
	out := maps.Clone(props)
	out[ClientConfigOverridePolicy] = alias
	return out
}

// checkListener accepts protocol://host:port with protocol http or https.
func checkListener(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if p := strings.ToLower(u.Scheme); p != "http" && p != "https" {
		return errors.New("protocol must be http or https")
	}
	_, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return fmt.Errorf("must be protocol://host:port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("invalid port %q", port)
	}
	return nil
}

// Prefixed returns the properties starting with prefix, prefix removed
// (e.g. "producer." settings for the connectors' producers).
func (w *Worker) Prefixed(prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range w.Props {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			out[rest] = v
		}
	}
	return out
}

// Millis returns a LONG or INT property holding milliseconds as a duration.
func (w *Worker) Millis(name string) time.Duration {
	switch v := w.Get(name).(type) {
	case int64:
		return time.Duration(v) * time.Millisecond
	case int32:
		return time.Duration(v) * time.Millisecond
	}
	return 0
}

// WorkerID is host:port of the URL this worker advertises (Kafka's worker
// id, shown in statuses): rest.advertised.host.name and
// rest.advertised.port when set, else the host and port of the first
// listener of the advertised protocol (bound, the port known once the REST
// server listens: pass its address as bound, or "" before), else this
// machine's name.
func (w *Worker) WorkerID(bound string) string {
	host := w.String(RestAdvertisedHostName)
	port := ""
	if !w.IsNull(RestAdvertisedPort) {
		port = strconv.Itoa(w.Int(RestAdvertisedPort))
	}
	lhost, lport := "", ""
	want := strings.ToLower(w.String(RestAdvertisedListener))
	for _, l := range w.List(Listeners) {
		u, err := url.Parse(l)
		if err != nil || (want != "" && strings.ToLower(u.Scheme) != want) {
			continue
		}
		lhost, lport, _ = net.SplitHostPort(u.Host)
		break
	}
	if bound != "" {
		if h, p, err := net.SplitHostPort(bound); err == nil {
			lport = p
			if lhost == "" && h != "" && !net.ParseIP(h).IsUnspecified() {
				lhost = h
			}
		}
	}
	if host == "" {
		host = lhost
	}
	if host == "" {
		host, _ = os.Hostname()
	}
	if host == "" {
		host = "localhost"
	}
	if port == "" {
		port = lport
	}
	return net.JoinHostPort(host, port)
}
