package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/config"
	"github.com/sluice-io/sluice/host/configprovider"
	"github.com/sluice-io/sluice/host/convert"
	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/logging"
	"github.com/sluice-io/sluice/host/plugin"
	"github.com/sluice-io/sluice/host/rest"
	"github.com/sluice-io/sluice/host/storage"
)

// Defaults of Options.
const (
	DefaultKafkaTimeout        = 60 * time.Second
	DefaultPluginWatchInterval = 30 * time.Second
	// shutdownKafka bounds the last Kafka requests at shutdown.
	shutdownKafka = 5 * time.Second
)

// Options are what a worker takes besides its configuration.
type Options struct {
	// Version and Commit answer GET /.
	Version, Commit string
	// LogOutput receives every log line; os.Stderr when nil.
	LogOutput io.Writer
	// BundledPlugins is a directory of bundled plugin binaries searched
	// after plugin.path. Empty: the directory "plugins" next to the running
	// executable (bin/plugins beside bin/sluice, where make build puts
	// them), when it exists. "-": none.
	BundledPlugins string
	// KafkaTimeout bounds the wait for Kafka at start (the cluster id).
	KafkaTimeout time.Duration
	// RESTTimeout overrides the REST request timeout (90 s).
	RESTTimeout time.Duration
	// PluginWatchInterval is how often plugin.path is scanned for new or
	// changed binaries; negative: never (a class not found still rescans).
	PluginWatchInterval time.Duration
	// KafkaOpts are added to every Kafka client of the worker.
	KafkaOpts []kgo.Opt
}

// Worker is a standalone worker: plugins, Kafka clients, the offsets
// file, the herder and the REST API, started and stopped together.
type Worker struct {
	cfg     *config.Worker
	opts    Options
	loggers *logging.Registry
	log     hclog.Logger
	plugins *plugin.Manager
	offsets *storage.FileOffsetStore
	kcl     *kgo.Client
	herder  *herder.Standalone
	// resolver resolves config variables of connector configs.
	resolver *configprovider.Resolver
	rest     *rest.Server
	seeds    []string

	shared sharedStats

	watchCancel context.CancelFunc
	watchDone   chan struct{}
	closeOnce   sync.Once
	closeErr    error
}

// NewStandalone prepares a standalone worker from its configuration:
// loggers, the plugin manager, the offsets file and the Kafka client.
// Nothing is contacted or served before Start.
func NewStandalone(cfg *config.Worker, opts Options) (*Worker, error) {
	if !cfg.Standalone {
		return nil, errors.New("standalone worker: the configuration is a distributed one")
	}
	if opts.KafkaTimeout <= 0 {
		opts.KafkaTimeout = DefaultKafkaTimeout
	}
	if opts.RESTTimeout <= 0 {
		opts.RESTTimeout = cfg.Millis(config.RestRequestTimeoutMs)
	}
	if opts.PluginWatchInterval == 0 {
		opts.PluginWatchInterval = DefaultPluginWatchInterval
	}
	loggers, err := logging.New(logging.Options{Output: opts.LogOutput, Level: cfg.String(config.LogLevel)})
	if err != nil {
		return nil, fmt.Errorf("loggers: %w", err)
	}
	w := &Worker{cfg: cfg, opts: opts, loggers: loggers, log: loggers.Logger(logging.WorkerName), seeds: cfg.List(config.BootstrapServers)}

	if classes := cfg.List(config.RestExtensionClasses); len(classes) > 0 {
		w.log.Warn("rest.extension.classes are Java REST extensions and cannot run in Sluice; ignored", "classes", classes)
	}
	// The providers of connector configs are the worker's own (its
	// properties were resolved with them before validation).
	w.resolver, err = configprovider.New(cfg.Props)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.ConfigProviders, err)
	}
	if a := w.resolver.Aliases(); len(a) > 0 {
		w.log.Info("config providers", "aliases", a)
	}

	paths := cfg.List(config.PluginPath)
	if dir := bundledDir(opts.BundledPlugins); dir != "" {
		paths = append(paths, dir)
	}
	w.plugins, err = plugin.New(plugin.Options{
		PluginPaths: paths,
		Logger:      loggers.Logger(logging.WorkerName),
		WorkerID:    cfg.WorkerID(""),
		LogLevel:    hclogName(loggers, logging.RootName),
		MemoryLimit: cfg.Long(config.PluginMemoryMaxBytes),
	})
	if err != nil {
		return nil, err
	}
	w.offsets, err = storage.OpenFileOffsetStore(cfg.String(config.OffsetStorageFileFilename))
	if err != nil {
		w.closePlugins()
		return nil, fmt.Errorf("%s: %w", config.OffsetStorageFileFilename, err)
	}
	kopts := append([]kgo.Opt{kgo.SeedBrokers(w.seeds...), kgo.ClientID(adminClientID(cfg))}, opts.KafkaOpts...)
	w.kcl, err = kgo.NewClient(kopts...)
	if err != nil {
		w.closePlugins()
		return nil, fmt.Errorf("kafka client (%s=%s): %w", config.BootstrapServers, strings.Join(w.seeds, ","), err)
	}
	return w, nil
}

