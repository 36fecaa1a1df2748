package pluginsdk

import (
	"github.com/hashicorp/go-hclog"

	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// mapShared maps the shared memory region the worker offered in a task's
// Start, or returns nil, saying why, when there is none or it cannot be
// mapped: batches then go through gRPC, which always works.
func mapShared(log hclog.Logger, offer *pluginv1.SharedMemory) *wire.SharedRegion {
	if offer == nil || offer.GetSize() == 0 {
		return nil
	}
	r, err := wire.MapShared(int(offer.GetFd()), int64(offer.GetSize()))
	if err != nil {
		log.Warn("not using the shared memory the worker offered; batches go through gRPC", "error", err)
		return nil
	}
	return r
}

// closeShared unmaps a region, if any.
func closeShared(r *wire.SharedRegion) {
	if r != nil {
		_ = r.Close()
	}
}
