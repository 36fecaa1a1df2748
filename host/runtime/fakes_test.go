package runtime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/storage"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// events is an ordered log shared by the fakes of one test, so tests can
// check the order of calls across the plugin and the offset store.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(format string, args ...any) {
	e.mu.Lock()
	e.log = append(e.log, fmt.Sprintf(format, args...))
	e.mu.Unlock()
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.log...)
}

// indexOf returns the index of the last event starting with prefix, or -1.
func (e *events) lastIndex(prefix string) int {
	l := e.list()
	for i := len(l) - 1; i >= 0; i-- {
		if strings.HasPrefix(l[i], prefix) {
			return i
		}
	}
	return -1
}

// process is what both fakes share: Done, Kill, crashes.
type process struct {
	ev       *events
	done     chan struct{}
	doneOnce sync.Once
	mu       sync.Mutex
	crashed  bool
	killed   int
}

func newProcess(ev *events) process { return process{ev: ev, done: make(chan struct{})} }

func (p *process) Done() <-chan struct{} { return p.done }
func (p *process) WorkerTarget() string  { return "unix:///fake/worker.sock" }

func (p *process) Kill(context.Context) error {
	p.mu.Lock()
	p.killed++
	p.mu.Unlock()
	p.ev.add("kill")
	p.doneOnce.Do(func() { close(p.done) })
	return nil
}

const crashTrace = "panic: boom\n\ngoroutine 1 [running]:\nmain.poll()"

// crash makes the process die: Done closes and every call fails as the
// plugin manager reports a dead plugin.
func (p *process) crash() {
	p.mu.Lock()
	p.crashed = true
	p.mu.Unlock()
	p.doneOnce.Do(func() { close(p.done) })
}

func (p *process) crashErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.crashed {
		return nil
	}
	return &wire.Error{Kind: wire.KindCrashed, Message: "plugin exited: exit status 2", Trace: crashTrace}
}

// CrashError implements CrashReporter.
func (p *process) CrashError() error { return p.crashErr() }

func (p *process) kills() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// fakeSource is an in-process SourcePlugin that hands out sequenced records
// and records what it is told.
type fakeSource struct {
	process
	// gen builds record seq; the default writes 1 KiB raw values to topic
	// "t", partition seq%3, source partition {"sp":seq%2}, offset {"o":seq}.
	gen        func(seq uint64) *data.SourceRecord
	limit      uint64 // records to hand out in total; 0: no limit
	recordAcks bool
	stopHang   bool
	// pollHook runs at the start of each Poll.
	pollHook func(req *pluginv1.PollRequest)
	// pollErr, when set, may fail a Poll (after its acknowledgements were
	// taken, as the SDK takes them) with what it returns; n counts the
	// Polls from 1.
	pollErr func(n int) error
	// ackErr, when set, fails every Ack call (after taking its
	// acknowledgements).
	ackErr error
	// startErr, when set, fails Start.
	startErr error
	// quickEmpty makes empty answers come at once, ignoring the timeout.
	quickEmpty bool
	// answer, when set, makes the Poll answer of the records handed out
	// (the first with sequence number first), in place of answer.
	answer func(first uint64, recs []*data.SourceRecord) (*wire.PollBatch, error)
	// usePool, when set, is given the task's pool (PooledPoller).
	usePool func(*wire.PollPool)
	// region is the shared memory of the default answers; shared counts
	// the answers read from it.
	region *wire.SharedRegion
	shared int

	mu           sync.Mutex
	worker       pluginv1.WorkerServer
	nextSeq      uint64
	polls        int
	ackedThrough uint64
	recAcks      []*pluginv1.RecordAck
	commits      int
	startReq     *pluginv1.SourceTaskStartRequest
}

func newFakeSource(ev *events) *fakeSource {
	return &fakeSource{process: newProcess(ev), nextSeq: 1}
}

func defaultSourceRecord(seq uint64) *data.SourceRecord {
	v := make([]byte, 1024)
	copy(v, fmt.Sprintf("value-%d", seq))
	return &data.SourceRecord{
		Record: data.Record{
			Topic: "t", Partition: int32(seq % 3),
			Key: data.Raw(fmt.Sprintf("k%d", seq)), Value: data.Raw(v),
		},
		SourcePartition: map[string]any{"sp": int64(seq % 2)},
		SourceOffset:    map[string]any{"o": int64(seq)},
	}
}

