package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/config"
	"github.com/sluice-io/sluice/host/convert"
	"github.com/sluice-io/sluice/host/errorhandler"
	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/logging"
	"github.com/sluice-io/sluice/host/plugin"
	"github.com/sluice-io/sluice/host/runtime"
	"github.com/sluice-io/sluice/host/storage"
	sdkconfig "github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
	"github.com/sluice-io/sluice/transforms"
)

// rescanTimeout bounds the plugin.path scan made when a class is not found.
const rescanTimeout = 30 * time.Second

// instances implements herder.Instances with plugin processes (host/plugin)
// and task runners (host/runtime).
type instances struct {
	mgr       *plugin.Manager
	cfg       *config.Worker
	offsets   storage.OffsetStore
	loggers   *logging.Registry
	log       hclog.Logger
	seeds     []string
	kafkaOpts []kgo.Opt
	// activeTopic records a topic a source task wrote to (the herder's
	// topic tracking); nil when tracking is off.
	activeTopic func(connector, topic string)
	// stats counts batches through shared memory.
	stats *sharedStats
	// pipelineHook, set by tests only, rewrites each task's pipeline
	// before the task is built around it: how a test puts a stage that
	// fails retriably in front of the connector's transforms, which no
	// built-in transform or converter can do.
	pipelineHook func(runtime.Pipeline) runtime.Pipeline
}

var _ herder.Instances = (*instances)(nil)

func herderClass(c plugin.Class) herder.Class {
	t := herder.TypeUnknown
	switch c.Type {
	case pluginv1.ConnectorType_CONNECTOR_TYPE_SOURCE:
		t = herder.TypeSource
	case pluginv1.ConnectorType_CONNECTOR_TYPE_SINK:
		t = herder.TypeSink
	}
	return herder.Class{Name: c.Name, Type: t, Version: c.Version, TaskClass: c.TaskClass, Def: c.Def}
}

// Lookup implements herder.Instances. A class not found triggers one
// rescan of plugin.path first: a binary may have been dropped in since.
func (in *instances) Lookup(ctx context.Context, name string) (herder.Class, error) {
	c, err := in.mgr.Lookup(name)
	if errors.Is(err, plugin.ErrUnknownClass) {
		scanCtx, cancel := context.WithTimeout(ctx, rescanTimeout)
		problems, serr := in.mgr.Scan(scanCtx)
		cancel()
		if serr == nil {
			for _, p := range problems {
				in.log.Debug("plugin.path problem", "path", p.Path, "error", p.Err)
			}
		}
		c, err = in.mgr.Lookup(name)
	}
	if errors.Is(err, plugin.ErrUnknownClass) {
		return herder.Class{}, fmt.Errorf("%w: %v", herder.ErrUnknownClass, err)
	}
	if err != nil {
		return herder.Class{}, err
	}
	return herderClass(c), nil
}

// Classes implements herder.Instances.
func (in *instances) Classes() []herder.Class {
	cs := in.mgr.Classes()
	out := make([]herder.Class, len(cs))
	for i, c := range cs {
		out[i] = herderClass(c)
	}
	return out
}

// binary finds the plugin binary serving a class (resolved before).
func (in *instances) binary(class string) (string, error) {
	c, err := in.mgr.Lookup(class)
	if err != nil {
		return "", err
	}
	return c.Path, nil
}

// pluginLevel is the level a plugin process logs at: that of its logger
// namespace in the worker (hclog's names).
func (in *instances) pluginLevel(name string) string {
	in.loggers.Logger(name)
	lvl, err := in.loggers.Level(name)
	if err != nil {
		return ""
	}
	switch lvl.Level.Hclog() {
	case hclog.Trace:
		return "trace"
	case hclog.Debug:
		return "debug"
	case hclog.Warn:
		return "warn"
	case hclog.Error, hclog.Off:
		return "error"
	}
	return "info"
}

// Validate implements herder.Instances on a process of its own.
func (in *instances) Validate(ctx context.Context, class herder.Class, cfg map[string]string) ([]*pluginv1.ConfigValue, error) {
	path, err := in.binary(class.Name)
	if err != nil {
		return nil, err
	}
	p, err := in.mgr.Launch(ctx, plugin.Spec{Path: path, Task: -1})
	if err != nil {
		return nil, err
	}
	defer killQuietly(p)
	resp, err := p.Connector().Validate(ctx, &pluginv1.ValidateRequest{ClassName: class.Name, Config: cfg})
	if err != nil {
		return nil, err
	}
	return resp.GetValues(), nil
}

