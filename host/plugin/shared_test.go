package plugin

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// The plugin's descriptor of the region cannot resize it: a shrunk file
// would make the worker's next read of the lost pages a SIGBUS, which would
// end the worker. The test opens the plugin's descriptor 3 as the plugin
// could use it, tries to shrink and to grow the file, and then checks that
// the worker still reads and writes the whole region.
func TestSharedMemoryCannotBeResizedByThePlugin(t *testing.T) {
	m, _ := newManager(t, Options{})
	in := launch(t, m, Spec{Path: goodBin, Connector: "orders", Task: 0, SharedMemoryBytes: 1 << 20})
	if in.Shared() == nil {
		t.Fatal("no shared region")
	}
	f, err := os.OpenFile("/proc/"+strconv.Itoa(in.Pid())+"/fd/3", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open the plugin's descriptor 3: %v", err)
	}
	defer f.Close()
	for _, size := range []int64{0, 4096, 2 << 20} {
		if err := f.Truncate(size); !errors.Is(err, unix.EPERM) {
			t.Errorf("truncate the region to %d bytes: %v, want EPERM", size, err)
		}
	}
	if st, err := f.Stat(); err != nil || st.Size() != 1<<20 {
		t.Fatalf("region size after the attempts: %v, %v", st, err)
	}
	// Writing through the descriptor is allowed (that is the region's
	// use), and the worker's mapping sees it.
	if _, err := f.WriteAt([]byte("plugin"), (1<<20)-6); err != nil {
		t.Fatalf("write through the plugin's descriptor: %v", err)
	}
	// A batch as large as the region fits almost to its last byte: the
	// worker touches every page without a fault.
	big := &pluginv1.PutRequest{Records: []*pluginv1.SinkRecord{{Topic: "t", Value: &pluginv1.Data{Kind: &pluginv1.Data_Raw{Raw: make([]byte, (1<<20)-256)}}}}}
	ref, ok := in.Shared().Place(big)
	if !ok {
		t.Fatal("a batch of nearly the region's size did not fit")
	}
	var got pluginv1.PutRequest
	if err := in.Shared().Take(ref, &got); err != nil {
		t.Fatalf("take back the placed batch: %v", err)
	}
	if len(got.GetRecords()) != 1 || len(got.GetRecords()[0].GetValue().GetRaw()) != (1<<20)-256 {
		t.Fatalf("took back %d records", len(got.GetRecords()))
	}
}