func (f *fakeSource) launch(_ context.Context, w pluginv1.WorkerServer) (SourcePlugin, error) {
	f.mu.Lock()
	f.worker = w
	f.mu.Unlock()
	f.ev.add("launch")
	return f, nil
}

func (f *fakeSource) Start(_ context.Context, req *pluginv1.SourceTaskStartRequest) (*pluginv1.SourceTaskStartResponse, error) {
	if err := f.crashErr(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.startReq = req
	f.mu.Unlock()
	f.ev.add("start")
	if f.startErr != nil {
		return nil, f.startErr
	}
	return &pluginv1.SourceTaskStartResponse{RecordAcks: f.recordAcks}, nil
}

// UsePollPool implements PooledPoller.
func (f *fakeSource) UsePollPool(p *wire.PollPool) {
	f.ev.add("pool")
	if f.usePool != nil {
		f.usePool(p)
	}
}

func (f *fakeSource) takeAcks(b *pluginv1.AckBatch) {
	if b == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b.AckedThrough > f.ackedThrough {
		f.ackedThrough = b.AckedThrough
	}
	f.recAcks = append(f.recAcks, b.Records...)
}

func (f *fakeSource) Poll(ctx context.Context, req *pluginv1.PollRequest) (*wire.PollBatch, error) {
	if err := f.crashErr(); err != nil {
		return nil, err
	}
	if f.pollHook != nil {
		f.pollHook(req)
	}
	f.takeAcks(req.Acks)
	f.mu.Lock()
	f.polls++
	if f.pollErr != nil {
		if err := f.pollErr(f.polls); err != nil {
			f.mu.Unlock()
			return nil, err
		}
	}
	gen := f.gen
	if gen == nil {
		gen = defaultSourceRecord
	}
	var recs []*data.SourceRecord
	size := 0
	first := f.nextSeq
	for uint32(len(recs)) < req.MaxRecords && (f.limit == 0 || f.nextSeq <= f.limit) {
		r := gen(f.nextSeq)
		n := approxSize(r)
		if len(recs) > 0 && size+n > int(req.MaxBytes) {
			break
		}
		size += n
		recs = append(recs, r)
		f.nextSeq++
	}
	f.mu.Unlock()
	if len(recs) == 0 {
		wait := min(time.Duration(req.TimeoutMs)*time.Millisecond, 20*time.Millisecond)
		if f.quickEmpty {
			wait = 0
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, &wire.Error{Kind: wire.KindTimeout, Message: "call abandoned: " + ctx.Err().Error()}
		}
		return wire.NewPollBatch(&pluginv1.PollResponse{}), nil
	}
	if f.answer != nil {
		return f.answer(first, recs)
	}
	return f.answerOf(first, recs)
}

// answerOf is the answer of a plugin that accepted shared memory, read as
// the worker reads it: every other answer through the region (TakePoll),
// the others inline (NewPollBatch), as when a batch does not fit.
func (f *fakeSource) answerOf(first uint64, recs []*data.SourceRecord) (*wire.PollBatch, error) {
	schemas, precs, err := wire.EncodeSourceRecords(recs)
	if err != nil {
		return nil, err
	}
	resp := &pluginv1.PollResponse{Schemas: schemas, Records: precs, FirstSeq: first}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.polls%2 == 0 {
		if f.region == nil {
			f.region = wire.NewSharedRegion(make([]byte, 4<<20), nil)
		}
		if ref, ok := f.region.Place(resp); ok {
			f.shared++
			return f.region.TakePoll(ref)
		}
	}
	return wire.NewPollBatch(resp), nil
}

func approxSize(r *data.SourceRecord) int {
	n := 0
	for _, v := range []any{r.Key, r.Value} {
		switch x := v.(type) {
		case data.Raw:
			n += len(x)
		case string:
			n += len(x)
		}
	}
	return n
}

func (f *fakeSource) Ack(_ context.Context, req *pluginv1.AckRequest) error {
	if err := f.crashErr(); err != nil {
		return err
	}
	f.takeAcks(req.Acks)
	f.ev.add("ack %d", req.Acks.GetAckedThrough())
	return f.ackErr
}

func (f *fakeSource) Commit(context.Context) error {
	if err := f.crashErr(); err != nil {
		return err
	}
	f.mu.Lock()
	f.commits++
	f.mu.Unlock()
	f.ev.add("commit")
	return nil
}

func (f *fakeSource) Stop(ctx context.Context) error {
	if err := f.crashErr(); err != nil {
		return err
	}
	f.mu.Lock()
	acked := f.ackedThrough
	f.mu.Unlock()
	f.ev.add("stop acked=%d", acked)
	if f.stopHang {
		<-ctx.Done()
		return &wire.Error{Kind: wire.KindTimeout, Message: "stop: no answer"}
	}
	return nil
}

func (f *fakeSource) handedOut() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nextSeq - 1
}

