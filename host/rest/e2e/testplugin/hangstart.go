package main

import (
	"context"

	"github.com/sluice-io/sluice/pluginsdk"
)

// hangingStart is secret whose Start blocks for good (Kafka's
// BlockingConnector blocking in Connector::start).
type hangingStart struct{ secret }

func (c *hangingStart) Start(context.Context, pluginsdk.ConnectorContext, map[string]string) error {
	select {}
}
