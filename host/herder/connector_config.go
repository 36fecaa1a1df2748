package herder

import (
	"fmt"
	"strings"

	"github.com/sluice-io/sluice/host/runtime"
	"github.com/sluice-io/sluice/pluginsdk/config"
)

// Names of the settings Kafka Connect adds to every connector (the
// framework's ConnectorConfig, SourceConnectorConfig, SinkConnectorConfig).
const (
	KeyName               = "name"
	KeyConnectorClass     = "connector.class"
	KeyTasksMax           = "tasks.max"
	KeyTasksMaxEnforce    = "tasks.max.enforce"
	KeyKeyConverter       = "key.converter"
	KeyValueConverter     = "value.converter"
	KeyHeaderConverter    = "header.converter"
	KeyTransforms         = "transforms"
	KeyPredicates         = "predicates"
	KeyConfigReloadAction = "config.action.reload"

	KeyErrorsRetryTimeout          = "errors.retry.timeout"
	KeyErrorsRetryDelayMax         = "errors.retry.delay.max.ms"
	KeyErrorsTolerance             = "errors.tolerance"
	KeyErrorsLogEnable             = "errors.log.enable"
	KeyErrorsLogIncludeMessages    = "errors.log.include.messages"
	KeyDLQTopicName                = "errors.deadletterqueue.topic.name"
	KeyDLQTopicReplicationFactor   = "errors.deadletterqueue.topic.replication.factor"
	KeyDLQContextHeadersEnable     = "errors.deadletterqueue.context.headers.enable"
	KeyTopics                      = "topics"
	KeyTopicsRegex                 = "topics.regex"
	KeyTopicCreationGroups         = "topic.creation.groups"
	KeyExactlyOnceSupport          = "exactly.once.support"
	KeyTransactionBoundary         = "transaction.boundary"
	KeyTransactionBoundaryInterval = "transaction.boundary.interval.ms"
	KeyOffsetsStorageTopic         = "offsets.storage.topic"

	// Sluice's automatic restart of failed tasks (Kafka Connect has none).
	KeyTaskRestartEnable         = "sluice.task.restart.enable"
	KeyTaskRestartMaxAttempts    = "sluice.task.restart.max.attempts"
	KeyTaskRestartBackoffInitial = "sluice.task.restart.backoff.initial.ms"
	KeyTaskRestartBackoffMax     = "sluice.task.restart.backoff.max.ms"

	// Sluice's bounds on one sink Put, which may gather several consumer
	// polls (Kafka Connect puts one poll at a time).
	KeySinkBatchMaxRecords = "sluice.sink.batch.max.records"
	KeySinkBatchMaxBytes   = "sluice.sink.batch.max.bytes"

	// KeyTaskClass is added by the worker to every task config.
	KeyTaskClass = "task.class"
)

// Values of config.action.reload.
const (
	// ReloadNone leaves a connector alone when its provider values expire.
	ReloadNone = "none"
	// ReloadRestart (the default) restarts it then.
	ReloadRestart = "restart"
)

// Groups of the framework settings, as the validate answer lists them.
const (
	GroupCommon        = "Common"
	GroupTransforms    = "Transforms"
	GroupPredicates    = "Predicates"
	GroupErrors        = "Error Handling"
	GroupTopicCreation = "Topic Creation"
	GroupExactlyOnce   = "Exactly Once Support"
	GroupOffsetsTopic  = "offsets.topic"
)

// Client override prefixes (KIP-458) and the policies that govern them.
const (
	ProducerOverridePrefix = "producer.override."
	ConsumerOverridePrefix = "consumer.override."
	AdminOverridePrefix    = "admin.override."

	PolicyAll       = "All"
	PolicyNone      = "None"
	PolicyPrincipal = "Principal"
)

// uniqueAliases rejects a list naming an alias twice.
func uniqueAliases(kind string) config.Validator {
	return config.Lambda(func(name string, v any) error {
		l, _ := v.([]string)
		seen := map[string]bool{}
		for _, a := range l {
			if seen[a] {
				return config.Invalid(name, v, "Duplicate alias provided.")
			}
			seen[a] = true
		}
		return nil
	}, "unique "+kind+" aliases")
}