func (f *fakeSource) acked() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ackedThrough
}

func (f *fakeSource) pollCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.polls
}

func (f *fakeSource) recordAckList() []*pluginv1.RecordAck {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*pluginv1.RecordAck(nil), f.recAcks...)
}

func (f *fakeSource) workerServer() pluginv1.WorkerServer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.worker
}

// memOffsets is an in-memory OffsetStore that logs its writes.
type memOffsets struct {
	ev   *events
	mu   sync.Mutex
	data map[string][]byte
	sets int
	fail error
	// block, when set, holds the next Set until it is closed (a slow
	// store); the Sets after it are not held.
	block chan struct{}
}

func newMemOffsets(ev *events) *memOffsets { return &memOffsets{ev: ev, data: map[string][]byte{}} }

func (m *memOffsets) Get(_ context.Context, _ string, partitions [][]byte) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]byte{}
	for _, p := range partitions {
		if v, ok := m.data[string(p)]; ok {
			out[string(p)] = v
		}
	}
	return out, nil
}

func (m *memOffsets) Set(_ context.Context, _ string, entries []storage.OffsetEntry) error {
	m.mu.Lock()
	block := m.block
	m.block = nil
	m.mu.Unlock()
	if block != nil {
		m.ev.add("set blocked")
		<-block
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.sets++
	var parts []string
	for _, e := range entries {
		m.data[string(e.Partition)] = e.Offset
		parts = append(parts, string(e.Partition)+"="+string(e.Offset))
	}
	sort.Strings(parts)
	m.ev.add("set %s", strings.Join(parts, " "))
	return nil
}

func (m *memOffsets) All(context.Context, string) ([]storage.OffsetEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []storage.OffsetEntry
	for k, v := range m.data {
		out = append(out, storage.OffsetEntry{Partition: []byte(k), Offset: v})
	}
	return out, nil
}

func (m *memOffsets) get(partition string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return string(m.data[partition])
}

// recListener records state changes in order.
type recListener struct {
	mu     sync.Mutex
	states []string
	err    error
	trace  string
	ch     chan string
}

func newRecListener() *recListener { return &recListener{ch: make(chan string, 100)} }

func (l *recListener) add(s string) {
	l.mu.Lock()
	l.states = append(l.states, s)
	l.mu.Unlock()
	l.ch <- s
}

func (l *recListener) OnRunning(TaskID) { l.add("running") }
func (l *recListener) OnPaused(TaskID)  { l.add("paused") }
func (l *recListener) OnStopped(TaskID) { l.add("stopped") }
func (l *recListener) OnFailed(_ TaskID, err error, trace string) {
	l.mu.Lock()
	l.err, l.trace = err, trace
	l.mu.Unlock()
	l.add("failed")
}

func (l *recListener) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.states...)
}

// await waits for state s.
func (l *recListener) await(t testing.TB, s string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-l.ch:
			if got == s {
				return
			}
		case <-timeout:
			t.Fatalf("state %s not reached; states: %v", s, l.list())
		}
	}
}

// prefixConverter marks what it converted, so tests can tell converted
// values from raw ones: strings become "C:"+s; headers "H:"+s.
type prefixConverter struct{}

func (prefixConverter) FromConnectData(_ string, _ data.Headers, _ *data.Schema, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte("C:" + x), nil
	default:
		return nil, fmt.Errorf("prefixConverter: cannot convert %T", v)
	}
}

func (prefixConverter) ToConnectData(_ string, _ data.Headers, b []byte) (*data.Schema, any, error) {
	if b == nil {
		return data.OptionalStringSchema, nil, nil
	}
	if strings.HasPrefix(string(b), "bad") {
		return nil, nil, errors.New("prefixConverter: bad bytes")
	}
	return data.OptionalStringSchema, string(b), nil
}