func adminClientID(cfg *config.Worker) string {
	if id := cfg.String(config.ClientID); id != "" {
		return id + "-sluice-admin"
	}
	return "sluice-worker-admin"
}

// bundledDir resolves Options.BundledPlugins.
func bundledDir(opt string) string {
	switch opt {
	case "-":
		return ""
	case "":
		exe, err := os.Executable()
		if err != nil {
			return ""
		}
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		dir := filepath.Join(filepath.Dir(exe), "plugins")
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
		return ""
	}
	return opt
}

// hclogName is the hclog level name of a logger, for plugin processes.
func hclogName(r *logging.Registry, name string) string {
	in := instances{loggers: r}
	return in.pluginLevel(name)
}

// Start scans plugin.path, reads the Kafka cluster id, builds the herder
// and serves the REST API. The worker is not ready (GET /health answers
// 503) until MarkReady.
func (w *Worker) Start(ctx context.Context) error {
	problems, err := w.plugins.Scan(ctx)
	if err != nil {
		return fmt.Errorf("scan plugin.path: %w", err)
	}
	for _, p := range problems {
		w.log.Warn("plugin.path: skipped", "path", p.Path, "error", p.Err)
	}
	for _, c := range w.plugins.Classes() {
		w.log.Info("connector plugin", "class", c.Name, "version", c.Version, "path", c.Path)
	}

	kctx, cancel := context.WithTimeout(ctx, w.opts.KafkaTimeout)
	md, err := kadm.NewClient(w.kcl).BrokerMetadata(kctx)
	cancel()
	if err != nil {
		return fmt.Errorf("reach Kafka at %s=%s: %w", config.BootstrapServers, strings.Join(w.seeds, ","), err)
	}

	in := &instances{
		mgr: w.plugins, cfg: w.cfg, offsets: w.offsets, loggers: w.loggers,
		log: w.loggers.Logger(logging.WorkerName), seeds: w.seeds, kafkaOpts: w.opts.KafkaOpts,
		stats: &w.shared,
	}
	w.herder, err = herder.NewStandalone(herder.StandaloneOptions{
		WorkerID:              w.cfg.WorkerID(""),
		Version:               w.opts.Version,
		Commit:                w.opts.Commit,
		KafkaClusterID:        md.Cluster,
		Instances:             in,
		Offsets:               w.offsets,
		Groups:                consumerGroups{adm: kadm.NewClient(w.kcl)},
		Converters:            checkConverter,
		OverridePolicy:        w.cfg.String(config.ClientConfigOverridePolicy),
		Transforms:            transformCatalog{},
		OtherPlugins:          otherPlugins,
		OtherPluginConfig:     otherPluginConfig,
		TaskShutdownTimeout:   w.cfg.Millis(config.TaskShutdownGracefulTimeout),
		TopicTrackingDisabled: !w.cfg.Bool(config.TopicTrackingEnable),
		TopicResetDisabled:    !w.cfg.Bool(config.TopicTrackingAllowReset),
		TopicCreation:         w.cfg.Bool(config.TopicCreationEnable),
		Logger:                w.loggers.Logger(logging.HerderName),
		Resolver:              w.resolver,
	})
	if err != nil {
		return err
	}
	if w.cfg.Bool(config.TopicTrackingEnable) {
		in.activeTopic = w.herder.RecordActiveTopic
	}
	w.rest, err = rest.New(w.herder, w.loggers, w.restOptions())
	if err != nil {
		return err
	}
	if err := w.rest.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	workerID := w.cfg.WorkerID("")
	if addrs := w.rest.Addrs(); len(addrs) > 0 {
		bound := addrs[0]
		if i := strings.Index(bound, "://"); i >= 0 {
			bound = bound[i+3:]
		}
		workerID = w.cfg.WorkerID(bound)
		w.herder.SetWorkerID(workerID)
		w.plugins.SetWorkerID(workerID)
	}
	if w.opts.PluginWatchInterval > 0 {
		wctx, cancel := context.WithCancel(context.Background())
		w.watchCancel, w.watchDone = cancel, make(chan struct{})
		go func() {
			defer close(w.watchDone)
			_ = w.plugins.Watch(wctx, w.opts.PluginWatchInterval)
		}()
	}
	w.log.Info("worker started", "worker_id", workerID, "rest", w.rest.Addrs(), "kafka_cluster_id", md.Cluster)
	return nil
}