// StartConnector implements herder.Instances.
func (in *instances) StartConnector(ctx context.Context, name string, class herder.Class, cfg map[string]string, cb herder.ConnectorCallbacks) (herder.ConnectorInstance, error) {
	path, err := in.binary(class.Name)
	if err != nil {
		return nil, err
	}
	ws := &connectorWorker{name: name, cb: cb, offsets: in.offsets}
	p, err := in.mgr.Launch(ctx, plugin.Spec{Path: path, Connector: name, Task: -1, LogLevel: in.pluginLevel(logging.ConnectorName(name)), Worker: ws, Logger: in.loggers.Logger(logging.ConnectorName(name))})
	if err != nil {
		return nil, err
	}
	_, err = p.Connector().Start(ctx, &pluginv1.ConnectorStartRequest{
		ClassName: class.Name, ConnectorName: name, Config: cfg, WorkerTarget: p.WorkerTarget(),
	})
	if err != nil {
		killQuietly(p)
		return nil, fmt.Errorf("start connector %s: %w", name, err)
	}
	return &connectorInstance{in: p}, nil
}

// AlterOffsets implements herder.Instances on a process of its own.
func (in *instances) AlterOffsets(ctx context.Context, class herder.Class, cfg map[string]string, offsets []herder.ConnectorOffset) (bool, error) {
	path, err := in.binary(class.Name)
	if err != nil {
		return false, err
	}
	req := &pluginv1.AlterOffsetsRequest{Config: cfg}
	for _, o := range offsets {
		e := &pluginv1.OffsetEntry{}
		if e.Partition, err = json.Marshal(o.Partition); err != nil {
			return false, fmt.Errorf("encode partition: %w", err)
		}
		if o.Offset != nil {
			if e.Offset, err = json.Marshal(o.Offset); err != nil {
				return false, fmt.Errorf("encode offset: %w", err)
			}
		}
		req.Offsets = append(req.Offsets, e)
	}
	p, err := in.mgr.Launch(ctx, plugin.Spec{Path: path, Task: -1})
	if err != nil {
		return false, err
	}
	defer killQuietly(p)
	resp, err := p.Connector().AlterOffsets(ctx, req)
	if wire.KindOf(err) == wire.KindUnsupported {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return resp.GetHandled(), nil
}

// converterSettings picks a converter's class and settings: the
// connector's when it sets the class, else the worker's (Kafka Connect
// reads the prefixed settings from the same config as the class).
func (in *instances) converterSettings(connCfg map[string]string, prop string) (string, map[string]string) {
	if c := strings.TrimSpace(connCfg[prop]); c != "" {
		return c, convert.PrefixedProps(connCfg, prop+".")
	}
	return in.cfg.Class(prop), in.cfg.Prefixed(prop + ".")
}

// pipeline builds a task's converters and its transform chain
// (transforms.Chain; nil when the connector has none).
func (in *instances) pipeline(connCfg map[string]string) (runtime.Pipeline, error) {
	var p runtime.Pipeline
	var errs []error
	kc, kp := in.converterSettings(connCfg, config.KeyConverter)
	k, err := convert.New(kc, true, kp)
	if err != nil {
		errs = append(errs, fmt.Errorf("key.converter: %w", err))
	}
	vc, vp := in.converterSettings(connCfg, config.ValueConverter)
	v, err := convert.New(vc, false, vp)
	if err != nil {
		errs = append(errs, fmt.Errorf("value.converter: %w", err))
	}
	hc, hp := in.converterSettings(connCfg, config.HeaderConverter)
	h, err := convert.NewHeader(hc, hp)
	if err != nil {
		errs = append(errs, fmt.Errorf("header.converter: %w", err))
	}
	chain, err := transforms.Chain(connCfg)
	if err != nil {
		errs = append(errs, fmt.Errorf("transforms: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return p, err
	}
	p.KeyConverter, p.ValueConverter, p.HeaderConverter = k, v, h
	if chain.Len() > 0 {
		p.Transforms = chain
	}
	return p, nil
}

// errorHandler builds a task's error handling (errors.*) around its
// pipeline; producerOpts are the dead letter queue producer's options.
func (in *instances) errorHandler(spec herder.TaskSpec, p runtime.Pipeline, producerOpts []kgo.Opt, log hclog.Logger) (*errorhandler.Operator, error) {
	s, err := errorhandler.ParseSettings(spec.ConnectorConfig)
	if err != nil {
		return nil, err
	}
	kc, _ := in.converterSettings(spec.ConnectorConfig, config.KeyConverter)
	vc, _ := in.converterSettings(spec.ConnectorConfig, config.ValueConverter)
	hc, _ := in.converterSettings(spec.ConnectorConfig, config.HeaderConverter)
	if hc == "" {
		hc = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
	}
	return errorhandler.New(errorhandler.Options{
		Task:                 runtime.TaskID{Connector: spec.ID.Connector, Task: spec.ID.Task},
		Settings:             s,
		TaskClass:            spec.Class.TaskClassName(),
		KeyConverterClass:    converterClassName(kc),
		ValueConverterClass:  converterClassName(vc),
		HeaderConverterClass: converterClassName(hc),
		KeyConverter:         p.KeyConverter,
		ValueConverter:       p.ValueConverter,
		HeaderConverter:      p.HeaderConverter,
		ProducerOpts:         producerOpts,
		Logger:               log,
	})
}

// checkConverter is the herder's ConverterChecker: the class must exist and
// accept the connector's settings for it.
func checkConverter(prop, class string, cfg map[string]string) error {
	props := convert.PrefixedProps(cfg, prop+".")
	var err error
	if prop == config.HeaderConverter {
		_, err = convert.NewHeader(class, props)
	} else {
		_, err = convert.New(class, prop == config.KeyConverter, props)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, convert.ErrUnknownClass):
		return sdkconfig.Invalid(prop, class, "Class "+class+" could not be found.")
	}
	return sdkconfig.Invalid(prop, class, err.Error())
}

// NewTask implements herder.Instances: a host/runtime task whose plugin
// process is launched by Run.
func (in *instances) NewTask(_ context.Context, spec herder.TaskSpec, l herder.TaskListener) (herder.TaskRunner, error) {
	path, err := in.binary(spec.Class.Name)
	if err != nil {
		return nil, err
	}
	pipe, err := in.pipeline(spec.ConnectorConfig)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	if in.pipelineHook != nil {
		pipe = in.pipelineHook(pipe)
	}
	id := runtime.TaskID{Connector: spec.ID.Connector, Task: spec.ID.Task}
	logName := logging.TaskName(id.Connector, id.Task)
	log := in.loggers.Logger(logName)
	launchSpec := plugin.Spec{Path: path, Connector: id.Connector, Task: id.Task, LogLevel: in.pluginLevel(logName), Logger: log,
		SharedMemoryBytes: in.cfg.Long(config.TaskSharedMemoryBytes)}
	timing := runtime.Timing{
		OffsetFlushInterval: in.cfg.Millis(config.OffsetFlushIntervalMs),
		OffsetFlushTimeout:  in.cfg.Millis(config.OffsetFlushTimeoutMs),
		ShutdownTimeout:     in.cfg.Millis(config.TaskShutdownGracefulTimeout),
	}
	base := append([]kgo.Opt{kgo.SeedBrokers(in.seeds...)}, in.kafkaOpts...)
	lis := taskListener{l}
	ps, err := runtime.ProducerOptions(runtime.ClientProperties(in.cfg.Props, spec.ConnectorConfig, "producer"))
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	op, err := in.errorHandler(spec, pipe, append(slices.Clone(base), ps.Opts...), log)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	pipe.Errors = op
	wrap := func(t runtime.Task, err error) (herder.TaskRunner, error) {
		if err != nil {
			return nil, err
		}
		if errorhandlerDLQ(spec.ConnectorConfig) {
			return &errorRunner{Task: t, op: op, l: l}, nil
		}
		return t, nil
	}

	switch spec.Class.Type {
	case herder.TypeSource:
		if len(ps.Ignored) > 0 {
			log.Warn("producer properties not used", "properties", ps.Ignored)
		}
		// topic.creation.* (KIP-158), unless the worker turned it off.
		var topicCreation *runtime.TopicCreation
		if in.cfg.Bool(config.TopicCreationEnable) {
			if topicCreation, err = runtime.ParseTopicCreation(spec.ConnectorConfig); err != nil {
				return nil, fmt.Errorf("task %s: %w", spec.ID, err)
			}
		}
		if topicCreation != nil {
			// As Kafka Connect's TopicAdmin for the task: the worker's
			// admin.* settings under the connector's admin.override.* ones
			// (which the override policy checked with the config), none of
			// the producer's. The runtime makes the client when the task
			// first checks a topic and adds the default client id,
			// connector-adminclient-<connector>-<task>.
			as, err := runtime.AdminOptions(runtime.ClientProperties(in.cfg.Props, spec.ConnectorConfig, "admin"))
			if err != nil {
				return nil, fmt.Errorf("task %s: %w", spec.ID, err)
			}
			if len(as.Ignored) > 0 {
				log.Warn("admin properties not used", "properties", as.Ignored)
			}
			topicCreation.AdminOpts = append(slices.Clone(base), as.Opts...)
		}
		// Kafka's producer asks the broker to create missing topics
		// (allow.auto.create.topics=true); franz-go does so only when told.
		opts := append(base, kgo.ClientID("connector-producer-"+id.String()), kgo.AllowAutoTopicCreation())
		if in.activeTopic != nil {
			opts = append(opts, kgo.WithHooks(newTopicTracker(func(topic string) { in.activeTopic(id.Connector, topic) })))
		}
		return wrap(runtime.NewSourceTask(runtime.SourceConfig{
			ID: id, ConnectorClass: spec.Class.Name, TaskConfig: spec.TaskConfig,
			Launch: func(ctx context.Context, ws pluginv1.WorkerServer) (runtime.SourcePlugin, error) {
				s := launchSpec
				s.Worker = ws
				p, err := in.mgr.Launch(ctx, s)
				if err != nil {
					return nil, err
				}
				return &sourcePlugin{in: p, stats: in.stats}, nil
			},
			Pipeline:      pipe,
			ProducerOpts:  append(opts, ps.Opts...),
			Offsets:       in.offsets,
			TopicCreation: topicCreation,
			Timing:        timing,
			Listener:      lis,
			Logger:        log,
		}))
	case herder.TypeSink:
		cs, err := runtime.ConsumerOptions(runtime.ClientProperties(in.cfg.Props, spec.ConnectorConfig, "consumer"))
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", spec.ID, err)
		}
		if len(cs.Ignored) > 0 {
			log.Warn("consumer properties not used", "properties", cs.Ignored)
		}
		maxRecs, maxBytes, err := sinkBatchLimits(spec.ConnectorConfig)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", spec.ID, err)
		}
		opts := append(base, kgo.ClientID("connector-consumer-"+id.String()))
		var topics []string
		for _, t := range strings.Split(spec.TaskConfig[herder.KeyTopics], ",") {
			if t = strings.TrimSpace(t); t != "" {
				topics = append(topics, t)
			}
		}
		return wrap(runtime.NewSinkTask(runtime.SinkConfig{
			ID: id, ConnectorClass: spec.Class.Name, TaskConfig: spec.TaskConfig,
			Launch: func(ctx context.Context, ws pluginv1.WorkerServer) (runtime.SinkPlugin, error) {
				s := launchSpec
				s.Worker = ws
				p, err := in.mgr.Launch(ctx, s)
				if err != nil {
					return nil, err
				}
				return &sinkPlugin{in: p, stats: in.stats}, nil
			},
			Pipeline:       pipe,
			Topics:         topics,
			TopicsRegex:    strings.TrimSpace(spec.TaskConfig[herder.KeyTopicsRegex]),
			GroupID:        herder.SinkGroup(id.Connector, spec.ConnectorConfig),
			ConsumerOpts:   append(opts, cs.Opts...),
			Balancers:      cs.Balancers,
			MaxPollRecords: cs.MaxPollRecords,
			// Unset (zero): the runtime's defaults.
			MaxBatchRecords: maxRecs,
			MaxBatchBytes:   maxBytes,
			Timing:          timing,
			Listener:        lis,
			Logger:          log,
		}))
	}
	return nil, fmt.Errorf("task %s: connector class %s is neither a source nor a sink", spec.ID, spec.Class.Name)
}