func (prefixConverter) FromConnectHeader(_, _ string, _ *data.Schema, v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("prefixConverter: header %T", v)
	}
	return []byte("H:" + s), nil
}

func (prefixConverter) ToConnectHeader(_, _ string, b []byte) (*data.Schema, any, error) {
	return data.OptionalStringSchema, string(b), nil
}

func testPipeline() Pipeline {
	return Pipeline{KeyConverter: prefixConverter{}, ValueConverter: prefixConverter{}, HeaderConverter: prefixConverter{}}
}

// transformFunc adapts a function to Transformer.
type transformFunc func(*data.Record) (*data.Record, error)

func (f transformFunc) Apply(r *data.Record) (*data.Record, error) { return f(r) }

// newCluster starts a kfake cluster with the given topics (name → partitions).
func newCluster(t testing.TB, brokers int, topics map[string]int32, extra ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	opts := append([]kfake.Opt{kfake.NumBrokers(brokers)}, extra...)
	for name, n := range topics {
		opts = append(opts, kfake.SeedTopics(n, name))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// readAll consumes topic from the start until n records arrived.
func readAll(t testing.TB, c *kfake.Cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records from %s", len(out), n, topic)
		}
		out = append(out, fs.Records()...)
	}
	// Anything more would be a duplicate: look briefly.
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	out = append(out, cl.PollFetches(short).Records()...)
	return out
}

// runTask runs task in the background; the returned function waits for Run
// and returns its error.
func runTask(t testing.TB, task Task) func() error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- task.Run(context.Background()) }()
	var once sync.Once
	var err error
	wait := func() error {
		once.Do(func() {
			select {
			case err = <-errc:
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not return")
			}
		})
		return err
	}
	t.Cleanup(func() {
		task.Stop()
		_ = wait()
	})
	return wait
}

// eventually polls cond until it holds.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fakeSink is an in-process SinkPlugin that records what it is given.
type fakeSink struct {
	process
	// region is the shared memory every other Put goes through; shared
	// counts those Puts.
	region *wire.SharedRegion
	shared int
	// putHook runs on every Put with the call number (from 1) and may fail
	// it; preCommit answers PreCommit (nil: the offsets as offered), unless
	// preCommitErr fails it.
	putHook      func(ctx context.Context, call int, recs []*data.SinkRecord) error
	preCommit    func(offered []*pluginv1.PartitionOffset) []*pluginv1.PartitionOffset
	preCommitErr func(offered []*pluginv1.PartitionOffset) error
	// openHook runs in Open, after the partitions are recorded open.
	openHook func(opened []*pluginv1.TopicPartition)

	mu        sync.Mutex
	worker    pluginv1.WorkerServer
	startReq  *pluginv1.SinkTaskStartRequest
	open      map[string]bool
	calls     int
	empty     int                // empty Puts, not counted in calls
	delivered []*data.SinkRecord // from successful Puts
	batches   [][]*data.SinkRecord
	putTimes  []time.Time
}

func newFakeSink(ev *events) *fakeSink {
	return &fakeSink{process: newProcess(ev), open: map[string]bool{}}
}

func (f *fakeSink) launch(_ context.Context, w pluginv1.WorkerServer) (SinkPlugin, error) {
	f.mu.Lock()
	f.worker = w
	f.mu.Unlock()
	f.ev.add("launch")
	return f, nil
}

func tpString(topic string, partition int32) string { return fmt.Sprintf("%s-%d", topic, partition) }

