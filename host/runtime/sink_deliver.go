package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/host/convert"
	"github.com/sluice-io/sluice/pluginsdk/data"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// sinkBatch is one Put's worth of records.
type sinkBatch struct {
	// put holds the converted, transformed records, in consumed order,
	// each checked and sized for the Put as it joined: the plugin writes
	// them straight into shared memory, or inline.
	put *wire.SinkBatch
	// consumed are the Kafka records the batch came from (dropped ones
	// included), for error reports.
	consumed []*kgo.Record
	// next is, per consumed partition, the offset after the batch's last
	// record: where delivered moves when the Put succeeds.
	next map[topicPartition]int64
	// bytes is the size of consumed, as recordBytes counts it.
	bytes int
	// skipped are the consumed records the error handler skipped: they
	// were reported (logged, dead-lettered) as they joined.
	skipped []*kgo.Record
}

// recordAt names a consumed record.
type recordAt struct {
	tp     topicPartition
	offset int64
}

// room is how many more records, and bytes of them, the batch may take; a
// nil batch is empty.
func (b *sinkBatch) room(cfg *SinkConfig) (records, bytes int) {
	if b == nil {
		return cfg.MaxBatchRecords, cfg.MaxBatchBytes
	}
	return cfg.MaxBatchRecords - len(b.consumed), cfg.MaxBatchBytes - b.bytes
}

// convertNew converts freshly polled records into a batch; nil when none
// is left to deliver. Holds mu.
func (t *sinkTask) convertNew(ctx context.Context, recs []*kgo.Record) (*sinkBatch, error) {
	if t.closed {
		return nil, nil
	}
	// A rebalance may not reach us between poll and here, but a rewind or
	// a revocation applied before this poll leaves nothing to skip; still,
	// never deliver for a partition that is not open.
	b, err := t.convertMore(ctx, nil, recs, true)
	if err != nil || len(b.consumed) == 0 {
		return nil, err
	}
	return b, nil
}

// deliverPipelined puts b on a goroutine of its own and meanwhile polls
// and converts the next batch, which it leaves in staged. The poll takes
// no AllowRebalance (so no rebalance, and no callback, can run until the
// next one), and it ends when the Put returns, when the plugin or the
// herder asks for something (their pokes interrupt it), or at the next
// commit. Called without mu; the Put's outcome is applied under it, as
// deliver does.
func (t *sinkTask) deliverPipelined(ctx context.Context, b *sinkBatch) error {
	t.mu.Lock()
	if b.put.Len() == 0 || t.taskPaused || t.pending != nil {
		defer t.mu.Unlock()
		return t.deliver(ctx, b)
	}
	deadline := t.pollDeadline()
	t.mu.Unlock()

	pctx, done := t.interruptible(ctx, true, t.generation())
	defer done()
	pctx, stopPoll := context.WithDeadline(pctx, deadline)
	defer stopPoll()
	putErr := make(chan error, 1)
	t.worker.setBatch(b.consumed)
	t.putter.run(func() {
		cctx, cancel := context.WithTimeout(ctx, t.cfg.CallTimeout)
		err := t.plugin.Put(cctx, b.put)
		cancel()
		stopPoll()
		putErr <- err
	})
	// Until the Put ends, every fetch is taken and converted as it comes:
	// the consumer fetches again only once its buffer is drained, so
	// leaving what came buffered until the Put is over would leave the
	// broker idle meanwhile.
	var next *sinkBatch
	var convErr error
	for {
		n, size := next.room(&t.cfg)
		if n <= 0 || size <= 0 {
			break
		}
		recs := t.gather(pctx, n, size)
		if len(recs) == 0 {
			break
		}
		// Every record is of an open partition: no callback has run
		// since the poll that let the last rebalance through.
		if next, convErr = t.convertMore(ctx, next, recs, false); convErr != nil {
			next = nil
			break
		}
	}
	err := <-putErr
	t.worker.setBatch(nil)

	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.afterPut(ctx, b, err); err != nil {
		return err
	}
	if convErr != nil {
		return convErr
	}
	t.staged = next
	if t.pending != nil {
		// ABORTED: nothing newer may go out before the batch does.
		t.discardStaged()
	}
	return nil
}

