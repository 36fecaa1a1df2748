package herder

import (
	"testing"
	"time"
)

// next numbers restarts in a row, doubles the backoff up to the cap, stops
// at max attempts and counts afresh after a run of the maximum backoff.
func TestRestartPolicyNext(t *testing.T) {
	p := restartPolicy{enable: true, maxAttempts: 3, initial: 10 * time.Millisecond, max: 25 * time.Millisecond}
	now := time.Now()
	for _, c := range []struct {
		prev    int
		started time.Time
		attempt int
		delay   time.Duration
		ok      bool
	}{
		{0, now, 1, 10 * time.Millisecond, true},
		{1, now, 2, 20 * time.Millisecond, true},
		{2, now, 3, 25 * time.Millisecond, true},
		{3, now, 4, 0, false},
		{3, now.Add(-time.Second), 1, 10 * time.Millisecond, true},
	} {
		a, d, ok := p.next(c.prev, c.started)
		if a != c.attempt || d != c.delay || ok != c.ok {
			t.Errorf("next(%d, %v ago) = %d, %s, %v; want %d, %s, %v", c.prev, time.Since(c.started).Round(time.Millisecond), a, d, ok, c.attempt, c.delay, c.ok)
		}
	}
	p.maxAttempts = -1
	if a, d, ok := p.next(99, now); a != 100 || d != 25*time.Millisecond || !ok {
		t.Errorf("no limit: %d, %s, %v", a, d, ok)
	}
}
