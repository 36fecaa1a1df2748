package worker

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluice-io/sluice/host/plugin"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// A Poll answer in shared memory the plugin never accepted (declined, or
// never offered), or one that also carries records inline, is refused with
// an error saying so: neither read from a region that is not the
// plugin's to write, nor with inline records dropped unseen.
func TestSourcePluginRefusesBadSharedAnswers(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bad")
	cmd := exec.Command("go", "build", "-o", bin, "../plugin/internal/testplugins/bad")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the bad plugin: %v\n%s", err, out)
	}
	m, err := plugin.New(plugin.Options{Logger: hclog.NewNullLogger(), WorkerID: "test-worker:8083", SocketDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	})
	for _, tc := range []struct {
		name, mode string
		region     int64
		want       string
	}{
		{"declined", "shared-unasked", 1 << 20, "the plugin answered a poll through shared memory it had not accepted"},
		{"never offered", "shared-unasked", 0, "the plugin answered a poll through shared memory it had not accepted"},
		{"both", "shared-and-inline", 1 << 20, "the plugin answered a poll both through shared memory and inline (1 records)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			in, err := m.Launch(ctx, plugin.Spec{Path: bin, Connector: "bad", SharedMemoryBytes: tc.region})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = in.Kill(ctx) }()
			p := &sourcePlugin{in: in}
			p.UsePollPool(wire.NewPollPool(1))
			if _, err := p.Start(ctx, &pluginv1.SourceTaskStartRequest{Config: map[string]string{"mode": tc.mode}}); err != nil {
				t.Fatal(err)
			}
			b, err := p.Poll(ctx, &pluginv1.PollRequest{MaxRecords: 10, MaxBytes: 1 << 20, TimeoutMs: 100})
			if err == nil || wire.KindOf(err) != wire.KindFatal || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Poll = %v records, %v (kind %v); want %q", b.Len(), err, wire.KindOf(err), tc.want)
			}
		})
	}
}
