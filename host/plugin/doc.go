// Package plugin is the worker's plugin manager: it finds connector plugins
// in plugin.path, launches one process per connector instance, task or
// describe/validate request, speaks the contract of proto/sluice/plugin/v1
// to it through hashicorp/go-plugin, and ends it.
//
// # Process model
//
// Launch starts a binary with go-plugin (gRPC only, handshake and plugin set
// from pluginsdk/wire) and returns an Instance once the handshake is done.
// The manager runs the process itself (go-plugin's RunnerFunc) so that it
// knows the exit status and can kill what the plugin started:
//
//   - Each plugin gets its own process group (Setpgid). A Ctrl-C at the
//     worker's terminal reaches the terminal's foreground group only, so
//     plugins do not die under the worker's feet; the worker stops them
//     itself (Stop calls, then Kill). A hard kill signals the whole group,
//     so children of a plugin (a wrapper script's interpreter, a helper)
//     die with it.
//   - Pdeathsig=SIGKILL: when the worker dies without cleaning up
//     (SIGKILL, OOM killer), its plugins die too. Linux ties this to the OS
//     thread that forked; do not call Launch from a goroutine locked to its
//     thread (runtime.LockOSThread) that may exit.
//   - Stdin is /dev/null. Stdout carries the handshake. Stderr lines are
//     re-logged by go-plugin (hclog JSON lines keep level and fields,
//     "[LEVEL]" prefixes set the level, other lines are debug); the output a
//     Go plugin writes to os.Stdout/os.Stderr after go-plugin's Serve comes
//     over go-plugin's stdio stream and is logged at info (or its [LEVEL]).
//     Every line goes to the sub-logger "plugin.<binary>" tagged
//     connector=<name> task=<n>, and the last Options.TailLines lines of
//     both paths are kept for crash reports.
//   - Sockets live in the worker's socket directory (Options.SocketDir): one
//     go-plugin directory per process (PLUGIN_UNIX_SOCKET_DIR) and, when
//     Spec.Worker is set, the Worker callback service at worker-<n>.sock,
//     whose target the instance reports as WorkerTarget; it admits only the
//     plugin process and processes it started (peer credentials). The
//     directory is private (0700). An instance removes its sockets when it ends, crash
//     included; New clears what a dead worker left, Close clears the rest.
//
// # Environment
//
// A plugin inherits nothing from the worker's environment (credentials,
// Kafka settings, HOME). It gets PATH, the variables documented in
// pluginsdk/wire (SLUICE_CONNECTOR, SLUICE_TASK — empty for a connector,
// describe or validate process —, SLUICE_LOG_LEVEL, SLUICE_WORKER_ID), and
// go-plugin's own (the magic cookie, PLUGIN_PROTOCOL_VERSIONS,
// PLUGIN_MIN_PORT, PLUGIN_MAX_PORT, PLUGIN_UNIX_SOCKET_DIR), and GOMEMLIMIT
// when Options.MemoryLimit is set. The working directory is the worker's, as
// for a Kafka Connect plugin in the worker's JVM, so relative paths in
// connector configs mean the same thing.
//
// # Memory
//
// Plugin processes are the OOM killer's preferred victims, and with
// Options.MemoryLimit one whose private resident memory grows past the limit
// is killed, the reason (naming sluice.plugin.memory.max.bytes) in its
// calls' errors and Instance.KillReason (memory.go).
//
// # Calls, deadlines, crashes and hangs
//
// The Instance's clients (Plugin, Connector, SourceTask, SinkTask) are the
// generated gRPC clients behind an interceptor, so every method follows
// the same rules:
//
//   - Every call has a deadline: the caller's, or Options.CallTimeout when
//     ctx has none.
//   - Every error is a *wire.Error (errors.As), wrapped with the method
//     ("SourceTask.Poll: ..."). Statuses map as plugin.proto says
//     (wire.FromStatus), with the plugin's trace trailer.
//   - A call that misses its deadline means a hung plugin: the process is
//     SIGKILLed before the call returns, and the error is KindTimeout. The
//     call returns at the deadline plus the time to reap the process.
//   - A process that dies (panic, os.Exit, signal) gives KindCrashed, whose
//     Trace holds the plugin's last output lines and its exit status. So
//     does every later call, at once; Exited is true and Done is closed.
//     A broken connection to a live process is treated the same way, after
//     killing it.
//   - A caller that cancels its ctx abandons the call (KindTimeout, the
//     plugin is left running).
//
// Kill asks go-plugin for a graceful shutdown (the plugin's gRPC server
// stops, its Serve returns), and SIGKILLs the group after Options.KillGrace
// or just before ctx's deadline; it never blocks past that deadline. A
// plugin without go-plugin's controller service costs the grace; a Go
// plugin exits in milliseconds even with a handler stuck.
//
// # Discovery
//
// Scan describes every executable file in each plugin.path directory and
// one level below (plugin.path/<connector>/<binary>), caches the answer by
// path, size and modification time, and reports files it cannot use as
// Problems instead of failing. Lookup resolves connector.class values as
// Kafka Connect does: full class name, simple name, simple name without
// "Connector", and declared aliases; ambiguous and unknown names are errors
// that list the candidates. Scan does not watch the directories; callers
// rescan, or run Watch.
//
// Every file Scan considers is executed, without arguments and with the
// environment above: plugin.path must hold plugins only.
package plugin
