package worker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/cluster"
	"github.com/sluice-io/sluice/host/config"
	"github.com/sluice-io/sluice/host/configprovider"
	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/logging"
	"github.com/sluice-io/sluice/host/plugin"
	"github.com/sluice-io/sluice/host/rest"
	"github.com/sluice-io/sluice/host/storage"
)

// Distributed is a distributed worker (connect-distributed): plugins, the
// three internal topics, the group membership, the distributed herder and
// the REST API, started and stopped together.
type Distributed struct {
	cfg     *config.Worker
	opts    Options
	loggers *logging.Registry
	log     hclog.Logger
	plugins *plugin.Manager
	shared  sharedStats
	kcl     *kgo.Client
	offsets *storage.KafkaOffsetStore
	herder  *herder.Distributed
	// resolver resolves config variables of connector configs.
	resolver *configprovider.Resolver
	rest     *rest.Server
	seeds    []string

	closeOnce sync.Once
	closeErr  error
}

// NewDistributed prepares a distributed worker from its configuration:
// loggers, the plugin manager and the Kafka client. Nothing is contacted
// before Start.
func NewDistributed(cfg *config.Worker, opts Options) (*Distributed, error) {
	if cfg.Standalone {
		return nil, errors.New("distributed worker: the configuration is a standalone one")
	}
	if opts.KafkaTimeout <= 0 {
		opts.KafkaTimeout = DefaultKafkaTimeout
	}
	if opts.RESTTimeout <= 0 {
		opts.RESTTimeout = cfg.Millis(config.RestRequestTimeoutMs)
	}
	loggers, err := logging.New(logging.Options{Output: opts.LogOutput, Level: cfg.String(config.LogLevel)})
	if err != nil {
		return nil, fmt.Errorf("loggers: %w", err)
	}
	w := &Distributed{cfg: cfg, opts: opts, loggers: loggers, log: loggers.Logger(logging.WorkerName), seeds: cfg.List(config.BootstrapServers)}
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
	kopts := append([]kgo.Opt{kgo.SeedBrokers(w.seeds...), kgo.ClientID(adminClientID(cfg))}, opts.KafkaOpts...)
	w.kcl, err = kgo.NewClient(kopts...)
	if err != nil {
		w.closePlugins()
		return nil, fmt.Errorf("kafka client (%s=%s): %w", config.BootstrapServers, strings.Join(w.seeds, ","), err)
	}
	return w, nil
}

func (w *Distributed) closePlugins() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownKafka)
	defer cancel()
	_ = w.plugins.Close(ctx)
}

// logConfig is the KafkaLog settings of one internal store.
func (w *Distributed) logConfig(topic, store string) storage.LogConfig {
	id := storage.InternalClientID(w.cfg.String(config.GroupID), w.cfg.String(config.ClientID), store)
	opts := append([]kgo.Opt{kgo.SeedBrokers(w.seeds...), kgo.ClientID(id)}, w.opts.KafkaOpts...)
	return storage.LogConfig{Topic: topic, ClientOpts: opts, Logger: w.loggers.Logger("sluice.storage")}
}