// commonDef is the framework part of every connector's definition.
func commonDef() *config.Def {
	d := config.NewDef()
	order := 0
	next := func() int { order++; return order }
	d.Define(config.Key{Name: KeyName, Type: config.String, Required: true, Validator: config.NonEmptyStringWithoutControlChars(),
		Importance: config.High, Group: GroupCommon, OrderInGroup: next(), Width: config.WidthMedium, DisplayName: "Connector name",
		Doc: "Unique name of the connector on this Connect cluster."})
	d.Define(config.Key{Name: KeyConnectorClass, Type: config.String, Required: true,
		Importance: config.High, Group: GroupCommon, OrderInGroup: next(), Width: config.WidthLong, DisplayName: "Connector class",
		Doc: "Connector class to run: its full name, its simple name, the simple name without the \"Connector\" suffix, or an alias the plugin declares."})
	d.Define(config.Key{Name: KeyTasksMax, Type: config.Int, Default: 1, Validator: config.AtLeast(1),
		Importance: config.High, Group: GroupCommon, OrderInGroup: next(), Width: config.WidthShort, DisplayName: "Tasks max",
		Doc: "Upper bound on the number of tasks the connector may split its work into."})
	d.Define(config.Key{Name: KeyTasksMaxEnforce, Type: config.Boolean, Default: true,
		Importance: config.Low, Group: GroupCommon, OrderInGroup: next(), Width: config.WidthShort, DisplayName: "Enforce tasks max",
		Doc: "Deprecated. When true, a connector that generates more task configurations than tasks.max fails; when false, the extra tasks run."})
	for _, c := range []struct{ key, display, what string }{
		{KeyKeyConverter, "Key converter class", "record keys"},
		{KeyValueConverter, "Value converter class", "record values"},
		{KeyHeaderConverter, "Header converter class", "header values"},
	} {
		d.Define(config.Key{Name: c.key, Type: config.Class,
			Importance: config.Low, Group: GroupCommon, OrderInGroup: next(), Width: config.WidthShort, DisplayName: c.display,
			Doc: fmt.Sprintf("Converter between Connect's data model and the bytes of %s in Kafka. Unset: the worker's %s. Settings prefixed \"%s.\" configure it.", c.what, c.key, c.key)})
	}
	d.Define(config.Key{Name: KeyTransforms, Type: config.List, Default: []string{}, Validator: uniqueAliases("transformation"),
		Importance: config.Low, Group: GroupTransforms, OrderInGroup: next(), Width: config.WidthLong, DisplayName: "Transforms",
		Doc: "Aliases of the single message transforms applied to records, in order; each is configured with transforms.<alias>.type and further transforms.<alias>. settings."})
	d.Define(config.Key{Name: KeyPredicates, Type: config.List, Default: []string{}, Validator: uniqueAliases("predicate"),
		Importance: config.Low, Group: GroupPredicates, OrderInGroup: next(), Width: config.WidthLong, DisplayName: "Predicates",
		Doc: "Aliases of the predicates transforms may be made conditional on; each is configured with predicates.<alias>.type and further predicates.<alias>. settings."})
	d.Define(config.Key{Name: KeyConfigReloadAction, Type: config.String, Default: ReloadRestart, Validator: config.ValidString(ReloadNone, ReloadRestart),
		Importance: config.Low, Group: GroupCommon, OrderInGroup: next(), Width: config.WidthMedium, DisplayName: "Reload Action",
		Doc: "What the worker does when values from config providers expire (a provider gave them a TTL): 'restart' restarts the connector and its tasks when the TTL runs out, so they start with values read anew; 'none' does nothing. Values are always read again when a connector or task starts."})

	eo := 0
	enext := func() int { eo++; return eo }
	d.Define(config.Key{Name: KeyErrorsRetryTimeout, Type: config.Long, Default: int64(0),
		Importance: config.Medium, Group: GroupErrors, OrderInGroup: enext(), Width: config.WidthMedium, DisplayName: "Retry Timeout for Errors",
		Doc: "Total time in milliseconds a failed operation is retried for; 0 retries nothing, -1 retries forever."})
	d.Define(config.Key{Name: KeyErrorsRetryDelayMax, Type: config.Long, Default: int64(60000),
		Importance: config.Medium, Group: GroupErrors, OrderInGroup: enext(), Width: config.WidthMedium, DisplayName: "Maximum Delay Between Retries for Errors",
		Doc: "Upper bound in milliseconds on the wait between two retries of a failed operation."})
	d.Define(config.Key{Name: KeyErrorsTolerance, Type: config.String, Default: "none", Validator: config.ValidString("none", "all"),
		Importance: config.Medium, Group: GroupErrors, OrderInGroup: enext(), Width: config.WidthShort, DisplayName: "Error Tolerance",
		Doc: "none: the first error fails the task. all: records that fail are skipped and the task goes on."})
	d.Define(config.Key{Name: KeyErrorsLogEnable, Type: config.Boolean, Default: false,
		Importance: config.Medium, Group: GroupErrors, OrderInGroup: enext(), Width: config.WidthShort, DisplayName: "Log Errors",
		Doc: "Log every failed operation, and every record skipped because of it, at ERROR."})
	d.Define(config.Key{Name: KeyErrorsLogIncludeMessages, Type: config.Boolean, Default: false,
		Importance: config.Medium, Group: GroupErrors, OrderInGroup: enext(), Width: config.WidthShort, DisplayName: "Log Error Details",
		Doc: "Include the failed record (coordinates and content) in those log lines."})
	eo = 8 // after the dead letter queue settings of sinks and sources
	restartDefs(d, enext)
	return d
}