// discardStaged throws the staged batch away and sets the consumer back to
// its first record of every partition still open, so those records are
// polled again; those the error handler skipped are remembered
// (skippedBefore), so that they are reported once. Holds mu; no rebalance
// may run (the task holds records).
func (t *sinkTask) discardStaged() {
	b := t.staged
	if b == nil {
		return
	}
	t.staged = nil
	for _, r := range b.skipped {
		if tp := (topicPartition{r.Topic, r.Partition}); t.assigned[tp] {
			if t.skippedBefore == nil {
				t.skippedBefore = map[recordAt]bool{}
			}
			t.skippedBefore[recordAt{tp, r.Offset}] = true
		}
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	for _, r := range b.consumed {
		if !t.assigned[topicPartition{r.Topic, r.Partition}] {
			continue
		}
		if set[r.Topic] == nil {
			set[r.Topic] = map[int32]kgo.EpochOffset{}
		}
		if _, ok := set[r.Topic][r.Partition]; !ok {
			set[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: -1, Offset: r.Offset}
		}
	}
	if len(set) > 0 {
		t.client.SetOffsets(set)
	}
}

// convert turns consumed records into a Put batch: header, key and value
// converters, then transforms. A record dropped by a transform (or skipped
// by error tolerance) is not delivered, but its offset counts as consumed.
// A record that cannot be encoded for the Put fails the batch, once all
// of it went through the pipeline (the error handler has seen every
// record that failed a stage).
func (t *sinkTask) convert(ctx context.Context, recs []*kgo.Record) (*sinkBatch, error) {
	return t.convertMore(ctx, nil, recs, false)
}

// convertMore is convert adding recs to b, or to a new batch if b is nil.
// With openOnly, the records of partitions that are not open are left out
// altogether, as if never consumed (then it holds mu).
func (t *sinkTask) convertMore(ctx context.Context, b *sinkBatch, recs []*kgo.Record, openOnly bool) (*sinkBatch, error) {
	if b == nil {
		b = &sinkBatch{put: new(wire.SinkBatch), next: map[topicPartition]int64{}}
	}
	store := make([]data.SinkRecord, len(recs))
	b.put.Grow(len(recs))
	if t.bytesKeys || t.bytesValues {
		n := 0
		if t.bytesKeys {
			n += len(recs)
		}
		if t.bytesValues {
			n += len(recs)
		}
		t.boxes.start(n)
		defer t.boxes.end()
	}
	var encErr error
	// Records come grouped by partition: the partition's state is looked
	// up, and next written, once a group.
	for start, end := 0, 0; start < len(recs); start = end {
		first := recs[start]
		for end = start + 1; end < len(recs) && recs[end].Partition == first.Partition && recs[end].Topic == first.Topic; end++ {
		}
		tp := topicPartition{first.Topic, first.Partition}
		if openOnly && !t.assigned[tp] {
			continue
		}
		group := recs[start:end]
		b.consumed = append(b.consumed, group...)
		b.next[tp] = group[len(group)-1].Offset + 1
		for i, kr := range group {
			// recordBytes, in the walk the records get anyway.
			b.bytes += len(kr.Key) + len(kr.Value)
			for _, h := range kr.Headers {
				b.bytes += len(h.Key) + len(h.Value)
			}
			sr := &store[start+i]
			dropped, stage, err := t.prepare(kr, sr)
			if err != nil {
				var skipped bool
				if dropped, skipped, err = t.recover(ctx, kr, sr, stage, err); err != nil {
					return nil, err
				}
				if skipped {
					b.skipped = append(b.skipped, kr)
				}
			}
			if dropped || encErr != nil {
				continue
			}
			encErr = b.put.Add(sr)
		}
	}
	if encErr != nil {
		return nil, encodeError(encErr)
	}
	return b, nil
}

// prepare converts a consumed record into sr and applies the transforms;
// dropped says a transform dropped it.
func (t *sinkTask) prepare(kr *kgo.Record, sr *data.SinkRecord) (dropped bool, stage Stage, err error) {
	if stage, err = t.toConnect(kr, sr); err != nil || t.cfg.Transforms == nil {
		return false, stage, err
	}
	var out *data.Record
	if t.sinkTransforms != nil {
		out, err = t.sinkTransforms.ApplySink(sr)
	} else {
		out, err = t.cfg.Transforms.Apply(&sr.Record)
	}
	switch {
	case err != nil:
		return false, StageTransformation, err
	case out == nil:
		return true, "", nil
	case out != &sr.Record:
		sr.Record = *out
	}
	return false, "", nil
}

// recover hands a record that failed at stage to the error handler, with a
// retry of prepare. It reports whether the record is left out of the batch
// (dropped: skipped, or dropped by a transform once a retry got through)
// and whether the handler skipped it; an error fails the task. A record
// the handler skipped in a staged batch that was thrown away
// (skippedBefore) is skipped again without a second report.
func (t *sinkTask) recover(ctx context.Context, kr *kgo.Record, sr *data.SinkRecord, stage Stage, err error) (dropped, skipped bool, _ error) {
	err = fmt.Errorf("%s: record %s-%d@%d: %w", stage, kr.Topic, kr.Partition, kr.Offset, err)
	if t.cfg.Errors == nil {
		return false, false, err
	}
	if len(t.skippedBefore) > 0 {
		at := recordAt{topicPartition{kr.Topic, kr.Partition}, kr.Offset}
		if t.skippedBefore[at] {
			delete(t.skippedBefore, at)
			return true, true, nil
		}
	}
	passed := false
	retry := func(context.Context) (Stage, error) {
		var st Stage
		var e error
		dropped, st, e = t.prepare(kr, sr)
		passed = e == nil
		return st, e
	}
	if herr := t.cfg.Errors.Handle(ctx, ErrantRecord{Stage: stage, Err: err, Consumed: kr, Retry: retry}); herr != nil {
		if ctx.Err() != nil {
			return false, false, errStopped
		}
		return false, false, herr
	}
	return !passed || dropped, !passed, nil
}

// encodeError fails a batch a record of which cannot be encoded.
func encodeError(err error) error {
	return &wire.Error{Kind: wire.KindInvalid, Message: fmt.Sprintf("encode records for put: %v", err)}
}

// toConnect fills sr from the consumed record with the converters.
// fromConnect converts r back to the bytes of a Kafka record with the
// task's converters, into kr's key, value and headers: for a reported
// record whose consumed bytes the worker no longer holds.
func (t *sinkTask) fromConnect(r *data.Record, kr *kgo.Record) error {
	var err error
	if kr.Key, err = t.cfg.KeyConverter.FromConnectData(r.Topic, r.Headers, r.KeySchema, r.Key); err != nil {
		return fmt.Errorf("convert key: %w", err)
	}
	if kr.Value, err = t.cfg.ValueConverter.FromConnectData(r.Topic, r.Headers, r.ValueSchema, r.Value); err != nil {
		return fmt.Errorf("convert value: %w", err)
	}
	kr.Headers = kr.Headers[:0]
	for _, h := range r.Headers {
		b, err := t.cfg.HeaderConverter.FromConnectHeader(r.Topic, h.Key, h.Schema, h.Value)
		if err != nil {
			return fmt.Errorf("convert header %q: %w", h.Key, err)
		}
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: b})
	}
	return nil
}

