package plugin

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// A task launched with shared memory has the region open as descriptor 3
// and offers it; a plugin that does not know the field (the test plugin
// answers without shared_memory) keeps working inline. Without
// SharedMemoryBytes there is no region and no descriptor 3.
func TestSharedMemoryOfferedAndDeclined(t *testing.T) {
	m, _ := newManager(t, Options{})
	in := launch(t, m, Spec{Path: goodBin, Connector: "orders", Task: 0, SharedMemoryBytes: 1 << 20})
	offer := in.SharedMemory()
	if offer.GetFd() != sharedFD || offer.GetSize() != 1<<20 || in.Shared() == nil || in.Shared().Size() != 1<<20 {
		t.Fatalf("offer %v, region %v", offer, in.Shared())
	}
	link, err := os.Readlink("/proc/" + strconv.Itoa(in.Pid()) + "/fd/3")
	if err != nil || !strings.Contains(link, "memfd:sluice-") {
		t.Fatalf("descriptor 3 of the plugin: %q, %v", link, err)
	}
	ctx := ctxT(t, 20*time.Second)
	resp, err := in.SourceTask().Start(ctx, &pluginv1.SourceTaskStartRequest{SharedMemory: offer})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSharedMemory() {
		t.Fatal("the test plugin cannot have accepted shared memory")
	}
	poll, err := in.SourceTask().Poll(ctx, &pluginv1.PollRequest{MaxRecords: 500})
	if err != nil {
		t.Fatal(err)
	}
	if poll.GetShared() != nil || len(poll.GetRecords()) != 500 {
		t.Fatalf("inline poll answer: shared %v, %d records", poll.GetShared(), len(poll.GetRecords()))
	}

	plain := launch(t, m, Spec{Path: goodBin, Connector: "orders", Task: 1})
	if plain.SharedMemory() != nil || plain.Shared() != nil {
		t.Fatal("a region without SharedMemoryBytes")
	}
	if _, err := os.Readlink("/proc/" + strconv.Itoa(plain.Pid()) + "/fd/3"); err == nil {
		// Go's runtime may open descriptors of its own; only a memfd
		// would be ours.
		if link, _ := os.Readlink("/proc/" + strconv.Itoa(plain.Pid()) + "/fd/3"); strings.Contains(link, "memfd:sluice-") {
			t.Fatalf("descriptor 3 is a shared region: %s", link)
		}
	}

	// The worker's mapping goes when the instance ends.
	killCtx := ctxT(t, 10*time.Second)
	if err := in.Kill(killCtx); err != nil {
		t.Fatal(err)
	}
	<-in.Done()
	if _, ok := in.Shared().Place(&pluginv1.PutRequest{}); ok {
		t.Fatal("placed into the region of an ended instance")
	}
}
