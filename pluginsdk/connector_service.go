package pluginsdk

import (
	"context"
	"fmt"
	"maps"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// connectorClassKey is where AlterOffsets and ExactlyOnceSupport requests,
// which name no class, carry it: the connector's own configuration.
const connectorClassKey = "connector.class"

type connectorInstance struct {
	class  *classInfo
	conn   Connector
	w      *workerClient
	life   context.Context
	cancel context.CancelFunc
}

type connectorService struct {
	pluginv1.UnimplementedConnectorServer
	s *server
}

func (c *connectorService) started() (*connectorInstance, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.connector == nil {
		return nil, status.Error(codes.FailedPrecondition, "connector not started")
	}
	return c.s.connector, nil
}

// instanceFor returns the started connector, or a fresh instance of the class
// a request's configuration names, for the calls that may come on a process
// that was never started.
func (c *connectorService) instanceFor(props map[string]string) (Connector, error) {
	c.s.mu.Lock()
	inst := c.s.connector
	c.s.mu.Unlock()
	if inst != nil {
		return inst.conn, nil
	}
	name := props[connectorClassKey]
	if name == "" && len(c.s.classes) == 1 {
		name = c.s.classes[0].Name
	}
	ci, err := c.s.lookup(name, pluginv1.ConnectorType_CONNECTOR_TYPE_UNSPECIFIED)
	if err != nil {
		return nil, err
	}
	return ci.New(), nil
}

func (c *connectorService) Validate(ctx context.Context, req *pluginv1.ValidateRequest) (*pluginv1.ValidateResponse, error) {
	ci, err := c.s.lookup(req.GetClassName(), pluginv1.ConnectorType_CONNECTOR_TYPE_UNSPECIFIED)
	if err != nil {
		return nil, err
	}
	var values []config.ConfigValue
	err = c.s.guard("validate", func() error {
		inst := ci.New()
		if v, ok := inst.(Validator); ok {
			var err error
			values, err = v.Validate(ctx, req.GetConfig())
			return err
		}
		def := inst.Config()
		if def == nil {
			def = config.NewDef()
		}
		values = def.Validate(req.GetConfig())
		return nil
	})
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("validate %s: %w", ci.Name, err))
	}
	return &pluginv1.ValidateResponse{Values: config.ConfigValuesProto(values)}, nil
}

func (c *connectorService) Start(ctx context.Context, req *pluginv1.ConnectorStartRequest) (*pluginv1.ConnectorStartResponse, error) {
	ci, err := c.s.lookup(req.GetClassName(), pluginv1.ConnectorType_CONNECTOR_TYPE_UNSPECIFIED)
	if err != nil {
		return nil, err
	}
	var conn Connector
	if err := c.s.guard("new connector", func() error { conn = ci.New(); return nil }); err != nil {
		return nil, toStatus(ctx, err)
	}
	life, cancel := context.WithCancel(context.Background())
	inst := &connectorInstance{class: ci, conn: conn, w: &workerClient{target: req.GetWorkerTarget()}, life: life, cancel: cancel}
	err = c.s.claim(fmt.Sprintf("connector %s (%s)", req.GetConnectorName(), ci.Name), func() { c.s.connector = inst })
	if err != nil {
		cancel()
		return nil, err
	}
	cctx, done := callContext(ctx, life)
	defer done()
	props := maps.Clone(req.GetConfig())
	err = c.s.guard("start connector", func() error {
		cc := &connectorContext{baseContext{configs: props, w: inst.w}}
		return inst.conn.Start(cctx, cc, maps.Clone(props))
	})
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("start connector %s: %w", req.GetConnectorName(), err))
	}
	return &pluginv1.ConnectorStartResponse{}, nil
}

