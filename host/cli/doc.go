// Package cli is the REST client side of the sluice binary: the commands
// that manage connectors on any worker speaking Kafka Connect's REST API,
// Sluice or Kafka Connect itself.
//
// Entry point: host/cmd/sluice hands every argument after the binary name
// to Run when the first one is "connectors", "plugins", "validate" or
// "loggers" (Commands lists them):
//
//	os.Exit(cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr))
//
// Commands:
//
//	sluice connectors list [--expand status|info]
//	sluice connectors get|status|delete|pause|resume|stop NAME
//	sluice connectors create [FILE] [-c key=value]... [--name NAME] [--initial-state RUNNING|PAUSED|STOPPED]
//	sluice connectors update NAME [FILE] [-c key=value]... [--unset key]...
//	sluice connectors restart NAME [--include-tasks] [--only-failed] [--task N]
//	sluice connectors offsets NAME [get | alter FILE | reset]
//	sluice plugins [--all]
//	sluice validate FILE [-c key=value]...
//	sluice loggers [list | get NAME | set NAME LEVEL [--scope worker|cluster]]
//
// FILE is a connector config as connect-standalone reads one: a JSON object
// of settings, a JSON create request {"name","config","initial_state"}, or a
// .properties file; -c settings are added on top. update with a FILE
// replaces the whole config (PUT); with only -c and --unset it changes just
// those keys (PATCH).
//
// Every command takes --url (default $SLUICE_URL, else
// http://localhost:8083), -o table|json and --timeout. Tables are for
// people; -o json prints the worker's JSON answer for scripts. Exit status:
// 0 on success, 1 when the worker answers an error (its message is printed)
// or cannot be reached, or when validate finds errors, 2 for a usage error.
// Flags may come before or after the positional arguments.
package cli
