package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluice-io/sluice/host/config"
	"github.com/sluice-io/sluice/host/configprovider"
	"github.com/sluice-io/sluice/host/worker"
)

// The demo pipeline of sluice dev: made-up orders from the bundled datagen
// connector into a topic, and from the topic into a file with Kafka's
// FileStreamSink (bundled plugins/file). Adjust here if a class is renamed.
const (
	demoTopic      = "demo-orders"
	demoSourceName = "demo-orders"
	demoSinkName   = "demo-file-sink"
	demoOutputFile = "demo-orders.txt"
	// The classes the demo needs, and where they come from.
	demoSourceClass = "io.sluice.connect.datagen.DatagenConnector" // plugins/datagen
	demoSinkClass   = "org.apache.kafka.connect.file.FileStreamSinkConnector"
)

// demoConnectors are the demo's connector configs; dir is the dev
// directory the output file goes to.
func demoConnectors(dir string) []*config.ConnectorFile {
	return []*config.ConnectorFile{
		{Name: demoSourceName, Config: map[string]string{
			"name":            demoSourceName,
			"connector.class": demoSourceClass,
			"kafka.topic":     demoTopic,
			"quickstart":      "orders",
			"key.field":       "orderid",
			"max.interval":    "500",
			"tasks.max":       "1",
		}},
		{Name: demoSinkName, Config: map[string]string{
			"name":            demoSinkName,
			"connector.class": demoSinkClass,
			"topics":          demoTopic,
			"file":            filepath.Join(dir, demoOutputFile),
			// The topic holds JSON text: write it as it is, one per line.
			"value.converter": "org.apache.kafka.connect.storage.StringConverter",
		}},
	}
}

// runDev runs an embedded Kafka broker (franz-go's kfake, in this process),
// a standalone worker on it and, unless --demo=false, the demo pipeline.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	demo := fs.Bool("demo", true, "run the demo pipeline (datagen -> topic -> file)")
	restAddr := fs.String("rest", "127.0.0.1:8083", "host:port of the REST API")
	pluginPath := fs.String("plugin-path", "", "plugin directories, comma-separated (bin/plugins next to the binary is always searched)")
	kafkaPort := fs.Int("kafka-port", 0, "port of the embedded Kafka broker; 0 picks a free one")
	dirFlag := fs.String("dir", "", "directory for the offsets file and the demo output; default: a temporary directory removed on exit")
	logLevel := fs.String("log-level", "INFO", "worker log level (TRACE, DEBUG, INFO, WARN, ERROR)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice dev [flags]")
		fs.PrintDefaults()
	}
	// Nothing may follow the flags: -h there can only ask for help.
	if ok, code := parseFlags(fs, args, stdout, "-h", "-help", "--help"); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	if _, _, err := net.SplitHostPort(*restAddr); err != nil {
		fmt.Fprintf(stderr, "sluice dev: --rest %q: want host:port\n", *restAddr)
		return exitUsage
	}

	dir := *dirFlag
	if dir == "" {
		d, err := os.MkdirTemp("", "sluice-dev-")
		if err != nil {
			fmt.Fprintf(stderr, "sluice dev: %v\n", err)
			return exitWorker
		}
		dir = d
		defer os.RemoveAll(d)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "sluice dev: --dir: %v\n", err)
		return exitWorker
	}

	kopts := []kfake.Opt{kfake.NumBrokers(1), kfake.ClusterID("sluice-dev"), kfake.AllowAutoTopicCreation(), kfake.Ports(*kafkaPort)}
	if *demo {
		kopts = append(kopts, kfake.SeedTopics(1, demoTopic))
	}
	cluster, err := kfake.NewCluster(kopts...)
	if err != nil {
		fmt.Fprintf(stderr, "sluice dev: start the embedded Kafka broker: %v\n", err)
		return exitWorker
	}
	defer cluster.Close()
	seeds := strings.Join(cluster.ListenAddrs(), ",")

	props := map[string]string{
		config.BootstrapServers:          seeds,
		config.KeyConverter:              "org.apache.kafka.connect.storage.StringConverter",
		config.ValueConverter:            "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "false",
		config.OffsetStorageFileFilename: filepath.Join(dir, "offsets.json"),
		config.OffsetFlushIntervalMs:     "1000", // the file sink writes at each commit: keep the demo lively
		config.Listeners:                 "http://" + *restAddr,
		config.LogLevel:                  *logLevel,
	}
	if *pluginPath != "" {
		props[config.PluginPath] = *pluginPath
	}
	// CONNECT_* variables apply here too, as for any worker, over dev's
	// defaults; a flag given on the command line wins over them.
	for k, v := range config.EnvOverrides(os.Environ(), config.EnvPrefix) {
		props[k] = v
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "rest":
			props[config.Listeners] = "http://" + *restAddr
		case "plugin-path":
			props[config.PluginPath] = *pluginPath
		case "log-level":
			props[config.LogLevel] = *logLevel
		case "dir":
			props[config.OffsetStorageFileFilename] = filepath.Join(dir, "offsets.json")
		}
	})
	raw := props
	props, _, err = configprovider.ResolveWorker(ctx, props)
	if err != nil {
		fmt.Fprintf(stderr, "sluice dev: %v\n", err)
		return exitWorker
	}
	cfg, err := config.ParseWorker(props, true)
	if err != nil {
		// Validation messages quote values: show the variables as
		// written, not the secrets they resolved to.
		fmt.Fprintf(stderr, "sluice dev: %s\n", configprovider.NewMasker(raw, props).Text(err.Error()))
		return exitWorker
	}
	w, err := worker.NewStandalone(cfg, worker.Options{Version: Version, Commit: commit(), LogOutput: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "sluice dev: %v\n", err)
		return exitWorker
	}

	var files []*config.ConnectorFile
	var names []string
	if *demo {
		files = demoConnectors(dir)
		names = []string{"demo connector " + demoSourceName, "demo connector " + demoSinkName}
	}
	h := hooks{
		started: func() error {
			if !*demo {
				return nil
			}
			return checkDemoClasses(ctx, w)
		},
		ready: func() error {
			printBanner(stdout, w, props[config.BootstrapServers], seeds, props[config.OffsetStorageFileFilename], dir, *demo, *dirFlag == "", selfCommand(os.Args[0]))
			return nil
		},
	}
	return serve(ctx, w, files, names, stderr, h)
}

