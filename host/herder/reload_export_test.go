package herder

import (
	"testing"
	"time"
)

// SetReloadRetryDelay shortens the wait before a failed reload restart
// request is written again, for the test's duration.
func SetReloadRetryDelay(t *testing.T, d time.Duration) {
	old := reloadRetryDelay
	reloadRetryDelay = d
	t.Cleanup(func() { reloadRetryDelay = old })
}
