package main

import "github.com/sluice-io/sluice/pluginsdk"

func main() {
	pluginsdk.Serve(
		pluginsdk.Class{
			Name:      "org.apache.kafka.connect.file.FileStreamSourceConnector",
			Aliases:   []string{"FileStreamSource"},
			TaskClass: "org.apache.kafka.connect.file.FileStreamSourceTask",
			Doc:       "Reads lines from a file (or standard input) and produces each as a string record to one topic.",
			New:       func() pluginsdk.Connector { return &SourceConnector{} },
		},
		pluginsdk.Class{
			Name:      "org.apache.kafka.connect.file.FileStreamSinkConnector",
			Aliases:   []string{"FileStreamSink"},
			TaskClass: "org.apache.kafka.connect.file.FileStreamSinkTask",
			Doc:       "Appends the value of each record, one per line, to a file (or standard output).",
			New:       func() pluginsdk.Connector { return &SinkConnector{} },
		},
	)
}