func (f *fakeSink) Start(_ context.Context, req *pluginv1.SinkTaskStartRequest) (*pluginv1.SinkTaskStartResponse, error) {
	if err := f.crashErr(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.startReq = req
	f.mu.Unlock()
	f.ev.add("start")
	return &pluginv1.SinkTaskStartResponse{}, nil
}

func tpsString(ps []*pluginv1.TopicPartition) string {
	var out []string
	for _, p := range ps {
		out = append(out, tpString(p.Topic, p.Partition))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func (f *fakeSink) Open(_ context.Context, req *pluginv1.OpenRequest) error {
	if err := f.crashErr(); err != nil {
		return err
	}
	f.mu.Lock()
	for _, p := range req.Partitions {
		f.open[tpString(p.Topic, p.Partition)] = true
	}
	f.mu.Unlock()
	f.ev.add("open %s", tpsString(req.Partitions))
	if f.openHook != nil {
		f.openHook(req.Partitions)
	}
	return nil
}

func (f *fakeSink) Close(_ context.Context, req *pluginv1.CloseRequest) error {
	if err := f.crashErr(); err != nil {
		return err
	}
	f.mu.Lock()
	for _, p := range req.Partitions {
		delete(f.open, tpString(p.Topic, p.Partition))
	}
	f.mu.Unlock()
	f.ev.add("close %s", tpsString(req.Partitions))
	return nil
}

func (f *fakeSink) Put(ctx context.Context, b *wire.SinkBatch) error {
	if err := f.crashErr(); err != nil {
		return err
	}
	if b.Len() == 0 {
		// Empty puts (after an empty poll, or a batch transforms emptied)
		// are counted apart, so that call numbers, hooks and events are
		// those of the batches that carry records.
		f.mu.Lock()
		f.empty++
		f.mu.Unlock()
		return nil
	}
	recs, err := f.read(b)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.calls++
	call := f.calls
	f.batches = append(f.batches, recs)
	f.putTimes = append(f.putTimes, time.Now())
	for _, r := range recs {
		if !f.open[tpString(r.OriginalTopic, r.OriginalPartition)] {
			f.mu.Unlock()
			return fmt.Errorf("put for partition %s that is not open", tpString(r.OriginalTopic, r.OriginalPartition))
		}
	}
	hook := f.putHook
	f.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, call, recs); err != nil {
			f.ev.add("put %d failed", len(recs))
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	f.mu.Lock()
	f.delivered = append(f.delivered, recs...)
	f.mu.Unlock()
	f.ev.add("put %d", len(recs))
	return nil
}

// read gets a batch's records as a plugin that accepted shared memory
// does: every other batch through the region (PlacePut, TakeSinkRecords),
// the others inline (Proto, DecodeSinkRecords), as when a batch does not
// fit.
func (f *fakeSink) read(b *wire.SinkBatch) ([]*data.SinkRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls%2 == 0 && b.Len() > 0 {
		if f.region == nil {
			f.region = wire.NewSharedRegion(make([]byte, 4<<20), nil)
		}
		if ref, ok := f.region.PlacePut(b); ok {
			f.shared++
			return f.region.TakeSinkRecords(ref)
		}
	}
	req, err := b.Proto()
	if err != nil {
		return nil, err
	}
	return wire.DecodeSinkRecords(req.Schemas, req.Records)
}

func offsetsString(offs []*pluginv1.PartitionOffset) string {
	var out []string
	for _, o := range offs {
		out = append(out, fmt.Sprintf("%s=%d", tpString(o.Topic, o.Partition), o.Offset))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func (f *fakeSink) PreCommit(_ context.Context, req *pluginv1.PreCommitRequest) (*pluginv1.PreCommitResponse, error) {
	if err := f.crashErr(); err != nil {
		return nil, err
	}
	f.ev.add("precommit %s", offsetsString(req.Offsets))
	if f.preCommitErr != nil {
		if err := f.preCommitErr(req.Offsets); err != nil {
			return nil, err
		}
	}
	out := req.Offsets
	if f.preCommit != nil {
		out = f.preCommit(req.Offsets)
	}
	return &pluginv1.PreCommitResponse{Offsets: out}, nil
}

func (f *fakeSink) Stop(context.Context) error {
	if err := f.crashErr(); err != nil {
		return err
	}
	f.ev.add("stop")
	return nil
}

func (f *fakeSink) workerServer() pluginv1.WorkerServer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.worker
}

func (f *fakeSink) deliveredList() []*data.SinkRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*data.SinkRecord(nil), f.delivered...)
}

func (f *fakeSink) emptyPuts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.empty
}

func (f *fakeSink) putCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeSink) openList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.open {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// produceTo writes n records to topic-partition, values "<topic>-<p>-<i>"
// starting at i=from.
func produceTo(t testing.TB, c *kfake.Cluster, topic string, partition int32, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		v := fmt.Sprintf("%s-%d-%d", topic, partition, from+i)
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Key: []byte("k" + v), Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("hv")}}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}