func (t *sinkTask) toConnect(kr *kgo.Record, sr *data.SinkRecord) (Stage, error) {
	var hs data.Headers
	if len(kr.Headers) > 0 {
		hs = make(data.Headers, len(kr.Headers))
		for i, h := range kr.Headers {
			s, v, err := t.cfg.HeaderConverter.ToConnectHeader(kr.Topic, h.Key, h.Value)
			if err != nil {
				return StageHeaderConverter, fmt.Errorf("header %s: %w", h.Key, err)
			}
			hs[i] = data.Header{Key: h.Key, Schema: s, Value: v}
		}
	}
	var ks, vs *data.Schema
	var k, v any
	if t.bytesKeys {
		ks, k = data.OptionalBytesSchema, t.boxes.box(kr.Key)
	} else {
		var err error
		if ks, k, err = t.cfg.KeyConverter.ToConnectData(kr.Topic, hs, kr.Key); err != nil {
			return StageKeyConverter, err
		}
	}
	if t.bytesValues {
		vs, v = data.OptionalBytesSchema, t.boxes.box(kr.Value)
	} else {
		var err error
		if vs, v, err = t.cfg.ValueConverter.ToConnectData(kr.Topic, hs, kr.Value); err != nil {
			return StageValueConverter, err
		}
	}
	sr.Record = data.Record{
		Topic: kr.Topic, Partition: kr.Partition,
		KeySchema: ks, Key: k, ValueSchema: vs, Value: v,
		Headers: hs,
	}
	if ms := kr.Timestamp.UnixMilli(); ms >= 0 {
		sr.Timestamp = kr.Timestamp
	}
	switch kr.Attrs.TimestampType() {
	case 0:
		sr.TimestampType = data.CreateTime
	case 1:
		sr.TimestampType = data.LogAppendTime
	default:
		sr.TimestampType = data.NoTimestampType
	}
	sr.Offset = kr.Offset
	sr.OriginalTopic, sr.OriginalPartition, sr.OriginalOffset = kr.Topic, kr.Partition, kr.Offset
	return "", nil
}