// restartDefs declares Sluice's automatic task restart settings, in the
// Error Handling group after Kafka's.
func restartDefs(d *config.Def, next func() int) {
	d.Define(config.Key{Name: KeyTaskRestartEnable, Type: config.Boolean, Default: false,
		Importance: config.Low, Group: GroupErrors, OrderInGroup: next(), Width: config.WidthShort, DisplayName: "Restart Failed Tasks",
		Doc: "Sluice extension. Restart a task that failed, automatically, with exponential backoff. Off by default, as Kafka Connect has no such thing."})
	d.Define(config.Key{Name: KeyTaskRestartMaxAttempts, Type: config.Int, Default: DefaultTaskRestartMaxAttempts, Validator: config.AtLeast(-1),
		Importance: config.Low, Group: GroupErrors, OrderInGroup: next(), Width: config.WidthShort, DisplayName: "Task Restart Attempts",
		Doc: "Sluice extension. Automatic restarts of a task in a row before it is left FAILED; -1: no limit. A task that ran for at least " + KeyTaskRestartBackoffMax + " before failing starts counting afresh."})
	d.Define(config.Key{Name: KeyTaskRestartBackoffInitial, Type: config.Long, Default: DefaultTaskRestartBackoffInitial.Milliseconds(), Validator: config.AtLeast(int64(0)),
		Importance: config.Low, Group: GroupErrors, OrderInGroup: next(), Width: config.WidthShort, DisplayName: "Task Restart Initial Backoff",
		Doc: "Sluice extension. Wait in milliseconds before the first automatic restart of a failed task; it doubles for each restart in a row."})
	d.Define(config.Key{Name: KeyTaskRestartBackoffMax, Type: config.Long, Default: DefaultTaskRestartBackoffMax.Milliseconds(), Validator: config.AtLeast(int64(0)),
		Importance: config.Low, Group: GroupErrors, OrderInGroup: next(), Width: config.WidthShort, DisplayName: "Task Restart Maximum Backoff",
		Doc: "Sluice extension. Upper bound in milliseconds on the wait before an automatic restart."})
}

// dlqDefs declares the dead letter queue settings: Kafka's for sinks, and
// Sluice's extension for sources.
func dlqDefs(d *config.Def, sink bool) {
	what := "Topic that receives the records the connector failed to process (dead letter queue); empty for none."
	if !sink {
		what = "Sluice extension. Topic that receives the records that failed transforms, conversion or the write to Kafka (dead letter queue); empty for none."
	}
	d.Define(config.Key{Name: KeyDLQTopicName, Type: config.String, Default: "",
		Importance: config.Medium, Group: GroupErrors, OrderInGroup: 6, Width: config.WidthMedium, DisplayName: "Dead Letter Queue Topic Name",
		Doc: what})
	d.Define(config.Key{Name: KeyDLQTopicReplicationFactor, Type: config.Short, Default: 3,
		Validator: config.Lambda(func(name string, v any) error {
			if n, ok := v.(int16); ok && (n == 0 || n < -1) {
				return config.Invalid(name, v, "Replication factor must be positive or -1 to use the broker's default")
			}
			return nil
		}, "[1,...] or -1"),
		Importance: config.Medium, Group: GroupErrors, OrderInGroup: 7, Width: config.WidthMedium, DisplayName: "Dead Letter Queue Topic Replication Factor",
		Doc: "Replication factor of the dead letter queue topic when the worker creates it; -1 for the broker's default."})
	d.Define(config.Key{Name: KeyDLQContextHeadersEnable, Type: config.Boolean, Default: false,
		Importance: config.Medium, Group: GroupErrors, OrderInGroup: 8, Width: config.WidthMedium, DisplayName: "Enable Error Context Headers",
		Doc: "Add __connect.errors.* headers describing the failure to dead letter queue records."})
}

