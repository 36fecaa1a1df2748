package worker

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTopicTrackerReportsEachTopicOnceWhenAcked(t *testing.T) {
	var got []string
	tr := newTopicTracker(func(topic string) { got = append(got, topic) })
	for _, r := range []struct {
		topic string
		err   error
	}{{"a", errors.New("not acked")}, {"a", nil}, {"a", nil}, {"b", nil}, {"a", nil}, {"b", nil}, {"c", errors.New("x")}} {
		tr.OnProduceRecordUnbuffered(&kgo.Record{Topic: r.topic}, r.err)
	}
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("reported %v, want [a b]", got)
	}
}
