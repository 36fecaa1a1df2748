package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Exit statuses of Run.
const (
	ExitOK    = 0
	ExitError = 1 // the worker answered an error, or could not be reached
	ExitUsage = 2
)

// DefaultURL is the worker Run talks to without --url or $SLUICE_URL.
const DefaultURL = "http://localhost:8083"

// Commands are the first arguments Run handles; the sluice binary hands
// these to Run.
var Commands = []string{"connectors", "plugins", "validate", "loggers"}

// errUsage marks an error in the command line; Run exits ExitUsage.
var errUsage = errors.New("usage")

// env is what one command runs with.
type env struct {
	ctx    context.Context
	out    io.Writer
	errOut io.Writer
	json   bool
	client *client
}

// common are the flags every command takes.
type common struct {
	url     string
	output  string
	timeout time.Duration
}

func (c *common) register(fs *flag.FlagSet) {
	def := os.Getenv("SLUICE_URL")
	if def == "" {
		def = DefaultURL
	}
	fs.StringVar(&c.url, "url", def, "worker REST URL (env SLUICE_URL)")
	fs.StringVar(&c.output, "o", "table", "output: table or json")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "HTTP request timeout")
}

// Run runs one command line (without the binary name) and returns the exit
// status.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	var err error
	switch args[0] {
	case "connectors", "connector":
		err = runConnectors(ctx, args[1:], stdout, stderr)
	case "plugins":
		err = runPlugins(ctx, args[1:], stdout, stderr)
	case "validate":
		err = runValidate(ctx, args[1:], stdout, stderr)
	case "loggers":
		err = runLoggers(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	default:
		fmt.Fprintf(stderr, "sluice: unknown command %q\n%s", args[0], usage)
		return ExitUsage
	}
	return exitStatus(err, stderr)
}

const usage = `Usage: sluice <command> [flags]

Commands that manage connectors through a worker's REST API:
  connectors list [--expand status|info]
  connectors get|status|delete|pause|resume|stop NAME
  connectors create [FILE] [-c key=value]... [--name NAME] [--initial-state STATE]
  connectors update NAME [FILE] [-c key=value]... [--unset key]...
  connectors restart NAME [--include-tasks] [--only-failed] [--task N]
  connectors offsets NAME [get | alter FILE | reset]
  plugins [--all]
  validate FILE [-c key=value]...
  loggers [list | get NAME | set NAME LEVEL [--scope worker|cluster]]

Flags of every command: --url URL (default $SLUICE_URL or http://localhost:8083),
-o table|json, --timeout DURATION.
`

// exitStatus prints err, if any, and maps it to an exit status.
func exitStatus(err error, stderr io.Writer) int {
	var ae *apiError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "sluice: %v\n", err)
		return ExitUsage
	case errors.As(err, &ae) && ae.raw != nil:
		// -o json: the worker's error body, as it was.
		fmt.Fprintf(stderr, "%s\n", ae.raw)
		return ExitError
	case errors.Is(err, errFound):
		return ExitError
	}
	fmt.Fprintf(stderr, "sluice: %v\n", err)
	return ExitError
}

// errFound reports a command that worked but found a problem it already
// printed (validate with errors).
var errFound = errors.New("problems found")

// newFlags is a command's flag set with the common flags.
func newFlags(name string, stderr io.Writer, c *common) *flag.FlagSet {
	fs := flag.NewFlagSet("sluice "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage of %s:\n", fs.Name())
		fs.PrintDefaults()
	}
	c.register(fs)
	return fs
}

// parse reads flags anywhere among args and returns the positional
// arguments; everything after "--" is positional. Help asked for (-h,
// --help) is printed on stdout: it is what the user wanted, not an error.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	var pos []string
	for {
		if err := parseFlags(fs, args, stdout); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if c, ok := f.Value.(interface{ check() error }); ok && err == nil {
			err = c.check()
		}
	})
	if err != nil {
		return nil, err
	}
	return append(pos, tail...), nil
}

// parseFlags is fs.Parse, with the usage on stdout when help is asked for
// and on fs's output (stderr) after a mistake.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	errOut := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(errOut)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(errOut)
		return err
	}
	errOut.Write(buf.Bytes())
	return err
}

// start checks the common flags and builds the command's env.
func (c *common) start(ctx context.Context, stdout, stderr io.Writer) (*env, error) {
	switch c.output {
	case "table", "json":
	default:
		return nil, fmt.Errorf("%w: -o %q: must be table or json", errUsage, c.output)
	}
	cl, err := newClient(c.url, c.timeout, c.output == "json")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return &env{ctx: ctx, out: stdout, errOut: stderr, json: c.output == "json", client: cl}, nil
}

// settings is a repeatable -c key=value flag.
type settings []string

func (s *settings) String() string { return strings.Join(*s, ",") }
func (s *settings) Set(v string) error {
	// Checked after parsing, by check: the flag package would quote the
	// whole argument in its error, and the value may be a password.
	*s = append(*s, v)
	return nil
}

// check refuses a setting without "=", naming only its key: what comes
// before a ':' or a space (key:value is .properties syntax) may be followed
// by a secret.
func (s *settings) check() error {
	for _, kv := range *s {
		if strings.Contains(kv, "=") {
			continue
		}
		key := kv
		if i := strings.IndexAny(kv, ": \t"); i >= 0 {
			key = kv[:i] + "..."
		}
		return fmt.Errorf("%w: -c %s: want key=value", errUsage, key)
	}
	return nil
}

// apply adds the settings to cfg.
func (s settings) apply(cfg map[string]string) {
	for _, kv := range s {
		k, v, _ := strings.Cut(kv, "=")
		cfg[strings.TrimSpace(k)] = v
	}
}

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func need(pos []string, n int, what string) error {
	if len(pos) != n {
		return fmt.Errorf("%w: want %s", errUsage, what)
	}
	return nil
}
