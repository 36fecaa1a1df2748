package main

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

func TestNoopSinkCountsAndCommitsEverything(t *testing.T) {
	c := &NoopSinkConnector{}
	if err := c.Start(context.Background(), nil, map[string]string{"topics": "a", logEveryKey: "3"}); err != nil {
		t.Fatal(err)
	}
	cfgs, err := c.TaskConfigs(context.Background(), 4)
	if err != nil || len(cfgs) != 4 {
		t.Fatalf("TaskConfigs(4) = %v, %v", cfgs, err)
	}
	task := c.NewTask().(*NoopSinkTask)
	if err := task.Start(context.Background(), nil, cfgs[0]); err != nil {
		t.Fatal(err)
	}
	batch := func(n int) []*data.SinkRecord {
		out := make([]*data.SinkRecord, n)
		for i := range out {
			out[i] = &data.SinkRecord{Record: data.Record{Topic: "a", Value: data.Raw("x")}, Offset: int64(i)}
		}
		return out
	}
	for _, n := range []int{2, 5, 0, 10} {
		if err := task.Put(context.Background(), batch(n)); err != nil {
			t.Fatal(err)
		}
	}
	if task.Count() != 17 || task.puts != 4 {
		t.Fatalf("count %d in %d puts, want 17 in 4 (the empty one counts)", task.Count(), task.puts)
	}
	if task.nextLog != 18 {
		t.Errorf("next log at %d, want 18 (the next multiple of log.every=3)", task.nextLog)
	}
	offsets := map[data.TopicPartition]int64{{Topic: "a", Partition: 0}: 17, {Topic: "a", Partition: 3}: 4}
	got, err := task.PreCommit(context.Background(), offsets)
	if err != nil || len(got) != 2 || got[data.TopicPartition{Topic: "a", Partition: 0}] != 17 || got[data.TopicPartition{Topic: "a", Partition: 3}] != 4 {
		t.Fatalf("PreCommit = %v, %v; want the offsets given", got, err)
	}
	if err := task.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	vals := noopDef().Validate(map[string]string{logEveryKey: "-1"})
	if len(vals) != 1 || len(vals[0].Errors) != 1 || !strings.Contains(vals[0].Errors[0], "at least 0") {
		t.Fatalf("log.every=-1 validates as %+v", vals)
	}
}
