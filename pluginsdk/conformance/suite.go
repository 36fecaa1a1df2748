package conformance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// connectorName is the name the suite gives every instance it starts.
const connectorName = "conformance"

// Run checks the plugin binary at binaryPath against the contract, one named
// subtest per check (see the package documentation).
func Run(t *testing.T, binaryPath string, opts Options) {
	t.Helper()
	opts.defaults()
	s := &suite{bin: binaryPath, opts: &opts}
	var classes map[string]*pluginv1.ConnectorClass
	ran := false
	t.Run("describe", func(t *testing.T) { ran = true; classes = s.describe(t) })
	if !ran {
		// -run filtered the describe checks out; the class checks still
		// need to know the classes.
		classes = s.quietDescribe(t)
	}
	if classes == nil {
		return
	}
	names := slices.Sorted(maps.Keys(opts.Classes))
	for _, name := range names {
		co := opts.Classes[name]
		t.Run(name, func(t *testing.T) {
			cl := classes[name]
			if cl == nil {
				t.Fatalf("the options name class %s, which the binary does not describe", name)
			}
			t.Run("validate", func(t *testing.T) { s.validate(t, cl, co) })
			var taskConfig map[string]string
			t.Run("connector", func(t *testing.T) { taskConfig = s.connector(t, cl, co) })
			if taskConfig == nil {
				// The connector check failed and said why; tasks still get a try
				// with the connector's own configuration.
				taskConfig = maps.Clone(co.ValidConfig)
			}
			switch cl.GetType() {
			case pluginv1.ConnectorType_CONNECTOR_TYPE_SOURCE:
				if co.SourceRecords <= 0 {
					return
				}
				var seen *sourceRun
				t.Run("source-task", func(t *testing.T) { seen = s.sourceTask(t, cl, taskConfig, co) })
				if co.Resume {
					t.Run("source-resume", func(t *testing.T) {
						if seen == nil || len(seen.records) == 0 {
							t.Skip("source-task produced no records to resume after")
						}
						s.sourceResume(t, cl, taskConfig, seen)
					})
				}
			case pluginv1.ConnectorType_CONNECTOR_TYPE_SINK:
				if !co.SkipSinkTask {
					t.Run("sink-task", func(t *testing.T) { s.sinkTask(t, cl, taskConfig, co) })
				}
			}
		})
	}
}

type suite struct {
	bin  string
	opts *Options
}

func (s *suite) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.CallTimeout)
	t.Cleanup(cancel)
	return ctx
}

