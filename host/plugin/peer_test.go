package plugin

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// A process other than the task's plugin cannot use the task's Worker
// callback service; the plugin still can.
func TestWorkerCallbackRefusesOtherProcesses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peer credentials are checked on Linux only")
	}
	m, logs := newManager(t, Options{})
	fw := &fakeWorker{}
	in := launch(t, m, Spec{Path: goodBin, Connector: "peer", Task: 0, Worker: fw})
	ctx := ctxT(t, 10*time.Second)

	conn, err := grpc.NewClient(in.WorkerTarget(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cctx := ctxT(t, 2*time.Second)
	_, err = pluginv1.NewWorkerClient(conn).SourceOffsets(cctx, &pluginv1.SourceOffsetsRequest{Partitions: [][]byte{[]byte(`{"p":"intruder"}`)}})
	if err == nil {
		t.Fatal("a process other than the plugin called the task's worker callback service")
	}

	// The plugin's own call goes through.
	if _, err := in.SourceTask().Start(ctx, &pluginv1.SourceTaskStartRequest{WorkerTarget: in.WorkerTarget(), Config: map[string]string{"marker": `{"p":7}`}}); err != nil {
		t.Fatal(err)
	}
	fw.mu.Lock()
	got := append([]string(nil), fw.parts...)
	fw.mu.Unlock()
	if len(got) != 1 || got[0] != `{"p":7}` {
		t.Fatalf("worker saw partitions %q, want only the plugin's", got)
	}
	want := "is not the plugin process"
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log does not say why the connection was refused (%q):\n%s", want, logs.String())
	}
}

func TestDescendsFrom(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc ancestry is read on Linux only")
	}
	self, parent := os.Getpid(), os.Getppid()
	if !descendsFrom(self, self) {
		t.Error("a process does not descend from itself")
	}
	if !descendsFrom(self, parent) {
		t.Error("the test does not descend from its parent")
	}
	if descendsFrom(parent, self) {
		t.Error("the parent descends from the test")
	}
	child := exec.Command("sleep", "5")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	if !descendsFrom(child.Process.Pid, self) {
		t.Error("a child of the test does not descend from it")
	}
	if descendsFrom(child.Process.Pid, parent+1_000_000) {
		t.Error("a child descends from a process that does not exist")
	}
}
