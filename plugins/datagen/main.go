package main

import "github.com/sluice-io/sluice/pluginsdk"

func main() {
	pluginsdk.Serve(
		pluginsdk.Class{
			Name:      "io.sluice.connect.datagen.DatagenConnector",
			Aliases:   []string{"Datagen", "DatagenSource"},
			TaskClass: "io.sluice.connect.datagen.DatagenTask",
			Doc:       "Generates made-up users, orders or pageviews records, as Connect structs or raw JSON bytes, at a set rate or as fast as possible.",
			New:       func() pluginsdk.Connector { return &DatagenConnector{} },
		},
		pluginsdk.Class{
			Name:      "io.sluice.connect.datagen.NoopSinkConnector",
			Aliases:   []string{"NoopSink"},
			TaskClass: "io.sluice.connect.datagen.NoopSinkTask",
			Doc:       "Accepts records, counts them and drops them (for benchmarks).",
			New:       func() pluginsdk.Connector { return &NoopSinkConnector{} },
		},
	)
}
