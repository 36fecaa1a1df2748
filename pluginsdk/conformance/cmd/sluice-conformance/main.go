// Command sluice-conformance checks a plugin binary, in any language,
// against the Sluice plugin contract, and prints go test's report:
//
//	sluice-conformance [-options file.json] [-v] [-run regexp] /path/to/plugin
//
// The options file says what to exercise per class (see conformance.Options):
//
//	{"classes": {"io.example.MySource": {
//	    "valid_config": {"topic": "t"},
//	    "invalid_config": {"topic": ""}, "invalid_keys": ["topic"],
//	    "source_records": 10, "resume": true}}}
//
// Without options only the handshake and Describe are checked. The exit
// status is 0 when every check passed, 1 otherwise, 2 on bad usage.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/conformance"
)

func main() {
	testing.Init()
	optsPath := flag.String("options", "", "JSON file of conformance options")
	verbose := flag.Bool("v", false, "print every check, not only failures")
	run := flag.String("run", "", "run only the checks matching this regexp (go test -run syntax)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [-options file.json] [-v] [-run regexp] /path/to/plugin\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	bin, err := filepath.Abs(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var opts conformance.Options
	if *optsPath != "" {
		if opts, err = conformance.LoadOptions(*optsPath); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if *verbose {
		_ = flag.Set("test.v", "true")
	}
	if *run != "" {
		_ = flag.Set("test.run", *run)
	}
	tests := []testing.InternalTest{{
		Name: "Conformance",
		F:    func(t *testing.T) { conformance.Run(t, bin, opts) },
	}}
	// testing.Main runs the tests as go test would and exits with its status.
	testing.Main(func(pat, s string) (bool, error) { return regexp.MatchString(pat, s) }, tests, nil, nil)
}
