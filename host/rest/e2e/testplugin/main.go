// Command testplugin is a plugin binary for the REST end-to-end tests of
// host/rest/e2e; it is not shipped. It serves three source classes:
//
//   - io.sluice.test.HangingValidateSource, whose Validate never returns
//     (it ignores its context too), standing in for a connector that wedges
//     in validation, as Kafka's BlockingConnector does;
//   - io.sluice.test.HangingStartSource, whose Start never returns: the
//     same, wedged in start;
//   - io.sluice.test.SecretSource, which declares PASSWORD-typed settings so
//     the tests can check that secrets and ${provider:path:key}
//     placeholders come back from the API as they were written. Its tasks
//     produce nothing.
package main

import (
	"context"
	"maps"

	"github.com/sluice-io/sluice/pluginsdk"
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

func main() {
	pluginsdk.Serve(
		pluginsdk.Class{
			Name:    "io.sluice.test.HangingValidateSource",
			Aliases: []string{"HangingValidate"},
			Doc:     "Validation never returns.",
			New:     func() pluginsdk.Connector { return &hanging{} },
		},
		pluginsdk.Class{
			Name:    "io.sluice.test.HangingStartSource",
			Aliases: []string{"HangingStart"},
			Doc:     "Start never returns.",
			New:     func() pluginsdk.Connector { return &hangingStart{} },
		},
		pluginsdk.Class{
			Name: "io.sluice.test.SecretSource",
			Doc:  "Declares PASSWORD settings; its tasks produce nothing.",
			New:  func() pluginsdk.Connector { return &secret{} },
		},
	)
}

func secretDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "topic", Type: config.String, Required: true, Importance: config.High, Doc: "Unused topic."}).
		Define(config.Key{Name: "secret", Type: config.Password, Required: true, Importance: config.High, Doc: "A secret."}).
		Define(config.Key{Name: "other.secret", Type: config.Password, Default: "", Importance: config.Low, Doc: "Another secret."})
}

// secret is a source connector with PASSWORD settings and idle tasks.
type secret struct{ props map[string]string }

func (c *secret) Version() string     { return "0.0.1-test" }
func (c *secret) Config() *config.Def { return secretDef() }
func (c *secret) Start(_ context.Context, _ pluginsdk.ConnectorContext, props map[string]string) error {
	c.props = maps.Clone(props)
	return nil
}
func (c *secret) TaskConfigs(context.Context, int) ([]map[string]string, error) {
	return []map[string]string{maps.Clone(c.props)}, nil
}
func (c *secret) Stop(context.Context) error    { return nil }
func (c *secret) NewTask() pluginsdk.SourceTask { return &idleTask{} }

// hanging is secret whose Validate blocks for good.
type hanging struct{ secret }

var _ pluginsdk.Validator = (*hanging)(nil)

func (c *hanging) Validate(context.Context, map[string]string) ([]config.ConfigValue, error) {
	select {}
}

// idleTask polls nothing until it is stopped.
type idleTask struct{}

func (idleTask) Start(context.Context, pluginsdk.SourceTaskContext, map[string]string) error {
	return nil
}
func (idleTask) Poll(ctx context.Context) ([]*data.SourceRecord, error) {
	<-ctx.Done()
	return nil, nil
}
func (idleTask) Stop(context.Context) error { return nil }