// restOptions maps the worker's REST settings.
func (w *Worker) restOptions() rest.Options {
	o := rest.Options{
		Listeners:       w.cfg.List(config.Listeners),
		AllowOrigin:     w.cfg.String(config.AccessControlAllowOrigin),
		AllowMethods:    w.cfg.String(config.AccessControlAllowMethods),
		ResponseHeaders: w.cfg.String(config.ResponseHTTPHeaders),
		RequestTimeout:  w.opts.RESTTimeout,
		Logger:          w.loggers.Logger("sluice.rest"),
	}
	if w.cfg.Has(config.AdminListeners) {
		o.AdminListeners = append([]string{}, w.cfg.List(config.AdminListeners)...)
	}
	// TLS for https listeners, from PEM files: listeners.https.ssl.* first,
	// then ssl.*, as Kafka Connect looks them up.
	get := func(key string) string {
		if v := w.cfg.Props["listeners.https."+key]; v != "" {
			return v
		}
		return w.cfg.Props[key]
	}
	o.TLS = rest.TLSOptions{
		CertFile:     get("ssl.keystore.location"),
		KeyFile:      get("ssl.keystore.location"),
		ClientCAFile: get("ssl.truststore.location"),
		ClientAuth:   get("ssl.client.auth"),
	}
	if c := get("ssl.keystore.certificate.chain.location"); c != "" {
		o.TLS.CertFile = c
	}
	if k := get("ssl.keystore.key.location"); k != "" {
		o.TLS.KeyFile = k
	}
	return o
}

// otherPlugins lists the converters, transformations and predicates for
// GET /connector-plugins?connectorsOnly=false.
func otherPlugins() []herder.PluginInfo {
	var out []herder.PluginInfo
	for _, c := range convert.Classes() {
		out = append(out, herder.PluginInfo{Class: c.Name, Type: c.Type})
	}
	return append(out, transformPlugins()...)
}

// otherPluginConfig answers GET /connector-plugins/{plugin}/config for a
// converter, a transformation or a predicate.
func otherPluginConfig(name string) ([]herder.ConfigKeyInfo, bool) {
	if keys, ok := converterConfig(name); ok {
		return keys, true
	}
	return transformConfig(name)
}

// converterConfig lists a converter's settings, found by class name or alias.
func converterConfig(name string) ([]herder.ConfigKeyInfo, bool) {
	for _, c := range convert.Classes() {
		if c.Name != name && !slices.Contains(c.Aliases, name) {
			continue
		}
		var out []herder.ConfigKeyInfo
		if c.Config != nil {
			for _, k := range c.Config.Proto().GetKeys() {
				out = append(out, herder.KeyInfo(k))
			}
		}
		if out == nil {
			out = []herder.ConfigKeyInfo{}
		}
		return out, true
	}
	return nil, false
}

// Herder is the worker's herder (nil before Start).
func (w *Worker) Herder() *herder.Standalone { return w.herder }

// Loggers is the worker's logger registry.
func (w *Worker) Loggers() *logging.Registry { return w.loggers }

// Logger is the worker's main logger.
func (w *Worker) Logger() hclog.Logger { return w.log }

// RESTAddrs are the URLs the REST API listens on (after Start).
func (w *Worker) RESTAddrs() []string {
	if w.rest == nil {
		return nil
	}
	return w.rest.Addrs()
}

// AddConnectors creates connectors one after the other, as
// connect-standalone does with the files on its command line; the first
// failure stops and is returned, naming the connector and its file.
func (w *Worker) AddConnectors(ctx context.Context, files []*config.ConnectorFile, sources []string) error {
	for i, f := range files {
		_, _, err := w.herder.PutConnectorConfig(ctx, f.Name, f.Config, false, herder.TargetState(f.InitialState))
		if err != nil {
			src := ""
			if i < len(sources) {
				src = " (" + sources[i] + ")"
			}
			return fmt.Errorf("create connector %s%s: %w", f.Name, src, err)
		}
		w.log.Info("connector created", "connector", f.Name)
	}
	return nil
}

// MarkReady ends the start-up: GET /health answers 200 from now on.
func (w *Worker) MarkReady() {
	if w.herder != nil {
		w.herder.MarkReady()
	}
}

// Shutdown stops the worker: the REST API stops taking requests, tasks
// drain (task.shutdown.graceful.timeout.ms) and stop, connectors stop,
// every plugin process still running is killed, and the Kafka client
// closes. ctx bounds the whole; calling Shutdown again returns the first
// result.
func (w *Worker) Shutdown(ctx context.Context) error {
	w.closeOnce.Do(func() {
		var errs []error
		if w.rest != nil {
			if err := w.rest.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if w.watchCancel != nil {
			w.watchCancel()
			<-w.watchDone
		}
		if w.herder != nil {
			if err := w.herder.Close(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if err := w.plugins.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		if w.kcl != nil {
			w.kcl.Close()
		}
		w.closeErr = errors.Join(errs...)
		if w.closeErr != nil {
			w.log.Warn("worker stopped with errors", "error", w.closeErr)
		} else {
			w.log.Info("worker stopped")
		}
	})
	return w.closeErr
}

func (w *Worker) closePlugins() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownKafka)
	defer cancel()
	_ = w.plugins.Close(ctx)
}

// SharedBatches counts the poll answers and put batches that went through
// tasks' shared memory regions rather than their gRPC connections.
func (w *Worker) SharedBatches() (polls, puts int64) {
	return w.shared.polls.Load(), w.shared.puts.Load()
}