// sinkDef is the framework definition of sink connectors.
func sinkDef() *config.Def {
	d := commonDef()
	d.Define(config.Key{Name: KeyTopics, Type: config.List, Default: "",
		Importance: config.High, Group: GroupCommon, OrderInGroup: 4, Width: config.WidthLong, DisplayName: "Topics",
		Doc: "Topics to consume, comma-separated. Set this or topics.regex, not both."})
	d.Define(config.Key{Name: KeyTopicsRegex, Type: config.String, Default: "", Validator: config.ValidRegex(),
		Importance: config.High, Group: GroupCommon, OrderInGroup: 4, Width: config.WidthLong, DisplayName: "Topics regex",
		Doc: "Regular expression matching the topics to consume. Set this or topics, not both."})
	// The defaults are the runtime's, declared there once.
	d.Define(config.Key{Name: KeySinkBatchMaxRecords, Type: config.Int, Default: runtime.DefaultSinkMaxBatchRecords, Validator: config.AtLeast(1),
		Importance: config.Low, Group: GroupCommon, OrderInGroup: 5, Width: config.WidthShort, DisplayName: "Sink Batch Max Records",
		Doc: "Sluice extension. Most records one put carries: the worker keeps taking what the consumer has already fetched, a consumer max.poll.records at a time, up to this many records or " + KeySinkBatchMaxBytes + ". Unset with consumer max.poll.records set: that many, one poll per put, as Kafka Connect does; never fewer than max.poll.records."})
	d.Define(config.Key{Name: KeySinkBatchMaxBytes, Type: config.Long, Default: int64(runtime.DefaultSinkMaxBatchBytes), Validator: config.AtLeast(int64(1)),
		Importance: config.Low, Group: GroupCommon, OrderInGroup: 6, Width: config.WidthShort, DisplayName: "Sink Batch Max Bytes",
		Doc: "Sluice extension. Size in bytes (keys, values and headers as consumed) past which a put takes no further poll."})
	dlqDefs(d, true)
	return d
}

// sourceDef is the framework definition of source connectors.
func sourceDef() *config.Def {
	d := commonDef()
	d.Define(config.Key{Name: KeyTopicCreationGroups, Type: config.List, Default: []string{}, Validator: uniqueAliases("topic creation group"),
		Importance: config.Low, Group: GroupTopicCreation, OrderInGroup: 1, Width: config.WidthLong, DisplayName: "Topic Creation Groups",
		Doc: "Groups of topic.creation.<group>. settings for the topics this connector creates, besides the default group."})
	d.Define(config.Key{Name: KeyExactlyOnceSupport, Type: config.String, Default: "requested", Validator: config.CaseInsensitiveValidString("requested", "required"),
		Importance: config.Medium, Group: GroupExactlyOnce, OrderInGroup: 1, Width: config.WidthShort, DisplayName: "Exactly once support",
		Doc: "required: refuse to run unless the connector declares exactly-once support. requested: run either way."})
	d.Define(config.Key{Name: KeyTransactionBoundary, Type: config.String, Default: "poll", Validator: config.CaseInsensitiveValidString("poll", "interval", "connector"),
		Importance: config.Medium, Group: GroupExactlyOnce, OrderInGroup: 2, Width: config.WidthShort, DisplayName: "Transaction Boundary",
		Doc: "With exactly-once source support, where transactions end: after every poll, every transaction.boundary.interval.ms, or where the connector says."})
	d.Define(config.Key{Name: KeyTransactionBoundaryInterval, Type: config.Long,
		Validator: config.Lambda(func(name string, v any) error {
			if n, ok := v.(int64); ok && n < 0 {
				return config.Invalid(name, v, "Value must be at least 0")
			}
			return nil
		}, "[0,...]"),
		Importance: config.Low, Group: GroupExactlyOnce, OrderInGroup: 3, Width: config.WidthShort, DisplayName: "Transaction boundary interval",
		Doc: "Transaction length in milliseconds with transaction.boundary=interval; unset: the worker's offset.flush.interval.ms."})
	d.Define(config.Key{Name: KeyOffsetsStorageTopic, Type: config.String, Validator: config.NonEmptyString(),
		Importance: config.Low, Group: GroupOffsetsTopic, OrderInGroup: 1, Width: config.WidthLong, DisplayName: "Offsets topic",
		Doc: "A separate offsets topic for this connector (distributed mode); unset: the worker's. Ignored by a standalone worker."})
	dlqDefs(d, false)
	return d
}

