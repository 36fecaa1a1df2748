package herder

import (
	"context"
	"time"

	"github.com/sluice-io/sluice/host/cluster"
)

// The session key's life (KIP-507). Under the sessioned protocol the leader
// writes a session-key record when it finds none on the config topic, when
// the last one is inter.worker.key.ttl.ms old, or when its algorithm or
// size no longer match this worker's settings; every worker signs and
// checks with the last key it read. One goroutine (keyLoop) does the
// leader's part: it looks when woken (a round completed, a key was read)
// and when the current key expires.

const (
	// keyRetry is the wait before writing a key again after a failure.
	keyRetry = time.Second
	// keyMinWait bounds how often keys are written: a ttl of 0 (which
	// Kafka accepts) would otherwise write one after another.
	keyMinWait = time.Second
	// keyWriteTimeout bounds one write of a key and the read after it.
	keyWriteTimeout = 30 * time.Second
)

// signing reports whether internal requests are signed and checked now:
// only under the sessioned protocol, as in Kafka Connect.
func (d *Distributed) signing() bool { return *d.protocol.Load() == cluster.Sessioned }

// setProtocol records the protocol of a completed round. A group leaves
// sessioned when a worker configured with an older connect.protocol joins
// (the coordinator settles on what every member speaks): from then on
// internal requests are neither signed nor checked, as in Kafka Connect,
// which is worth a warning.
func (d *Distributed) setProtocol(p cluster.Protocol) {
	if p == "" {
		return
	}
	old := d.protocol.Swap(&p)
	switch {
	case *old == p:
	case *old == cluster.Sessioned:
		d.log.Warn("the group downgraded from the sessioned protocol: internal requests are no longer signed nor checked (KIP-507); "+
			"a worker with an older connect.protocol has likely joined", "protocol", p, "was", *old)
	case p == cluster.Sessioned:
		d.log.Info("the group runs the sessioned protocol again: internal requests are signed and checked", "was", *old)
	default:
		d.log.Info("group protocol changed", "protocol", p, "was", *old)
	}
}

// kickKeys wakes the key loop.
func (d *Distributed) kickKeys() {
	select {
	case d.keyKick <- struct{}{}:
	default:
	}
}

// keyLoop writes and rotates the session key while this worker leads a
// sessioned group.
func (d *Distributed) keyLoop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var fire <-chan time.Time
		if wait := d.maintainKey(); wait > 0 {
			timer.Reset(wait)
			fire = timer.C
		}
		select {
		case <-d.ctx.Done():
			return
		case <-d.keyKick:
		case <-fire:
		}
		timer.Stop()
	}
}

// maintainKey writes a new session key when this worker leads a sessioned
// group and the current key needs replacing. It returns when to look
// again; 0: only when woken.
func (d *Distributed) maintainKey() time.Duration {
	d.mu.Lock()
	ready := d.assigned && !d.closed
	d.mu.Unlock()
	if !ready || !d.signing() || !d.memberStatus().IsLeader {
		return 0
	}
	now := time.Now()
	reason, left := d.signer.Rotation(d.config.Snapshot().SessionKey(), now)
	if reason == "" {
		return max(left, keyMinWait)
	}
	key, err := d.signer.NewKey(now)
	if err == nil {
		ctx, cancel := context.WithTimeout(d.ctx, keyWriteTimeout)
		err = d.config.PutSessionKey(ctx, key)
		if err == nil {
			// Read it back, so the next look finds it.
			err = d.config.Refresh(ctx)
		}
		cancel()
	}
	if err != nil {
		if d.ctx.Err() == nil {
			d.log.Warn("session key not written; retrying", "reason", reason, "error", err, "backoff", keyRetry)
		}
		return keyRetry
	}
	d.log.Info("new session key written", "reason", reason, "algorithm", key.Algorithm, "bits", len(key.Key)*8)
	_, left = d.signer.Rotation(&key, time.Now())
	return max(left, keyMinWait)
}