// launch starts a process and fails the test if that does not work.
func (s *suite) launch(t *testing.T) *proc {
	t.Helper()
	p, err := launch(t, s.bin, s.opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return p
}

// ------------------------------------------------------------- describe

func (s *suite) describe(t *testing.T) map[string]*pluginv1.ConnectorClass {
	// The process belongs to the describe test, so it outlives the subtest
	// that reports on the handshake.
	p, err := launch(t, s.bin, s.opts)
	if !t.Run("handshake", func(t *testing.T) {
		if err != nil {
			t.Fatalf("%v", err)
		}
	}) {
		return nil
	}
	var resp *pluginv1.DescribeResponse
	ok := t.Run("classes", func(t *testing.T) {
		var err error
		resp, err = p.clients.Plugin.Describe(s.ctx(t), &pluginv1.DescribeRequest{})
		if err != nil {
			t.Fatalf("Describe: %v", err)
		}
		if len(resp.GetClasses()) == 0 {
			t.Fatalf("Describe lists no classes")
		}
		names := map[string]string{}
		for i, c := range resp.GetClasses() {
			if c.GetClassName() == "" {
				t.Errorf("class %d has no class_name", i)
			}
			for _, n := range append([]string{c.GetClassName()}, c.GetAliases()...) {
				if prev, dup := names[n]; dup {
					t.Errorf("name %q is used by class %s and class %s", n, prev, c.GetClassName())
				}
				names[n] = c.GetClassName()
			}
			if c.GetType() != pluginv1.ConnectorType_CONNECTOR_TYPE_SOURCE && c.GetType() != pluginv1.ConnectorType_CONNECTOR_TYPE_SINK {
				t.Errorf("class %s: type %v; want SOURCE or SINK", c.GetClassName(), c.GetType())
			}
			if c.GetVersion() == "" {
				t.Errorf("class %s: empty version", c.GetClassName())
			}
		}
	})
	t.Run("config-defs", func(t *testing.T) {
		if resp == nil {
			t.Skip("no Describe answer")
		}
		for _, c := range resp.GetClasses() {
			keys := map[string]bool{}
			for i, k := range c.GetConfig().GetKeys() {
				switch {
				case k.GetName() == "":
					t.Errorf("class %s: config key %d has no name", c.GetClassName(), i)
				case keys[k.GetName()]:
					t.Errorf("class %s: config key %q is declared twice", c.GetClassName(), k.GetName())
				}
				keys[k.GetName()] = true
				if k.GetType() == pluginv1.ConfigType_CONFIG_TYPE_UNSPECIFIED {
					t.Errorf("class %s: config key %q has no type", c.GetClassName(), k.GetName())
				}
				if k.GetRequired() && k.DefaultValue != nil {
					t.Errorf("class %s: config key %q is required but has default %q", c.GetClassName(), k.GetName(), k.GetDefaultValue())
				}
			}
		}
	})
	t.Run("exit", func(t *testing.T) { p.kill(t) })
	if !ok {
		return nil
	}
	out := map[string]*pluginv1.ConnectorClass{}
	for _, c := range resp.GetClasses() {
		out[c.GetClassName()] = c
	}
	return out
}

// quietDescribe returns the classes without checking anything.
func (s *suite) quietDescribe(t *testing.T) map[string]*pluginv1.ConnectorClass {
	p := s.launch(t)
	defer func() { p.client.Kill(); p.killed = true }()
	resp, err := p.clients.Plugin.Describe(s.ctx(t), &pluginv1.DescribeRequest{})
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	out := map[string]*pluginv1.ConnectorClass{}
	for _, c := range resp.GetClasses() {
		out[c.GetClassName()] = c
	}
	return out
}

// ------------------------------------------------------------- validate

func (s *suite) validate(t *testing.T, cl *pluginv1.ConnectorClass, co ClassOptions) {
	p := s.launch(t)
	t.Run("valid", func(t *testing.T) {
		resp, err := p.clients.Connector.Validate(s.ctx(t), &pluginv1.ValidateRequest{ClassName: cl.GetClassName(), Config: co.ValidConfig})
		if err != nil {
			t.Fatalf("Validate(valid config): %v", err)
		}
		got := map[string]bool{}
		for _, v := range resp.GetValues() {
			got[v.GetName()] = true
			if len(v.GetErrors()) > 0 {
				t.Errorf("valid config: key %q has errors %q", v.GetName(), v.GetErrors())
			}
		}
		for _, k := range cl.GetConfig().GetKeys() {
			if !got[k.GetName()] {
				t.Errorf("Validate returned no value for declared key %q (it must return one per declared key)", k.GetName())
			}
		}
	})
	if co.InvalidConfig != nil {
		t.Run("invalid", func(t *testing.T) {
			resp, err := p.clients.Connector.Validate(s.ctx(t), &pluginv1.ValidateRequest{ClassName: cl.GetClassName(), Config: co.InvalidConfig})
			if err != nil {
				t.Fatalf("Validate(invalid config): %v; validation problems belong in the values' errors, not in a failed call", err)
			}
			errs := map[string][]string{}
			for _, v := range resp.GetValues() {
				if len(v.GetErrors()) > 0 {
					errs[v.GetName()] = v.GetErrors()
				}
			}
			if len(errs) == 0 {
				t.Fatalf("invalid config %v: no key has errors", co.InvalidConfig)
			}
			for _, k := range co.InvalidKeys {
				if len(errs[k]) == 0 {
					t.Errorf("invalid config: key %q has no errors; errors are on %v", k, slices.Sorted(maps.Keys(errs)))
				}
			}
		})
	}
	t.Run("exit", func(t *testing.T) { p.kill(t) })
}

// ------------------------------------------------------------- connector

func (s *suite) connector(t *testing.T, cl *pluginv1.ConnectorClass, co ClassOptions) map[string]string {
	w, err := startWorker(t)
	if err != nil {
		t.Fatal(err)
	}
	p := s.launch(t)
	cfg := maps.Clone(co.ValidConfig)
	if cfg == nil {
		cfg = map[string]string{}
	}
	cfg["name"] = connectorName
	cfg["connector.class"] = cl.GetClassName()
	if !t.Run("start", func(t *testing.T) {
		_, err := p.clients.Connector.Start(s.ctx(t), &pluginv1.ConnectorStartRequest{
			ClassName: cl.GetClassName(), ConnectorName: connectorName, Config: cfg, WorkerTarget: w.target,
		})
		if err != nil {
			t.Fatalf("connector Start: %v", err)
		}
	}) {
		return nil
	}
	var first map[string]string
	for n := int32(1); n <= 3; n++ {
		t.Run(fmt.Sprintf("task-configs-%d", n), func(t *testing.T) {
			resp, err := p.clients.Connector.TaskConfigs(s.ctx(t), &pluginv1.TaskConfigsRequest{MaxTasks: n})
			if err != nil {
				t.Fatalf("TaskConfigs(%d): %v", n, err)
			}
			if l := len(resp.GetTasks()); l < 1 || l > int(n) {
				t.Fatalf("TaskConfigs(%d) returned %d task configs; want 1..%d", n, l, n)
			}
			if n == 1 {
				first = maps.Clone(resp.GetTasks()[0].GetConfig())
			}
		})
	}
	t.Run("stop", func(t *testing.T) {
		if _, err := p.clients.Connector.Stop(s.ctx(t), &pluginv1.StopRequest{}); err != nil {
			t.Fatalf("connector Stop: %v", err)
		}
	})
	t.Run("exit", func(t *testing.T) { p.kill(t) })
	if first != nil {
		// The worker adds task.class to every task configuration: the
		// declared task class, else the connector class.
		first["task.class"] = cl.GetTaskClassName()
		if first["task.class"] == "" {
			first["task.class"] = cl.GetClassName()
		}
	}
	return first
}

// ------------------------------------------------------------- source

// sourceRun is what a source task produced: records in order, with the
// canonical JSON of their partitions and offsets.
type sourceRun struct {
	records    []*data.SourceRecord
	partitions []string
	offsets    []string
}

func (s *suite) startSourceTask(t *testing.T, p *proc, w *fakeWorker, cl *pluginv1.ConnectorClass, taskConfig map[string]string) *pluginv1.SourceTaskStartResponse {
	t.Helper()
	resp, err := p.clients.SourceTask.Start(s.ctx(t), &pluginv1.SourceTaskStartRequest{
		ConnectorClass: cl.GetClassName(), ConnectorName: connectorName, TaskId: 0,
		Config: taskConfig, WorkerTarget: w.target,
	})
	if err != nil {
		t.Fatalf("source task Start: %v", err)
	}
	return resp
}

// pollRecords polls until want records arrived or the poll timeout passed,
// checking every batch.
func (s *suite) pollRecords(t *testing.T, p *proc, want int, requireOffsets bool) (*sourceRun, uint64) {
	t.Helper()
	run := &sourceRun{}
	next := uint64(1)
	const maxRecords = 100
	deadline := time.Now().Add(s.opts.PollTimeout)
	for len(run.records) < want && time.Now().Before(deadline) {
		resp, err := p.clients.SourceTask.Poll(s.ctx(t), &pluginv1.PollRequest{MaxRecords: maxRecords, MaxBytes: 4 << 20, TimeoutMs: 500})
		if err != nil {
			t.Fatalf("Poll after %d records: %v", len(run.records), err)
		}
		n := len(resp.GetRecords())
		if n == 0 {
			continue
		}
		if n > maxRecords {
			t.Fatalf("Poll returned %d records for max_records %d", n, maxRecords)
		}
		if resp.GetFirstSeq() != next {
			t.Fatalf("Poll: first_seq %d, want %d (sequence numbers start at 1 and follow on across batches)", resp.GetFirstSeq(), next)
		}
		next += uint64(n)
		recs, err := wire.DecodeSourceRecords(resp.GetSchemas(), resp.GetRecords())
		if err != nil {
			t.Fatalf("Poll: records do not decode against their schema table: %v", err)
		}
		for i, r := range resp.GetRecords() {
			seq := resp.GetFirstSeq() + uint64(i)
			if r.GetTopic() == "" {
				t.Fatalf("record %d has no topic", seq)
			}
			part, err := jsonObject(r.GetSourcePartition(), requireOffsets)
			if err != nil {
				t.Fatalf("record %d: source_partition %q: %v", seq, r.GetSourcePartition(), err)
			}
			off, err := jsonObject(r.GetSourceOffset(), requireOffsets)
			if err != nil {
				t.Fatalf("record %d: source_offset %q: %v", seq, r.GetSourceOffset(), err)
			}
			run.records = append(run.records, recs[i])
			run.partitions = append(run.partitions, part)
			run.offsets = append(run.offsets, off)
		}
	}
	if len(run.records) < want {
		t.Fatalf("got %d records in %v; want %d", len(run.records), s.opts.PollTimeout, want)
	}
	return run, next - 1
}

// jsonObject checks b is a JSON object (or empty, unless required) and
// returns its canonical form.
func jsonObject(b []byte, required bool) (string, error) {
	if len(b) == 0 {
		if required {
			return "", fmt.Errorf("empty; a resumable source must set it")
		}
		return "", nil
	}
	return canonical(b)
}

func (s *suite) sourceTask(t *testing.T, cl *pluginv1.ConnectorClass, taskConfig map[string]string, co ClassOptions) *sourceRun {
	w, err := startWorker(t)
	if err != nil {
		t.Fatal(err)
	}
	p := s.launch(t)
	var start *pluginv1.SourceTaskStartResponse
	if !t.Run("start", func(t *testing.T) { start = s.startSourceTask(t, p, w, cl, taskConfig) }) {
		return nil
	}
	var run *sourceRun
	var last uint64
	if !t.Run("poll", func(t *testing.T) { run, last = s.pollRecords(t, p, co.SourceRecords, co.Resume) }) {
		return nil
	}
	t.Run("ack", func(t *testing.T) {
		acks := &pluginv1.AckBatch{AckedThrough: last}
		if start.GetRecordAcks() {
			for seq := uint64(1); seq <= last; seq++ {
				acks.Records = append(acks.Records, &pluginv1.RecordAck{
					Seq: seq, Written: true, Topic: run.records[seq-1].Topic, Partition: 0, Offset: int64(seq - 1), TimestampMs: 1_700_000_000_000,
				})
			}
		}
		if _, err := p.clients.SourceTask.Ack(s.ctx(t), &pluginv1.AckRequest{Acks: acks}); err != nil {
			t.Fatalf("Ack of records 1..%d (record_acks=%v): %v", last, start.GetRecordAcks(), err)
		}
	})
	t.Run("commit", func(t *testing.T) {
		if _, err := p.clients.SourceTask.Commit(s.ctx(t), &pluginv1.CommitRequest{}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
	})
	t.Run("stop", func(t *testing.T) { s.stopWhilePolling(t, p) })
	t.Run("exit", func(t *testing.T) { p.kill(t) })
	return run
}

// stopWhilePolling stops the task while a long Poll is outstanding, as the
// worker does when a drain times out, and checks both return promptly.
func (s *suite) stopWhilePolling(t *testing.T, p *proc) {
	type result struct {
		err error
		at  time.Time
	}
	polled := make(chan result, 1)
	pollCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		_, err := p.clients.SourceTask.Poll(pollCtx, &pluginv1.PollRequest{MaxRecords: 1, MaxBytes: 1 << 20, TimeoutMs: 30_000})
		polled <- result{err, time.Now()}
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case r := <-polled:
		// The source had records ready: nothing outstanding to interrupt.
		t.Logf("the Poll before Stop returned at once (err %v); Stop did not interrupt a waiting Poll", r.err)
		polled <- r
	default:
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer stopCancel()
	if _, err := p.clients.SourceTask.Stop(stopCtx, &pluginv1.StopRequest{}); err != nil {
		t.Fatalf("Stop with a Poll outstanding: %v (it must answer within 5 s)", err)
	}
	stopped := time.Now()
	select {
	case r := <-polled:
		if d := r.at.Sub(stopped); d > 0 {
			t.Logf("the outstanding Poll returned %v after Stop (err %v)", d.Round(time.Millisecond), r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("a Poll outstanding at Stop had not returned 5 s after Stop; Stop must make it return")
	}
}

func (s *suite) sourceResume(t *testing.T, cl *pluginv1.ConnectorClass, taskConfig map[string]string, first *sourceRun) {
	w, err := startWorker(t)
	if err != nil {
		t.Fatal(err)
	}
	// Store, per partition, the offset of the last record the first process
	// produced, as the worker would after those records were written.
	stored := map[string]string{}
	seen := map[string]bool{}
	for i := range first.records {
		stored[first.partitions[i]] = first.offsets[i]
		seen[first.partitions[i]+"\x00"+first.offsets[i]] = true
	}
	w.setOffsets(stored)
	p := s.launch(t)
	s.startSourceTask(t, p, w, cl, taskConfig)
	run, _ := s.pollRecords(t, p, 1, true)
	asked := w.askedPartitions()
	if len(asked) == 0 {
		t.Fatalf("the task never read its stored offsets (no SourceOffsets call)")
	}
	for i := range run.records {
		if seen[run.partitions[i]+"\x00"+run.offsets[i]] {
			t.Fatalf("after restart, record %d repeats partition %s offset %s of the first run; stored offsets were %v",
				i+1, run.partitions[i], run.offsets[i], stored)
		}
	}
	if _, err := p.clients.SourceTask.Stop(s.ctx(t), &pluginv1.StopRequest{}); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	p.kill(t)
}

// ------------------------------------------------------------- sink

func (s *suite) sinkTask(t *testing.T, cl *pluginv1.ConnectorClass, taskConfig map[string]string, co ClassOptions) {
	recs := co.SinkRecords
	if recs == nil {
		recs = DefaultSinkRecords()
	}
	// What the worker would deliver: per partition, the next offset.
	delivered := map[data.TopicPartition]int64{}
	for _, r := range recs {
		tp := data.TopicPartition{Topic: r.OriginalTopic, Partition: r.OriginalPartition}
		if tp.Topic == "" {
			tp = data.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		}
		delivered[tp] = max(delivered[tp], r.OriginalOffset+1)
	}
	tps := slices.SortedFunc(maps.Keys(delivered), func(a, b data.TopicPartition) int {
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
	ptps := make([]*pluginv1.TopicPartition, len(tps))
	for i, tp := range tps {
		ptps[i] = &pluginv1.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
	}

	w, err := startWorker(t)
	if err != nil {
		t.Fatal(err)
	}
	w.assignment = ptps
	p := s.launch(t)
	if !t.Run("start", func(t *testing.T) {
		_, err := p.clients.SinkTask.Start(s.ctx(t), &pluginv1.SinkTaskStartRequest{
			ConnectorClass: cl.GetClassName(), ConnectorName: connectorName, Config: taskConfig, WorkerTarget: w.target,
		})
		if err != nil {
			t.Fatalf("sink task Start: %v", err)
		}
	}) {
		return
	}
	if !t.Run("open", func(t *testing.T) {
		if _, err := p.clients.SinkTask.Open(s.ctx(t), &pluginv1.OpenRequest{Partitions: ptps}); err != nil {
			t.Fatalf("Open(%v): %v", tps, err)
		}
	}) {
		return
	}
	t.Run("put", func(t *testing.T) {
		// Two batches, to see a task keep state across Put calls.
		half := len(recs) / 2
		for _, batch := range [][]*data.SinkRecord{recs[:half], recs[half:]} {
			schemas, precs, err := wire.EncodeSinkRecords(batch)
			if err != nil {
				t.Fatalf("encode the options' sink records: %v", err)
			}
			if _, err := p.clients.SinkTask.Put(s.ctx(t), &pluginv1.PutRequest{Schemas: schemas, Records: precs}); err != nil {
				t.Fatalf("Put of %d records: %v", len(batch), err)
			}
		}
	})
	t.Run("pre-commit", func(t *testing.T) {
		req := &pluginv1.PreCommitRequest{}
		for _, tp := range tps {
			req.Offsets = append(req.Offsets, &pluginv1.PartitionOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: delivered[tp]})
		}
		resp, err := p.clients.SinkTask.PreCommit(s.ctx(t), req)
		if err != nil {
			t.Fatalf("PreCommit: %v", err)
		}
		for _, o := range resp.GetOffsets() {
			tp := data.TopicPartition{Topic: o.GetTopic(), Partition: o.GetPartition()}
			d, ok := delivered[tp]
			switch {
			case !ok:
				t.Errorf("PreCommit returned an offset for %s-%d, which was never delivered", tp.Topic, tp.Partition)
			case o.GetOffset() > d:
				t.Errorf("PreCommit returned offset %d for %s-%d, past the %d delivered", o.GetOffset(), tp.Topic, tp.Partition, d)
			case o.GetOffset() < 0:
				t.Errorf("PreCommit returned negative offset %d for %s-%d", o.GetOffset(), tp.Topic, tp.Partition)
			}
		}
	})
	t.Run("close", func(t *testing.T) {
		if _, err := p.clients.SinkTask.Close(s.ctx(t), &pluginv1.CloseRequest{Partitions: ptps}); err != nil {
			t.Fatalf("Close(%v): %v", tps, err)
		}
	})
	t.Run("stop", func(t *testing.T) {
		if _, err := p.clients.SinkTask.Stop(s.ctx(t), &pluginv1.StopRequest{}); err != nil {
			t.Fatalf("sink task Stop: %v", err)
		}
	})
	t.Run("exit", func(t *testing.T) { p.kill(t) })
}