// checkDemoClasses says plainly what is missing when the bundled plugins
// are not where the worker looks.
func checkDemoClasses(ctx context.Context, w *worker.Worker) error {
	plugins, err := w.Herder().Plugins(ctx, true)
	if err != nil {
		return err
	}
	var have []string
	for _, p := range plugins {
		have = append(have, p.Class)
	}
	var missing []string
	for _, c := range []string{demoSourceClass, demoSinkClass} {
		if !slices.Contains(have, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the demo pipeline needs the connector classes %s, which no plugin in plugin.path serves "+
		"(found: %s). Build the bundled plugins with `make build` (they go to bin/plugins, next to bin/sluice) "+
		"or pass --plugin-path DIR; --demo=false starts without the demo",
		strings.Join(missing, " and "), orNone(have))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// selfCommand is how the banner tells the user to run this binary again:
// as it was started when that was by a path (make dev runs bin/sluice,
// which is not on the PATH of someone who just cloned the repository),
// else by its name.
func selfCommand(arg0 string) string {
	if arg0 == "" || !strings.ContainsRune(arg0, filepath.Separator) {
		return "sluice"
	}
	return arg0
}

// kafka is the worker's bootstrap.servers, seeds the embedded broker's:
// they differ when CONNECT_BOOTSTRAP_SERVERS is set. offsets is the
// worker's offsets file, which CONNECT_OFFSET_STORAGE_FILE_FILENAME may
// have moved out of dir.
func printBanner(out io.Writer, w *worker.Worker, kafka, seeds, offsets, dir string, demo, temp bool, self string) {
	url := "http://127.0.0.1:8083"
	if addrs := w.RESTAddrs(); len(addrs) > 0 {
		url = addrs[0]
	}
	// A REST API on every interface is reached at localhost.
	if u := strings.TrimPrefix(url, "http://"); strings.HasPrefix(u, "0.0.0.0:") || strings.HasPrefix(u, "[::]:") {
		_, port, _ := net.SplitHostPort(u)
		url = "http://localhost:" + port
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Sluice dev is running (Ctrl-C to stop).")
	if kafka == seeds {
		fmt.Fprintf(out, "  Kafka (embedded, in this process): %s\n", seeds)
	} else {
		fmt.Fprintf(out, "  Kafka (CONNECT_BOOTSTRAP_SERVERS): %s (the embedded broker, %s, is unused)\n", kafka, seeds)
	}
	fmt.Fprintf(out, "  REST API (Kafka Connect's):        %s\n", url)
	fmt.Fprintf(out, "  Offsets file:                      %s\n", offsets)
	if demo {
		outFile := filepath.Join(dir, demoOutputFile)
		fmt.Fprintf(out, "  Demo pipeline:  %s (datagen, orders) -> topic %s -> %s (FileStreamSink)\n", demoSourceName, demoTopic, demoSinkName)
		fmt.Fprintf(out, "  Output file:    %s\n", outFile)
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Try:")
		fmt.Fprintf(out, "  tail -f %s\n", outFile)
		fmt.Fprintf(out, "  curl -s '%s/connectors?expand=status'\n", url)
		fmt.Fprintf(out, "  curl -s -X PUT %s/connectors/%s/pause\n", url, demoSourceName)
		fmt.Fprintf(out, "  %s connectors list --url %s --expand status\n", self, url)
	} else {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Try:")
		fmt.Fprintf(out, "  curl -s %s/connector-plugins\n", url)
	}
	if temp {
		fmt.Fprintf(out, "(%s is removed on exit; --dir keeps it.)\n", dir)
	}
	fmt.Fprintln(out)
}
