package worker

import (
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// topicTracker is a source task producer's hook that reports the topics the
// task writes to, for GET /connectors/{c}/topics (KIP-558). Like Kafka's
// source task it reports a topic once a record sent there is acknowledged,
// and each topic once per task run: after a reset, a topic shows again when
// a new run of the task writes to it.
type topicTracker struct {
	record func(topic string)

	last atomic.Pointer[string] // fast path: most tasks write to one topic
	mu   sync.Mutex
	seen map[string]struct{}
}

var _ kgo.HookProduceRecordUnbuffered = (*topicTracker)(nil)

func newTopicTracker(record func(topic string)) *topicTracker {
	return &topicTracker{record: record, seen: map[string]struct{}{}}
}

// OnProduceRecordUnbuffered implements kgo.HookProduceRecordUnbuffered; it
// is called for every record once Kafka answered for it.
func (t *topicTracker) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if err != nil {
		return
	}
	if last := t.last.Load(); last != nil && *last == r.Topic {
		return
	}
	t.mu.Lock()
	_, known := t.seen[r.Topic]
	if !known {
		t.seen[r.Topic] = struct{}{}
	}
	t.mu.Unlock()
	topic := r.Topic
	t.last.Store(&topic)
	if !known {
		t.record(topic)
	}
}