// passesBytes reports whether c is ByteArrayConverter, whose
// ToConnectData toConnect does itself, to box the bytes in blocks
// (bytesBoxes): an OPTIONAL_BYTES value holding the bytes as they are, or
// null for null bytes; never an error.
func passesBytes(c Converter) bool {
	switch c.(type) {
	case convert.ByteArrayConverter, *convert.ByteArrayConverter:
		return true
	}
	return false
}

// bytesBoxes makes the interface values of consumed keys and values that
// stay []byte (ByteArrayConverter), taking their slice headers from
// blocks. Converting a []byte to any allocates a slice header of its own
// per key and per value, the largest cost of converting a record; an
// interface made here instead points at an entry of a block
// (data.BytesAt), as the runtime's own points at its one-entry allocation.
// Entries are never written once handed out (what an interface holds must
// not change), and a block is only ever dropped, never reused: it lives as
// long as any record still refers to it.
//
// A block is never shared by two conversions: start begins a new one and
// end drops it. An entry keeps its bytes' whole fetch buffer alive (franz-go
// slices keys and values out of it), so a half-filled block kept across
// conversions would pin the fetch buffers of records long delivered, for as
// long as the task stays idle. Not safe for concurrent use: the task
// goroutine's.
type bytesBoxes struct {
	block [][]byte
	// size is the entries of the next block: the conversion's need up to
	// bytesBoxBlock; 0 is bytesBoxBlock.
	size int
}

// bytesBoxBlock is the most entries of a block: 12 KiB.
const bytesBoxBlock = 512

// start begins a conversion that boxes at most n keys and values: the
// next box takes a new block, of no more entries than that.
func (bb *bytesBoxes) start(n int) {
	bb.block, bb.size = nil, min(max(n, 1), bytesBoxBlock)
}

// end drops the block of the conversion: only its records refer to it now.
func (bb *bytesBoxes) end() {
	bb.block = nil
}

// box returns b as an any, as converting it would: a []byte, or the nil
// interface for nil bytes (ByteArrayConverter's null; a non-nil empty
// slice stays an empty []byte).
func (bb *bytesBoxes) box(b []byte) any {
	if b == nil {
		return nil
	}
	if len(bb.block) == cap(bb.block) {
		size := bb.size
		if size == 0 {
			size = bytesBoxBlock
		}
		bb.block = make([][]byte, 0, size)
	}
	bb.block = append(bb.block, b)
	return data.BytesAt(&bb.block[len(bb.block)-1])
}

