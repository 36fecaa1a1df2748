package runtime

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// The rebalance callbacks run on franz-go's group goroutine, serialized with
// each other, and (BlockRebalanceOnPoll) only while the task goroutine is
// polling, not while it holds records. They take mu for the task's state and
// call the plugin with the run's context and the usual deadlines. A failure
// fails the task, which the task goroutine then notices.

// onAssigned opens newly assigned partitions (SinkTask.open). Partitions
// arrive paused when the task is paused or a batch waits for redelivery.
func (t *sinkTask) onAssigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setClient(cl)
	if t.closed {
		return
	}
	var opened []topicPartition
	for topic, ps := range assigned {
		for _, p := range ps {
			tp := topicPartition{topic, p}
			if !t.assigned[tp] {
				t.assigned[tp] = true
				opened = append(opened, tp)
				if t.revokedPaused[tp] {
					t.pluginPaused[tp] = true
				}
			}
		}
	}
	t.revokedPaused = nil
	if len(opened) == 0 {
		return
	}
	t.applyPauses()
	t.worker.setAssignment(t.assignedList())
	t.log.Debug("partitions assigned", "partitions", fmt.Sprint(opened))
	ctx, cancel := context.WithTimeout(t.runCtx, t.cfg.CallTimeout)
	defer cancel()
	if err := t.plugin.Open(ctx, &pluginv1.OpenRequest{Partitions: tpsToProto(opened)}); err != nil {
		t.failUnlessAbandoned(t.runCtx, fmt.Errorf("open %v: %w", opened, err))
	}
}

// onRevoked commits and closes revoked partitions: PreCommit, a synchronous
// commit of what it returned, then Close (Kafka Connect's closePartitions).
func (t *sinkTask) onRevoked(_ context.Context, cl *kgo.Client, revoked map[string][]int32) {
	t.release(cl, revoked, true)
}

// onLost closes partitions that are already someone else's: no commit.
func (t *sinkTask) onLost(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
	t.release(cl, lost, false)
}

func (t *sinkTask) release(cl *kgo.Client, parts map[string][]int32, commit bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setClient(cl)
	var tps []topicPartition
	for topic, ps := range parts {
		for _, p := range ps {
			if tp := (topicPartition{topic, p}); t.assigned[tp] {
				tps = append(tps, tp)
			}
		}
	}
	if len(tps) == 0 {
		return
	}
	for _, tp := range tps {
		if t.pluginPaused[tp] {
			if t.revokedPaused == nil {
				t.revokedPaused = map[topicPartition]bool{}
			}
			t.revokedPaused[tp] = true
		}
	}
	if !t.closed && t.failed() == nil {
		t.log.Debug("partitions revoked", "partitions", fmt.Sprint(tps), "commit", commit)
		if commit {
			if err := t.commit(t.runCtx, tps, true); err != nil {
				t.failUnlessAbandoned(t.runCtx, err)
			}
		}
		ctx, cancel := context.WithTimeout(t.runCtx, t.cfg.CallTimeout)
		err := t.plugin.Close(ctx, &pluginv1.CloseRequest{Partitions: tpsToProto(tps)})
		cancel()
		if err != nil {
			t.failUnlessAbandoned(t.runCtx, fmt.Errorf("close %v: %w", tps, err))
		}
	}
	t.forget(tps)
}