// sinkBatchLimits reads sluice.sink.batch.max.records and .max.bytes; zero
// for what is unset. Validation refused bad values before; a config that
// bypassed it still fails the task rather than running with a guess.
func sinkBatchLimits(connCfg map[string]string) (records, bytes int, err error) {
	for _, s := range []struct {
		key string
		v   *int
	}{{herder.KeySinkBatchMaxRecords, &records}, {herder.KeySinkBatchMaxBytes, &bytes}} {
		raw := strings.TrimSpace(connCfg[s.key])
		if raw == "" {
			continue
		}
		n, perr := strconv.ParseInt(raw, 10, 64)
		if perr != nil || n < 1 || n > math.MaxInt32 && s.key == herder.KeySinkBatchMaxRecords {
			return 0, 0, fmt.Errorf("%s: invalid value %q: a positive integer is required", s.key, raw)
		}
		*s.v = int(n)
	}
	return records, bytes, nil
}

// errorhandlerDLQ says whether the connector has a dead letter queue.
func errorhandlerDLQ(connCfg map[string]string) bool {
	return strings.TrimSpace(connCfg[errorhandler.KeyDLQTopicName]) != ""
}

// taskListener forwards a runner's reports to the herder.
type taskListener struct{ l herder.TaskListener }

func (t taskListener) OnRunning(runtime.TaskID) { t.l.OnRunning() }
func (t taskListener) OnPaused(runtime.TaskID)  { t.l.OnPaused() }
func (t taskListener) OnStopped(runtime.TaskID) { t.l.OnStopped() }
func (t taskListener) OnFailed(_ runtime.TaskID, err error, trace string) {
	t.l.OnFailed(err, trace)
}