// deliver puts a batch. Success moves delivered; ABORTED keeps the batch for
// redelivery after the backoff, with every partition paused meanwhile (no
// new records overtake it); anything else fails the task. Holds mu.
func (t *sinkTask) deliver(ctx context.Context, b *sinkBatch) error {
	// A batch that transforms emptied is still put, empty, as Kafka
	// Connect does.
	t.worker.setBatch(b.consumed)
	cctx, cancel := context.WithTimeout(ctx, t.cfg.CallTimeout)
	err := t.plugin.Put(cctx, b.put)
	cancel()
	t.worker.setBatch(nil)
	return t.afterPut(ctx, b, err)
}

// putEmpty puts an empty batch after a poll that brought nothing, as Kafka
// Connect calls put with an empty collection after every such poll: sinks
// that flush on time (rotation intervals) or resume partitions they paused
// rely on being called while no record comes. Not while the task is
// paused, stopping, or waiting to redeliver a batch. A retriable error
// needs no redelivery (there is nothing to deliver again); any other
// fails the task.
func (t *sinkTask) putEmpty(ctx context.Context) error {
	paused, stopping, failure := t.snapshot()
	t.mu.Lock()
	pending := t.pending != nil || t.closed
	t.mu.Unlock()
	if paused || stopping || failure != nil || pending || ctx.Err() != nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, t.cfg.CallTimeout)
	err := t.plugin.Put(cctx, new(wire.SinkBatch))
	cancel()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return errStopped
	case wire.KindOf(err) == wire.KindRetriable:
		t.log.Debug("empty put asked for redelivery; nothing to redeliver", "error", err)
		return nil
	}
	if f := t.failed(); f != nil {
		return f
	}
	return fmt.Errorf("put: %w", err)
}

// afterPut applies the outcome of b's Put (err), as deliver describes.
// Holds mu.
func (t *sinkTask) afterPut(ctx context.Context, b *sinkBatch, err error) error {
	if err != nil {
		if ctx.Err() != nil {
			return errStopped
		}
		if f := t.failed(); f != nil {
			return f
		}
		if wire.KindOf(err) != wire.KindRetriable {
			return fmt.Errorf("put: %w", err)
		}
		// A backoff the task set during this Put applies to it
		// (SinkTaskContext.timeout before throwing RetriableException).
		t.takeBackoff()
		t.log.Warn("put asked for redelivery", "records", b.put.Len(), "backoff", t.backoff, "error", err)
		t.pending = b
		t.retryAt = time.Now().Add(t.backoff)
		t.retryPaused = true
		t.applyPauses()
		return nil
	}
	for tp, off := range b.next {
		if !t.assigned[tp] {
			continue
		}
		if _, ok := t.readFrom[tp]; !ok {
			t.readFrom[tp] = firstOffset(b.consumed, tp)
		}
		t.delivered[tp] = off
	}
	for at := range t.skippedBefore {
		// Read again and passed by (a failure that did not recur).
		if off, ok := t.delivered[at.tp]; ok && at.offset < off {
			delete(t.skippedBefore, at)
		}
	}
	if t.pending == b {
		t.pending = nil
	}
	if t.retryPaused && t.pending == nil {
		t.retryPaused = false
		t.applyPauses()
	}
	return nil
}

// firstOffset is the offset of the first of recs of tp; a batch with no
// record of tp does not name it in next. Only the first delivery to a
// partition since it was opened asks, so the walk is rare.
func firstOffset(recs []*kgo.Record, tp topicPartition) int64 {
	for _, r := range recs {
		if r.Partition == tp.partition && r.Topic == tp.topic {
			return r.Offset
		}
	}
	return -1
}

// dropPending removes the records of partitions the task no longer reads
// from where they left off (revoked or rewound) from the pending and the
// staged batch, and forgets which of theirs were skipped (skippedBefore):
// read anew, they are handled anew, as in Kafka Connect. A pending batch left empty no longer holds the partitions
// paused: as Kafka Connect's pausedForRedelivery ends with its batch, they
// resume (but those the plugin or the herder paused), or the task would
// wait for a redelivery that never comes. Holds mu.
func (t *sinkTask) dropPending(drop func(topicPartition) bool) {
	if t.pending != nil && t.trim(t.pending, drop) {
		t.pending = nil
		if t.retryPaused {
			t.retryPaused = false
			t.applyPauses()
		}
	}
	if t.staged != nil && t.trim(t.staged, drop) {
		t.staged = nil
	}
	for at := range t.skippedBefore {
		if drop(at.tp) {
			delete(t.skippedBefore, at)
		}
	}
}

