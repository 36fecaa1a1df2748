package conformance

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/sluice-io/sluice/pluginsdk/wire"
)

// gracefulKill is how long a clean shutdown may take; go-plugin itself waits
// 2 s for the process before it sends SIGKILL.
const gracefulKill = 1500 * time.Millisecond

// proc is one launched plugin process.
type proc struct {
	client  *goplugin.Client
	cmd     *exec.Cmd
	clients *wire.Clients
	logs    *logBuffer
	killed  bool
}

// logBuffer keeps what the plugin logged, to show when a check fails.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// tail returns the last n lines.
func (l *logBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := strings.Split(strings.TrimRight(l.buf.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// launch starts the binary as the worker would and dispenses its clients.
// The process is killed when the test ends if the test did not kill it.
func launch(t *testing.T, binary string, opts *Options) (*proc, error) {
	t.Helper()
	cmd := exec.Command(binary)
	// The worker gives plugins a bare environment; PATH lets scripts find
	// their interpreter.
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), wire.EnvLogLevel + "=debug"}, opts.Env...)
	setPdeathsig(cmd)
	p := &proc{cmd: cmd, logs: &logBuffer{}}
	p.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.VersionedPlugins(wire.Servers{}),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		StartTimeout:     30 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: "plugin", Output: p.logs, Level: hclog.Trace,
		}),
	})
	t.Cleanup(func() {
		if !p.killed {
			p.client.Kill()
		}
		if t.Failed() {
			t.Logf("last plugin log lines:\n%s", p.logs.tail(40))
		}
	})
	rpc, err := p.client.Client()
	if err != nil {
		return nil, fmt.Errorf("launch %s: handshake: %w", binary, err)
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		return nil, fmt.Errorf("launch %s: dispense %q: %w", binary, wire.PluginName, err)
	}
	clients, ok := raw.(*wire.Clients)
	if !ok {
		return nil, fmt.Errorf("launch %s: dispensed %T, not *wire.Clients", binary, raw)
	}
	p.clients = clients
	return p, nil
}

// kill shuts the process down as the worker does and checks it went cleanly:
// promptly (through GRPCController.Shutdown) and with exit status 0.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	start := time.Now()
	p.client.Kill()
	p.killed = true
	took := time.Since(start)
	if !p.client.Exited() {
		t.Fatalf("the plugin process has not exited after Kill")
	}
	st := p.cmd.ProcessState
	switch {
	case st == nil:
		t.Fatalf("the plugin process was not reaped after Kill")
	case !st.Success():
		t.Fatalf("the plugin process exited with %v after Kill (took %v); it must exit 0 on GRPCController.Shutdown", st, took.Round(time.Millisecond))
	case took > gracefulKill:
		t.Fatalf("Kill took %v; a plugin must exit promptly on GRPCController.Shutdown", took.Round(time.Millisecond))
	}
}