// Start scans the plugins, creates or checks the internal topics, reads
// the offsets topic, serves the REST API and joins the group. GET /health
// answers 503 until the first assignment.
func (w *Distributed) Start(ctx context.Context) error {
	problems, err := w.plugins.Scan(ctx)
	if err != nil {
		return fmt.Errorf("scan plugin.path: %w", err)
	}
	for _, p := range problems {
		w.log.Warn("plugin.path: skipped", "path", p.Path, "error", p.Err)
	}
	kctx, cancel := context.WithTimeout(ctx, w.opts.KafkaTimeout)
	defer cancel()
	adm := kadm.NewClient(w.kcl)
	md, err := adm.BrokerMetadata(kctx)
	if err != nil {
		return fmt.Errorf("reach Kafka at %s=%s: %w", config.BootstrapServers, strings.Join(w.seeds, ","), err)
	}
	topics := storage.InternalTopics{
		Config: storage.ConfigTopic(w.cfg.String(config.ConfigStorageTopic), w.cfg.Short(config.ConfigStorageReplication)),
		Offset: storage.OffsetTopic(w.cfg.String(config.OffsetStorageTopic), int32(w.cfg.Int(config.OffsetStoragePartitions)), w.cfg.Short(config.OffsetStorageReplication)),
		Status: storage.StatusTopic(w.cfg.String(config.StatusStorageTopic), int32(w.cfg.Int(config.StatusStoragePartitions)), w.cfg.Short(config.StatusStorageReplication)),
	}
	if err := storage.EnsureTopics(kctx, adm, topics, w.log); err != nil {
		return fmt.Errorf("internal topics: %w", err)
	}
	w.offsets = storage.NewKafkaOffsetStore(w.logConfig(topics.Offset.Name, "offsets"))
	if err := w.offsets.Start(kctx); err != nil {
		return err
	}

	in := &instances{
		mgr: w.plugins, cfg: w.cfg, offsets: w.offsets, loggers: w.loggers,
		log: w.loggers.Logger(logging.WorkerName), seeds: w.seeds, kafkaOpts: w.opts.KafkaOpts,
		stats: &w.shared,
	}
	group := cluster.FromWorker(w.cfg)
	group.Client = w.kcl
	group.Logger = w.loggers.Logger("sluice.cluster")
	w.herder, err = herder.NewDistributed(herder.DistributedOptions{
		StandaloneOptions: herder.StandaloneOptions{
			WorkerID:              w.cfg.WorkerID(""),
			Version:               w.opts.Version,
			Commit:                w.opts.Commit,
			KafkaClusterID:        md.Cluster,
			Instances:             in,
			Offsets:               w.offsets,
			Groups:                consumerGroups{adm: adm},
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
		},
		Group:         group,
		ConfigLog:     w.logConfig(topics.Config.Name, "configs"),
		StatusLog:     w.logConfig(topics.Status.Name, "statuses"),
		SyncTimeout:   w.cfg.Millis(config.WorkerSyncTimeoutMs),
		UnsyncBackoff: w.cfg.Millis(config.WorkerUnsyncBackoffMs),
		SetLoggerLevel: func(namespace, level string) error {
			_, err := w.loggers.SetLevel(namespace, level)
			return err
		},
	})
	if err != nil {
		return err
	}
	if w.cfg.Bool(config.TopicTrackingEnable) {
		in.activeTopic = w.herder.RecordActiveTopic
	}
	ro := (&Worker{cfg: w.cfg, opts: w.opts, loggers: w.loggers}).restOptions()
	w.rest, err = rest.New(w.herder, w.loggers, ro)
	if err != nil {
		return err
	}
	if err := w.rest.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	workerID, scheme := w.cfg.WorkerID(""), "http"
	if addrs := w.rest.Addrs(); len(addrs) > 0 {
		bound := addrs[0]
		if i := strings.Index(bound, "://"); i >= 0 {
			scheme, bound = bound[:i], bound[i+3:]
		}
		workerID = w.cfg.WorkerID(bound)
	}
	if l := strings.ToLower(w.cfg.String(config.RestAdvertisedListener)); l != "" {
		scheme = l
	}
	advertised := (&url.URL{Scheme: scheme, Host: workerID, Path: "/"}).String()
	w.herder.SetWorkerID(workerID)
	w.plugins.SetWorkerID(workerID)
	w.herder.SetURL(advertised)
	if err := w.herder.Start(ctx); err != nil {
		return err
	}
	w.log.Info("worker started", "worker_id", workerID, "url", advertised, "group", group.GroupID, "kafka_cluster_id", md.Cluster)
	return nil
}

// Herder is the worker's herder (nil before Start).
func (w *Distributed) Herder() *herder.Distributed { return w.herder }

// Logger is the worker's main logger.
func (w *Distributed) Logger() hclog.Logger { return w.log }

// RESTAddrs are the URLs the REST API listens on (after Start).
func (w *Distributed) RESTAddrs() []string {
	if w.rest == nil {
		return nil
	}
	return w.rest.Addrs()
}

// Shutdown stops the worker: the REST API, then the work of this worker
// (tasks drain for task.shutdown.graceful.timeout.ms), then the group
// membership (LeaveGroup, so the others take the work over at once), the
// stores, the plugins and the Kafka client.
func (w *Distributed) Shutdown(ctx context.Context) error {
	w.closeOnce.Do(func() {
		var errs []error
		if w.rest != nil {
			if err := w.rest.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if w.herder != nil {
			if err := w.herder.Close(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if w.offsets != nil {
			w.offsets.Close()
		}
		if err := w.plugins.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		w.kcl.Close()
		w.closeErr = errors.Join(errs...)
		if w.closeErr != nil {
			w.log.Warn("worker stopped with errors", "error", w.closeErr)
		} else {
			w.log.Info("worker stopped")
		}
	})
	return w.closeErr
}

// SharedBatches counts the poll answers and put batches that went through
// tasks' shared memory regions rather than their gRPC connections.
func (w *Distributed) SharedBatches() (polls, puts int64) {
	return w.shared.polls.Load(), w.shared.puts.Load()
}