// trim removes b's records of the partitions drop names and reports
// whether nothing is left of b.
func (t *sinkTask) trim(b *sinkBatch, drop func(topicPartition) bool) (empty bool) {
	recs := b.put.Records()
	keep := recs[:0:0]
	for _, r := range recs {
		if !drop(topicPartition{r.OriginalTopic, r.OriginalPartition}) {
			keep = append(keep, r)
		}
	}
	for tp := range b.next {
		if drop(tp) {
			delete(b.next, tp)
		}
	}
	b.consumed = slices.DeleteFunc(slices.Clone(b.consumed), func(r *kgo.Record) bool {
		return drop(topicPartition{r.Topic, r.Partition})
	})
	b.skipped = slices.DeleteFunc(slices.Clone(b.skipped), func(r *kgo.Record) bool {
		return drop(topicPartition{r.Topic, r.Partition})
	})
	b.bytes = recordBytes(b.consumed)
	if len(keep) == len(recs) {
		return len(b.next) == 0 && len(recs) == 0
	}
	put := new(wire.SinkBatch)
	put.Grow(len(keep))
	for _, r := range keep {
		if err := put.Add(r); err != nil {
			// Records that joined a batch before cannot fail to join a
			// smaller one.
			t.fail(encodeError(err))
			break
		}
	}
	b.put = put
	return len(keep) == 0 && len(b.next) == 0
}

// applyPauses makes the consumer's paused partitions what the task wants:
// all of them while the task is paused or a batch waits for redelivery,
// otherwise those the plugin paused. Holds mu.
func (t *sinkTask) applyPauses() {
	if t.client == nil {
		return
	}
	all := t.taskPaused || t.retryPaused
	pause := map[string][]int32{}
	resume := map[string][]int32{}
	for tp := range t.assigned {
		want := all || t.pluginPaused[tp]
		if want && !t.fetchPaused[tp] {
			pause[tp.topic] = append(pause[tp.topic], tp.partition)
			t.fetchPaused[tp] = true
		}
		if !want && t.fetchPaused[tp] {
			resume[tp.topic] = append(resume[tp.topic], tp.partition)
			delete(t.fetchPaused, tp)
		}
	}
	if len(pause) > 0 {
		t.client.PauseFetchPartitions(pause)
	}
	if len(resume) > 0 {
		t.client.ResumeFetchPartitions(resume)
	}
}

