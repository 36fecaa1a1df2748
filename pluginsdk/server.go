package pluginsdk

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// classInfo is a Class checked and described once at startup.
type classInfo struct {
	Class
	typ   pluginv1.ConnectorType
	proto *pluginv1.ConnectorClass
}

// server holds the one instance a process serves and implements the four
// services of the contract on top of it.
type server struct {
	log     hclog.Logger
	classes []*classInfo
	byName  map[string]*classInfo

	mu sync.Mutex
	// role names what the first Start made of this process ("" until then).
	role      string
	connector *connectorInstance
	source    *sourceInstance
	sink      *sinkInstance
}

func newServer(classes []Class, log hclog.Logger) (*server, error) {
	if len(classes) == 0 {
		return nil, errors.New("no connector classes to serve")
	}
	s := &server{log: log, byName: map[string]*classInfo{}}
	for _, c := range classes {
		ci, err := describeClass(c)
		if err != nil {
			return nil, err
		}
		for _, n := range append([]string{c.Name}, c.Aliases...) {
			if n == "" {
				return nil, fmt.Errorf("class %q: empty alias", c.Name)
			}
			if _, dup := s.byName[n]; dup {
				return nil, fmt.Errorf("class name or alias %q is used twice", n)
			}
			s.byName[n] = ci
		}
		s.classes = append(s.classes, ci)
	}
	// Simple names (after the last '.') resolve too, unless ambiguous.
	simple := map[string][]*classInfo{}
	for _, ci := range s.classes {
		if i := strings.LastIndexByte(ci.Name, '.'); i >= 0 {
			simple[ci.Name[i+1:]] = append(simple[ci.Name[i+1:]], ci)
		}
	}
	for n, cis := range simple {
		if _, taken := s.byName[n]; !taken && len(cis) == 1 {
			s.byName[n] = cis[0]
		}
	}
	return s, nil
}

func describeClass(c Class) (*classInfo, error) {
	if c.Name == "" {
		return nil, errors.New("a class has no name")
	}
	if c.New == nil {
		return nil, fmt.Errorf("class %s: New is nil", c.Name)
	}
	inst := c.New()
	ci := &classInfo{Class: c}
	_, isSource := inst.(SourceConnector)
	_, isSink := inst.(SinkConnector)
	switch {
	case isSource && isSink:
		return nil, fmt.Errorf("class %s: %T is both a SourceConnector and a SinkConnector", c.Name, inst)
	case isSource:
		ci.typ = pluginv1.ConnectorType_CONNECTOR_TYPE_SOURCE
	case isSink:
		ci.typ = pluginv1.ConnectorType_CONNECTOR_TYPE_SINK
	default:
		return nil, fmt.Errorf("class %s: %T is neither a SourceConnector nor a SinkConnector (NewTask missing?)", c.Name, inst)
	}
	def := inst.Config()
	if def == nil {
		def = config.NewDef()
	}
	ci.proto = &pluginv1.ConnectorClass{
		ClassName:     c.Name,
		Aliases:       slices.Clone(c.Aliases),
		Type:          ci.typ,
		Version:       inst.Version(),
		Config:        def.Proto(),
		Documentation: c.Doc,
		TaskClassName: c.TaskClass,
	}
	return ci, nil
}

func (s *server) servers() wire.Servers {
	return wire.Servers{
		Plugin:     &pluginService{s: s},
		Connector:  &connectorService{s: s},
		SourceTask: &sourceService{s: s},
		SinkTask:   &sinkService{s: s},
	}
}

// lookup resolves a class name or alias to a class of the wanted type.
func (s *server) lookup(name string, typ pluginv1.ConnectorType) (*classInfo, error) {
	ci, ok := s.byName[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "this plugin does not serve class %q (it serves %s)", name, s.classNames())
	}
	if typ != pluginv1.ConnectorType_CONNECTOR_TYPE_UNSPECIFIED && ci.typ != typ {
		return nil, status.Errorf(codes.FailedPrecondition, "class %s is a %s connector, not a %s connector", ci.Name, typeName(ci.typ), typeName(typ))
	}
	return ci, nil
}

func (s *server) classNames() string {
	names := make([]string, len(s.classes))
	for i, ci := range s.classes {
		names[i] = ci.Name
	}
	return strings.Join(names, ", ")
}

func typeName(t pluginv1.ConnectorType) string {
	switch t {
	case pluginv1.ConnectorType_CONNECTOR_TYPE_SOURCE:
		return "source"
	case pluginv1.ConnectorType_CONNECTOR_TYPE_SINK:
		return "sink"
	}
	return "unknown"
}

// claim makes this process the given instance, or fails when an earlier
// Start already made it something (one process, one instance).
func (s *server) claim(role string, set func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.role != "" {
		return status.Errorf(codes.FailedPrecondition, "this process already serves %s; a plugin process serves one instance", s.role)
	}
	s.role = role
	set()
	return nil
}

// guard runs connector code, turning a panic into a fatal error carrying the
// stack, so one bad call does not take the process (and the worker's view of
// it) down before the worker decides what to do.
func (s *server) guard(what string, fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			s.log.Error("connector code panicked", "call", what, "panic", fmt.Sprint(v), "stack", string(stack))
			err = newPanicError(what, v, stack)
		}
	}()
	return fn()
}

// callContext is the context connector code runs under for one RPC: the
// RPC's deadline, cancelled also when the instance is stopped.
func callContext(rpc, life context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(rpc)
	stop := context.AfterFunc(life, cancel)
	return ctx, func() { stop(); cancel() }
}

// ---------------------------------------------------------------- Plugin

type pluginService struct {
	pluginv1.UnimplementedPluginServer
	s *server
}

func (p *pluginService) Describe(context.Context, *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	resp := &pluginv1.DescribeResponse{Sdk: SDKVersion}
	for _, ci := range p.s.classes {
		resp.Classes = append(resp.Classes, ci.proto)
	}
	return resp, nil
}
