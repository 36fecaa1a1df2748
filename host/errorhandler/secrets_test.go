package errorhandler

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/runtime"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Without errors.log.include.messages no log line of the operator, at any
// level, shows a record's key, value, headers or source offset: records
// may hold secrets, and Kafka Connect prints only the stage and class then.
func TestLogsHideRecordContent(t *testing.T) {
	const secret = "s3cr3t-pw"
	sink := &kgo.Record{Topic: "in", Partition: 1, Offset: 9, Key: []byte("k-" + secret), Value: []byte("v-" + secret),
		Headers: []kgo.RecordHeader{{Key: "auth", Value: []byte("h-" + secret)}}}
	source := &data.SourceRecord{
		Record:          data.Record{Topic: "out", Partition: data.NoPartition, Key: "k-" + secret, Value: "v-" + secret, Headers: data.Headers{{Key: "auth", Value: "h-" + secret}}},
		SourcePartition: map[string]any{"file": "p-" + secret}, SourceOffset: map[string]any{"pos": "o-" + secret},
	}
	for _, s := range []Settings{
		{LogEnable: true, ToleranceAll: true},
		{LogEnable: true},
		{ToleranceAll: true},
		{LogEnable: true, ToleranceAll: true, RetryTimeout: time.Second, RetryDelayMax: time.Second},
	} {
		var buf bytes.Buffer
		clock := newClock()
		o, err := New(Options{Task: runtime.TaskID{Connector: "c", Task: 0}, Settings: s, Now: clock.Now, Sleep: clock.Sleep,
			Jitter: func(n int64) int64 { return n - 1 }, Logger: hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Trace})})
		if err != nil {
			t.Fatal(err)
		}
		errRetriable := retriable("busy")
		retry := func(context.Context) (runtime.Stage, error) { return "", errRetriable }
		for _, rec := range []runtime.ErrantRecord{
			{Stage: runtime.StageValueConverter, Err: errors.New("bad"), Consumed: sink, Retry: retry},
			{Stage: runtime.StageValueConverter, Err: errRetriable, Consumed: sink, Retry: retry},
			{Stage: runtime.StagePut, Err: errors.New("bad"), Consumed: sink},
			{Stage: runtime.StageTransformation, Err: errors.New("bad"), Source: source, Retry: retry},
			{Stage: runtime.StageProduce, Err: errors.New("bad"), Source: source},
		} {
			_ = o.Handle(context.Background(), rec)
		}
		if buf.Len() == 0 && s.LogEnable {
			t.Fatalf("%+v: nothing logged", s)
		}
		if strings.Contains(buf.String(), secret) {
			t.Errorf("%+v: a log line shows record content:\n%s", s, buf.String())
		}
	}
}