// commit offers PreCommit the delivered offsets of tps (all open partitions
// when nil), once the errant record reports in progress are done, and
// commits exactly the offsets it returns, ignoring any beyond what was
// delivered, as Kafka Connect does: the periodic commit asynchronously (commitAsync: the task goes on polling and putting while
// the group coordinator writes the offsets), the commit of partitions being
// closed synchronously (closing). A PreCommit that fails rewinds the
// partitions to their last committed offsets (rewindToCommitted), unless
// they are being closed; only a dead plugin fails the task. Holds mu.
func (t *sinkTask) commit(ctx context.Context, tps []topicPartition, closing bool) error {
	if tps == nil {
		tps = t.assignedList()
	}
	// Reports the plugin made before are done first (errantReports).
	t.worker.reports.await(ctx)
	req := &pluginv1.PreCommitRequest{}
	for _, tp := range tps {
		if off, ok := t.delivered[tp]; ok {
			req.Offsets = append(req.Offsets, &pluginv1.PartitionOffset{Topic: tp.topic, Partition: tp.partition, Offset: off})
		}
	}
	if len(req.Offsets) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, t.cfg.CallTimeout)
	resp, err := t.plugin.PreCommit(cctx, req)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil // abandoned: the run is ending
		}
		if isDeadProcess(err) {
			return fmt.Errorf("pre-commit: %w", err)
		}
		t.log.Error("pre-commit failed; rewinding to the committed offsets", "error", err)
		if !closing {
			t.rewindToCommitted(tps)
		}
		return nil
	}
	inScope := make(map[topicPartition]bool, len(tps))
	for _, tp := range tps {
		inScope[tp] = true
	}
	offsets := map[string]map[int32]kgo.EpochOffset{}
	toCommit := map[topicPartition]int64{}
	for _, po := range resp.GetOffsets() {
		tp := topicPartition{po.GetTopic(), po.GetPartition()}
		cur, ok := t.delivered[tp]
		switch {
		case !inScope[tp] || !ok:
			t.log.Warn("ignoring offset the task returned for a partition not being committed", "topic", tp.topic, "partition", tp.partition, "offset", po.GetOffset())
			continue
		case po.GetOffset() > cur:
			t.log.Warn("ignoring offset the task returned beyond what was delivered", "topic", tp.topic, "partition", tp.partition, "offset", po.GetOffset(), "delivered", cur)
			continue
		case po.GetOffset() < 0:
			t.log.Warn("ignoring negative offset the task returned", "topic", tp.topic, "partition", tp.partition, "offset", po.GetOffset())
			continue
		}
		if c, ok := t.commits.committedAt(tp); ok && c == po.GetOffset() {
			continue
		}
		if offsets[tp.topic] == nil {
			offsets[tp.topic] = map[int32]kgo.EpochOffset{}
		}
		offsets[tp.topic][tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: po.GetOffset()}
		toCommit[tp] = po.GetOffset()
	}
	if len(offsets) == 0 {
		return nil
	}
	cctx, cancel = context.WithTimeout(ctx, t.cfg.OffsetFlushTimeout)
	epoch := t.commits.begin()
	onDone := func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cancel()
		t.commits.done(epoch, toCommit, resp, err, t.log)
	}
	if closing {
		t.client.CommitOffsetsSync(cctx, offsets, onDone)
	} else {
		t.client.CommitOffsets(cctx, offsets, onDone)
	}
	return nil
}

// sinkCommits is what the task knows of its commits: the offsets last
// committed per partition, and whether an asynchronous commit is in
// flight. The commit's callback runs on a franz-go goroutine and updates it
// under its own lock, never the task's mu: a synchronous commit made under
// mu (a revocation, the stop) waits for the asynchronous commits before it
// to finish, callbacks included.
type sinkCommits struct {
	mu        sync.Mutex
	committed map[topicPartition]int64
	inFlight  int
	// epoch counts forget calls: a commit that was in flight when
	// partitions were closed records nothing afterwards (its other
	// partitions are then committed again at the next commit, harmlessly).
	epoch uint64
}

// busy reports whether a commit is in flight.
func (c *sinkCommits) busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlight > 0
}

// begin counts a commit in flight and returns the epoch it belongs to.
func (c *sinkCommits) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight++
	return c.epoch
}

// committedAt returns the offset last committed for tp.
func (c *sinkCommits) committedAt(tp topicPartition) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	off, ok := c.committed[tp]
	return off, ok
}

// rewound forgets the commit of tp: the plugin rewound it, and its last
// committed offset is now the rewind's (readFrom), as in Kafka Connect, until
// the next commit.
func (c *sinkCommits) rewound(tp topicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.committed, tp)
}

// forget drops what is known of tps, closed, and of commits in flight.
func (c *sinkCommits) forget(tps []topicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tp := range tps {
		delete(c.committed, tp)
	}
	c.epoch++
}