// FrameworkDef is the definition the worker adds to every connector of the
// type ("source" or "sink"): Kafka Connect's common connector settings.
func FrameworkDef(typ string) *config.Def {
	switch typ {
	case TypeSource:
		return sourceDef()
	case TypeSink:
		return sinkDef()
	}
	return commonDef()
}

// aliasDefs adds the per-alias settings of transforms and predicates
// (transforms.<a>.type, .predicate, .negate; predicates.<p>.type) as Kafka's
// ConnectorConfig.enrich does, and the settings the transform class declares.
func aliasDefs(d *config.Def, props map[string]string, cat TransformCatalog) {
	list := func(key string) []string {
		var out []string
		seen := map[string]bool{}
		for _, a := range strings.Split(props[key], ",") {
			if a = strings.TrimSpace(a); a != "" && !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
		return out
	}
	predicates := list(KeyPredicates)
	for _, a := range list(KeyTransforms) {
		prefix := KeyTransforms + "." + a + "."
		group := GroupTransforms + ": " + a
		child := config.NewDef()
		child.Define(config.Key{Name: "type", Type: config.Class, Required: true, Validator: classValidator("transformation", cat, false),
			Importance: config.High, Group: "", Width: config.WidthLong, DisplayName: "Transformation type for " + a,
			Doc: "Class of the '" + a + "' transformation."})
		child.Define(config.Key{Name: "predicate", Type: config.String, Validator: predicateAlias(predicates),
			Importance: config.Medium, Width: config.WidthLong, DisplayName: "Predicate for " + a,
			Doc: "Alias of the predicate the '" + a + "' transformation is applied under; unset: always applied."})
		child.Define(config.Key{Name: "negate", Type: config.Boolean, Default: false,
			Importance: config.Medium, Width: config.WidthShort, DisplayName: "Negate predicate for " + a,
			Doc: "Apply the '" + a + "' transformation when its predicate does not match."})
		if cat != nil {
			if td, ok := cat.Transform(strings.TrimSpace(props[prefix+"type"])); ok && td != nil {
				for _, k := range td.Keys() {
					if _, dup := child.Key(k.Name); !dup {
						_ = child.Add(k)
					}
				}
			}
		}
		_ = d.Embed(prefix, group, 0, child)
	}
	for _, a := range predicates {
		prefix := KeyPredicates + "." + a + "."
		child := config.NewDef()
		child.Define(config.Key{Name: "type", Type: config.Class, Required: true, Validator: classValidator("predicate", cat, true),
			Importance: config.High, Width: config.WidthLong, DisplayName: "Predicate type for " + a,
			Doc: "Class of the '" + a + "' predicate."})
		if cat != nil {
			if pd, ok := cat.Predicate(strings.TrimSpace(props[prefix+"type"])); ok && pd != nil {
				for _, k := range pd.Keys() {
					if _, dup := child.Key(k.Name); !dup {
						_ = child.Add(k)
					}
				}
			}
		}
		_ = d.Embed(prefix, GroupPredicates+": "+a, 0, child)
	}
}

// TransformCatalog knows the transformation and predicate classes the
// worker can run and their settings. The worker passes nil until transforms
// exist; every transforms.<a>.type is then an unknown class.
type TransformCatalog interface {
	Transform(class string) (*config.Def, bool)
	Predicate(class string) (*config.Def, bool)
}

func classValidator(kind string, cat TransformCatalog, predicate bool) config.Validator {
	return config.Lambda(func(name string, v any) error {
		s, _ := v.(string)
		if s == "" {
			return nil // missing: the required check says so
		}
		ok := false
		if cat != nil {
			if predicate {
				_, ok = cat.Predicate(s)
			} else {
				_, ok = cat.Transform(s)
			}
		}
		if !ok {
			return config.Invalid(name, v, "Class "+s+" could not be found.")
		}
		return nil
	}, "a "+kind+" class")
}

func predicateAlias(defined []string) config.Validator {
	return config.Lambda(func(name string, v any) error {
		s, _ := v.(string)
		if s == "" {
			return nil
		}
		for _, p := range defined {
			if p == s {
				return nil
			}
		}
		return config.Invalid(name, v, "The predicate '"+s+"' is not defined in "+KeyPredicates)
	}, "a defined predicate alias")
}