func (c *connectorService) TaskConfigs(ctx context.Context, req *pluginv1.TaskConfigsRequest) (*pluginv1.TaskConfigsResponse, error) {
	inst, err := c.started()
	if err != nil {
		return nil, err
	}
	if req.GetMaxTasks() < 1 {
		return nil, status.Errorf(codes.InvalidArgument, "max_tasks is %d; it must be at least 1", req.GetMaxTasks())
	}
	cctx, done := callContext(ctx, inst.life)
	defer done()
	var tasks []map[string]string
	err = c.s.guard("task configs", func() error {
		var err error
		tasks, err = inst.conn.TaskConfigs(cctx, int(req.GetMaxTasks()))
		return err
	})
	if err == nil && len(tasks) > int(req.GetMaxTasks()) {
		err = fmt.Errorf("connector returned %d task configs for max_tasks %d", len(tasks), req.GetMaxTasks())
	}
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("task configs: %w", err))
	}
	resp := &pluginv1.TaskConfigsResponse{Tasks: make([]*pluginv1.TaskConfig, len(tasks))}
	for i, t := range tasks {
		resp.Tasks[i] = &pluginv1.TaskConfig{Config: t}
	}
	return resp, nil
}

func (c *connectorService) AlterOffsets(ctx context.Context, req *pluginv1.AlterOffsetsRequest) (*pluginv1.AlterOffsetsResponse, error) {
	conn, err := c.instanceFor(req.GetConfig())
	if err != nil {
		return nil, err
	}
	alterer, ok := conn.(OffsetAlterer)
	if !ok {
		return &pluginv1.AlterOffsetsResponse{Handled: false}, nil
	}
	changes := make([]OffsetChange, len(req.GetOffsets()))
	for i, o := range req.GetOffsets() {
		p, err := wire.DecodeJSONMap(o.GetPartition())
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "alter offsets: partition %q: %v", o.GetPartition(), err)
		}
		changes[i].Partition = p
		if len(o.GetOffset()) > 0 {
			if changes[i].Offset, err = wire.DecodeJSONMap(o.GetOffset()); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "alter offsets: offset %q: %v", o.GetOffset(), err)
			}
		}
	}
	var handled bool
	err = c.s.guard("alter offsets", func() error {
		var err error
		handled, err = alterer.AlterOffsets(ctx, req.GetConfig(), changes)
		return err
	})
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("alter offsets: %w", err))
	}
	return &pluginv1.AlterOffsetsResponse{Handled: handled}, nil
}

func (c *connectorService) ExactlyOnceSupport(ctx context.Context, req *pluginv1.ExactlyOnceSupportRequest) (*pluginv1.ExactlyOnceSupportResponse, error) {
	conn, err := c.instanceFor(req.GetConfig())
	if err != nil {
		return nil, err
	}
	if _, ok := conn.(SourceConnector); !ok {
		return nil, status.Error(codes.Unimplemented, "exactly-once support is a question for source connectors")
	}
	resp := &pluginv1.ExactlyOnceSupportResponse{}
	err = c.s.guard("exactly-once support", func() error {
		if e, ok := conn.(ExactlyOnceSupporter); ok {
			eo, err := e.ExactlyOnceSupport(ctx, req.GetConfig())
			if err != nil {
				return err
			}
			switch eo {
			case ExactlyOnceSupported:
				resp.ExactlyOnce = pluginv1.ExactlyOnce_EXACTLY_ONCE_SUPPORTED
			case ExactlyOnceUnsupported:
				resp.ExactlyOnce = pluginv1.ExactlyOnce_EXACTLY_ONCE_UNSUPPORTED
			}
		}
		if d, ok := conn.(TransactionBoundaryDefiner); ok {
			can, err := d.CanDefineTransactionBoundaries(ctx, req.GetConfig())
			if err != nil {
				return err
			}
			resp.DefinesTransactionBoundaries = can
		}
		return nil
	})
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("exactly-once support: %w", err))
	}
	return resp, nil
}

func (c *connectorService) Stop(ctx context.Context, _ *pluginv1.StopRequest) (*pluginv1.StopResponse, error) {
	c.s.mu.Lock()
	inst := c.s.connector
	c.s.mu.Unlock()
	if inst == nil {
		// Never started: nothing to stop.
		return &pluginv1.StopResponse{}, nil
	}
	// Cancel whatever still runs (a slow TaskConfigs) before stopping.
	inst.cancel()
	defer inst.w.close()
	err := c.s.guard("stop connector", func() error { return inst.conn.Stop(ctx) })
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("stop connector: %w", err))
	}
	return &pluginv1.StopResponse{}, nil
}
