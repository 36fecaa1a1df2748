// Package childproc runs the child processes of integration tests (Kafka
// JVMs, sluice workers) so that they can never outlive the test process:
// every child gets Pdeathsig=SIGKILL, its output goes to a log file that
// tests can tail when something fails, and exactly one goroutine per child
// reaps it.
package childproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Spec describes a child process.
type Spec struct {
	Path string   // executable, looked up in PATH if it has no slash
	Args []string // arguments after the executable
	Dir  string   // working directory; "" = current
	// Env is appended to the test process's environment (later entries win).
	Env []string
	// LogPath receives stdout and stderr. The file is opened for append so
	// that restarts of the same node or worker keep earlier runs' output.
	LogPath string
}

// Process is a running (or exited) child.
type Process struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	mu      sync.Mutex
	waitErr error
}

// Start starts the child. The fork happens on a fresh goroutine: Pdeathsig
// fires when the *OS thread* that forked the child exits, and a new goroutine
// is never bound to a thread that the caller may have locked with
// runtime.LockOSThread (a locked thread exits with its goroutine).
func Start(spec Spec) (*Process, error) {
	if spec.LogPath == "" {
		return nil, errors.New("childproc: LogPath is required")
	}
	logf, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", spec.LogPath, err)
	}
	fmt.Fprintf(logf, "=== %s start: %s %q\n", time.Now().Format(time.RFC3339Nano), spec.Path, spec.Args)

	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Stdin = nil
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Pdeathsig: syscall.SIGKILL,
		// Own process group, so a Ctrl-C on the terminal reaches the test
		// binary, which then stops children in order, instead of killing
		// the children underneath it first.
		Setpgid: true,
	}

	started := make(chan error, 1)
	go func() { started <- cmd.Start() }()
	if err := <-started; err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", spec.Path, err)
	}

	p := &Process{cmd: cmd, logPath: spec.LogPath, done: make(chan struct{})}
	// The reaper: the only goroutine that calls cmd.Wait. It ends when the
	// child exits, which Kill guarantees.
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logf, "=== %s exit: %v\n", time.Now().Format(time.RFC3339Nano), exitText(err))
		logf.Close()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// Pid is the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogPath is the file that receives the child's output.
func (p *Process) LogPath() string { return p.logPath }

// Done is closed once the child has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the child has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitErr is the error cmd.Wait returned (nil for exit status 0). Only
// meaningful once Exited is true.
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

// Wait blocks until the child exits or ctx ends. It returns the child's exit
// error (nil for status 0), or ctx's error if the child is still running.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.ExitErr()
	case <-ctx.Done():
		return fmt.Errorf("wait for pid %d: %w", p.Pid(), ctx.Err())
	}
}

// Signal sends sig to the child if it is still running.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %v to pid %d: %w", sig, p.Pid(), err)
	}
	return nil
}

// Stop asks the child to exit with SIGTERM and waits for it. If ctx ends
// first the child is SIGKILLed, and Stop returns an error saying so. The
// child's own exit status is not an error here: a JVM stopped by SIGTERM
// exits with 143.
func (p *Process) Stop(ctx context.Context) error {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		if err := p.Kill(); err != nil {
			return err
		}
		return fmt.Errorf("pid %d did not exit after SIGTERM, killed: %w", p.Pid(), ctx.Err())
	}
}

// Kill sends SIGKILL and waits until the child is reaped. A SIGKILLed
// process always dies, so this does not need a context.
func (p *Process) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	return nil
}

// LogTail returns the last n lines of the child's log.
func (p *Process) LogTail(n int) string { return LogTail(p.logPath, n) }

// LogTail returns the last n lines of the file at path (at most the last
// 256 KiB are read), or a note saying why it could not be read.
func LogTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const maxRead = 256 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxRead {
		if _, err := f.Seek(-maxRead, io.SeekEnd); err != nil {
			return fmt.Sprintf("(seek log: %v)", err)
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(read log: %v)", err)
	}
	b = bytes.TrimRight(b, "\n")
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
