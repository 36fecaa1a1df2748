package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"github.com/hashicorp/go-plugin/runner"
)

// process is the go-plugin runner of one plugin process. The manager uses
// its own runner (go-plugin's RunnerFunc) rather than ClientConfig.Cmd
// because it needs three things go-plugin's command runner keeps to itself:
// the exit status, a signal when the process is gone (and its stderr fully
// read, since go-plugin drains the pipes before it calls Wait), and a hard
// kill that reaches the whole process group.
type process struct {
	cmd    *exec.Cmd
	name   string
	stdout io.ReadCloser
	stderr io.ReadCloser

	exited  chan struct{} // closed when Wait has reaped the process
	mu      sync.Mutex
	waitErr error
	reaped  bool
	state   *os.ProcessState
	started bool
	pid     int
}

var _ runner.Runner = (*process)(nil)

// newProcess prepares the command. env is the complete environment (no
// inheritance from the worker).
//
// Setpgid puts the plugin in its own process group: a Ctrl-C at the
// worker's terminal signals the terminal's foreground group, and the plugin
// must not see it; the worker stops its plugins itself (Stop calls, then
// Kill). It also lets a hard kill reach anything the plugin started.
// Pdeathsig kills the plugin when the worker dies without cleaning up
// (SIGKILL, OOM killer). Linux sends it when the forking OS thread exits;
// the Go runtime only retires threads whose goroutine exits while locked
// (runtime.LockOSThread), so Launch must not be called from such a goroutine.
// shared, if not nil, becomes descriptor 3 of the process (sharedFD).
func newProcess(path string, env []string, shared *os.File) (*process, error) {
	cmd := exec.Command(path)
	cmd.Env = env
	if shared != nil {
		cmd.ExtraFiles = []*os.File{shared}
	}
	cmd.Stdin = nil // /dev/null: a plugin has no business with the worker's terminal
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		_ = stdout.Close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	return &process{cmd: cmd, name: path, stdout: &breakLongLines{ReadCloser: stdout}, stderr: stderr, exited: make(chan struct{})}, nil
}

// maxStdoutLine is the longest line of a plugin's stdout go-plugin is
// given, well under the 64 KiB at which its reader (a bufio.Scanner, which
// reads the handshake and then drains stdout) gives up. Past that nothing
// reads the pipe, and a plugin that writes more to its stdout blocks for
// good: its calls then miss their deadlines.
const maxStdoutLine = 32 << 10

// breakLongLines passes a plugin's stdout on with a newline inserted after
// every maxStdoutLine bytes without one.
type breakLongLines struct {
	io.ReadCloser
	run int // bytes passed on since the last newline
}

func (b *breakLongLines) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.run >= maxStdoutLine {
		p[0] = '\n'
		b.run = 0
		return 1, nil
	}
	p = p[:min(len(p), maxStdoutLine-b.run)]
	n, err := b.ReadCloser.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		b.run = n - i - 1
	} else {
		b.run += n
	}
	return n, err
}

func (p *process) Start(context.Context) error {
	if err := p.cmd.Start(); err != nil {
		// exec failed: nothing will ever call Wait, so the process counts as
		// gone already.
		p.mu.Lock()
		p.waitErr = err
		p.reaped = true
		p.mu.Unlock()
		close(p.exited)
		return err
	}
	p.mu.Lock()
	p.started = true
	p.pid = p.cmd.Process.Pid
	p.mu.Unlock()
	// Before the plugin's own code is far along (memory.go). A failure
	// (not Linux, /proc not mounted) leaves the kernel's default.
	_ = setOOMScoreAdj(p.pid)
	return nil
}

// Wait is called once, by go-plugin, after stdout and stderr hit EOF.
func (p *process) Wait(context.Context) error {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.waitErr = err
	p.state = p.cmd.ProcessState
	p.reaped = true
	p.mu.Unlock()
	close(p.exited)
	return err
}

// Kill sends SIGKILL to the plugin's process group. go-plugin calls it when
// a graceful shutdown fails; the instance calls it at its hard-kill points.
func (p *process) Kill(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started || p.reaped {
		return nil
	}
	// The group id is the plugin's pid, which cannot be reused before the
	// plugin is reaped (checked above, under the lock Wait takes after
	// reaping) or while anything remains in its group.
	if err := syscall.Kill(-p.pid, syscall.SIGKILL); err != nil {
		if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("kill plugin %d: %w", p.pid, err)
		}
	}
	return nil
}

// exitStatus describes how the process ended ("exit status 3", "signal:
// killed"), or "" while it runs.
func (p *process) exitStatus() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !p.reaped:
		return ""
	case p.state != nil:
		return p.state.String()
	case p.waitErr != nil:
		return p.waitErr.Error()
	}
	return "exited"
}

func (p *process) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

func (p *process) Stdout() io.ReadCloser { return p.stdout }
func (p *process) Stderr() io.ReadCloser { return p.stderr }
func (p *process) Name() string          { return p.name }

// ID is the pid, or "" before the process started (go-plugin's Kill then
// has nothing to do).
func (p *process) ID() string {
	if pid := p.getPid(); pid != 0 {
		return strconv.Itoa(pid)
	}
	return ""
}

func (p *process) getPid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

func (p *process) Diagnose(context.Context) string {
	return "the file is not a Sluice plugin, was built for another platform, or wrote something else before the go-plugin handshake: " +
		"the handshake line (1|1|tcp|127.0.0.1:PORT|grpc) must be the first line the plugin writes to stdout, so a log line or banner printed before it " +
		"(a console.log at load, a debugger's) fails the launch; log to stderr"
}

func (p *process) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (p *process) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