// done records the outcome of a commit of toCommit begun in epoch. A failed
// commit is retried at the next one, as in Kafka Connect.
func (c *sinkCommits) done(epoch uint64, toCommit map[topicPartition]int64, resp *kmsg.OffsetCommitResponse, err error, log hclog.Logger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight--
	if err != nil {
		if errors.Is(err, context.Canceled) {
			// The run is ending (the drain's deadline, a failure's
			// teardown): nothing to act on.
			log.Debug("offset commit abandoned", "error", err)
			return
		}
		log.Error("offset commit failed", "error", err)
		return
	}
	failed := map[topicPartition]error{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if perr := kerr.ErrorForCode(rp.ErrorCode); perr != nil {
				failed[topicPartition{rt.Topic, rp.Partition}] = perr
			}
		}
	}
	for tp, off := range toCommit {
		if perr := failed[tp]; perr != nil {
			log.Error("offset commit failed", "topic", tp.topic, "partition", tp.partition, "error", perr)
			continue
		}
		if epoch == c.epoch {
			c.committed[tp] = off
		}
	}
}

// rewindToCommitted moves the consumer of tps back to their last committed
// offsets (Kafka Connect's answer to a failed preCommit): those this task
// committed, else where it began reading them (readFrom: the position at
// assignment, as for a partition the group never committed, or a rewind
// since). Holds mu.
func (t *sinkTask) rewindToCommitted(tps []topicPartition) {
	set := map[string]map[int32]kgo.EpochOffset{}
	rewound := map[topicPartition]bool{}
	for _, tp := range tps {
		off, ok := t.commits.committedAt(tp)
		if !ok {
			off, ok = t.readFrom[tp]
		}
		if !ok || off < 0 {
			continue
		}
		if set[tp.topic] == nil {
			set[tp.topic] = map[int32]kgo.EpochOffset{}
		}
		set[tp.topic][tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
		t.delivered[tp] = off
		rewound[tp] = true
	}
	if len(set) > 0 {
		// The staged batch was read past these offsets; it goes first,
		// so the rewind is the last word on where the consumer reads.
		t.discardStaged()
		t.client.SetOffsets(set)
		t.dropPending(func(tp topicPartition) bool { return rewound[tp] })
	}
}

// forget drops all state of partitions that are closed. Holds mu.
func (t *sinkTask) forget(tps []topicPartition) {
	resume := map[string][]int32{}
	gone := make(map[topicPartition]bool, len(tps))
	for _, tp := range tps {
		gone[tp] = true
		if t.fetchPaused[tp] {
			// The consumer remembers pauses across assignments; a
			// partition assigned again later must start unpaused.
			resume[tp.topic] = append(resume[tp.topic], tp.partition)
		}
		delete(t.assigned, tp)
		delete(t.delivered, tp)
		delete(t.readFrom, tp)
		delete(t.pluginPaused, tp)
		delete(t.fetchPaused, tp)
	}
	t.commits.forget(tps)
	if len(resume) > 0 && t.client != nil {
		t.client.ResumeFetchPartitions(resume)
	}
	t.dropPending(func(tp topicPartition) bool { return gone[tp] })
	t.worker.setAssignment(t.assignedList())
}

// assignedList returns the open partitions, sorted. Holds mu.
func (t *sinkTask) assignedList() []topicPartition {
	out := slices.Collect(maps.Keys(t.assigned))
	slices.SortFunc(out, func(a, b topicPartition) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	return out
}

func tpsToProto(tps []topicPartition) []*pluginv1.TopicPartition {
	out := make([]*pluginv1.TopicPartition, len(tps))
	for i, tp := range tps {
		out[i] = &pluginv1.TopicPartition{Topic: tp.topic, Partition: tp.partition}
	}
	return out
}

// putter runs a sink task's pipelined Puts, one at a time, on one
// goroutine for the task's life: a goroutine started per Put would grow
// its stack (and copy it) through gRPC's call path again every time.
type putter struct {
	calls chan func()
	done  chan struct{}
}

// start starts the goroutine; stop ends it.
func (p *putter) start() {
	p.calls, p.done = make(chan func()), make(chan struct{})
	go func() {
		defer close(p.done)
		for f := range p.calls {
			f()
		}
	}()
}

// run hands f to the goroutine, which is idle: a Put's caller waits for
// it to end before it hands over the next.
func (p *putter) run(f func()) { p.calls <- f }

// stop ends the goroutine once the call it runs, if any, is over.
func (p *putter) stop() {
	close(p.calls)
	<-p.done
}
